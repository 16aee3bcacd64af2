/**
 * cudamatrix gate RUN: one verdict for CI before a driver rollout. The run's records against the
 * records of their key (the same driver where it has some, else the newest other driver), judged
 * by diff's engine, and the driver against the known-bad registry. Prints one line per target and
 * the verdict; --json writes it as a node verdict (docs/cli.md, "gate").
 */
import { statSync } from 'node:fs';
import { CudamatrixError, ExitCode } from '../core/errors.ts';
import { writeOutput } from '../core/fs.ts';
import { concernsProbes, knownBadFails, knownBadForSysinfo, knownBadLine, loadKnownBad, type KnownBadEntry } from '../matrix/known-bad.ts';
import { formatValue } from '../core/units.ts';
import type { Scalar } from '../probes/protocol.ts';
import { diffRecords, pairingKey, seriesText, type CellChange, type FactChange, type PairDiff } from '../behaviour/diff.ts';
import { keyText, type BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { readHistory, readInput } from '../behaviour/read.ts';
import { KEPT_KEY_METRICS } from '../report/key-metrics.ts';
import { loadMatrixArg } from './matrix-arg.ts';

export const GATE_SCHEMA = 'cudamatrix-gate/1';

export interface GateOptions {
  /** The records folder that holds each key's records (its baseline and its noise). */
  recordsDir: string;
  /** Records to judge against instead of the key's own in --records-dir (a folder, a record, a run). */
  baseline?: string;
  /** Where to write the JSON verdict ("-": stdout). */
  json?: string;
  /** The known-bad registry to use instead of the one shipped (matrix/known-bad-drivers.yaml). */
  knownBad?: string;
}

export type GateStatus = 'pass' | 'changed' | 'known-bad' | 'inconclusive';

/** One reason of a verdict, with its evidence: the shape node-health tools consume (type, status, message). */
export interface GateReason {
  type: 'BehaviourChanged' | 'KnownBadDriver' | 'SharedGPU' | 'NoBaseline' | 'EnvironmentDiffers';
  /** Whether the reason fails the gate (a warning does not). */
  fails: boolean;
  message: string;
  evidence: Record<string, unknown>;
}

export interface TargetVerdict {
  target: string;
  key: string;
  driver: string;
  status: GateStatus;
  /** The driver judged against, how many records of it there are, and how many runs of the newest kernel's are its mean. */
  baseline: { driver: string; records: number; runs: number; from: string } | null;
  reasons: GateReason[];
}

const severity: Record<GateStatus, number> = { pass: 0, inconclusive: 1, 'known-bad': 2, changed: 3 };

function judge(
  record: BehaviourRecord,
  baseline: BehaviourRecord[],
  history: BehaviourRecord[],
  from: string,
  registry: readonly KnownBadEntry[],
): TargetVerdict {
  const reasons: GateReason[] = [];
  const verdict: TargetVerdict = {
    target: record.observed.target,
    key: keyText(record.key),
    driver: record.key.driver,
    status: 'pass',
    baseline: null,
    reasons,
  };
  const known = knownBadForSysinfo(record.sysinfo, registry);
  const ran = new Set(record.cells.filter((cell) => cell.status === 'passed').map((cell) => cell.probe));
  for (const entry of known?.entries ?? []) {
    const fails = knownBadFails(entry, ran);
    reasons.push({
      type: 'KnownBadDriver',
      fails,
      message: `driver ${record.key.driver} is a ${knownBadLine(entry, known!.subject)}${fails ? '' : concernsProbes(entry, ran) ? ': only one report says so, so it is said here and does not fail the gate' : ': not a behaviour this run checked'}`,
      evidence: { id: entry.id, source: entry.source, trust: entry.trust, concerns: entry.concerns, fixedIn: entry.fixedIn },
    });
  }
  if (baseline.length === 0) {
    reasons.push({
      type: 'NoBaseline',
      fails: false,
      message: `no record of ${pairingKey(record)} to judge against in ${from}: nothing to compare (record this run to make it the baseline)`,
      evidence: { from },
    });
  } else {
    const diff = diffRecords(baseline, record, { history });
    const pair: PairDiff = diff.pairs[0]!;
    verdict.baseline = { driver: pair.a.driver, records: baseline.length, runs: pair.runs.a, from };
    if (pair.environment.length)
      reasons.push({
        type: 'EnvironmentDiffers',
        fails: false,
        message: `around the driver, also different from the baseline: ${pair.environment.map((e) => `${e.field} ${String(e.a)} → ${String(e.b)}`).join('; ')}`,
        evidence: { differences: pair.environment },
      });
    const sharedCells = pair.shared.b;
    if (pair.changed)
      reasons.push({
        type: 'BehaviourChanged',
        fails: true,
        message: `behaviour changed against driver ${pair.a.driver} (${plural(pair.runs.a, 'run')}): ${[
          pair.facts.length ? `${plural(pair.facts.length, 'fact')} changed` : '',
          pair.cells.length ? `${plural(pair.cells.length, 'cell outcome')} changed` : '',
          pair.metricTally.flagged ? `${plural(pair.metricTally.flagged, 'metric')} beyond noise` : '',
        ]
          .filter(Boolean)
          .join(', ')}`,
        evidence: {
          facts: pair.facts,
          cells: pair.cells,
          metrics: pair.metrics
            .filter((metric) => metric.flagged)
            .map((metric) => ({
              name: metric.name,
              attrs: metric.attrs,
              unit: metric.unit,
              a: metric.a,
              b: metric.b,
              move: metric.move,
              noise: metric.noise,
              noiseFrom: metric.noiseFrom,
            })),
          verdicts: pair.verdicts,
        },
      });
    if (sharedCells.length)
      reasons.push({
        type: 'SharedGPU',
        fails: false,
        message: `the run shared the GPU with other processes during ${plural(sharedCells.length, 'cell')} (${sharedCells.map((sharedCell) => sharedCell.probe).join(', ')}): ${pair.metricTally.explained + pair.facts.filter((fact) => fact.shared).length ? 'what moved there is not judged; run again on an idle GPU' : 'nothing there moved beyond noise'}`,
        evidence: { cells: sharedCells, explained: pair.metricTally.explained },
      });
  }
  const failing = reasons.filter((reason) => reason.fails);
  verdict.status = failing.some((reason) => reason.type === 'BehaviourChanged')
    ? 'changed'
    : failing.some((reason) => reason.type === 'KnownBadDriver')
      ? 'known-bad'
      : reasons.some((reason) => reason.type === 'SharedGPU' && (reason.evidence.explained as number) > 0) ||
          reasons.some((reason) => reason.type === 'NoBaseline')
        ? 'inconclusive'
        : 'pass';
  return verdict;
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** What changed, under a BehaviourChanged reason: the facts, cells and the first series (cudamatrix diff lists every one). */
function evidenceLines(reason: GateReason): string[] {
  if (reason.type !== 'BehaviourChanged') return [];
  const e = reason.evidence as {
    facts: FactChange[];
    cells: CellChange[];
    metrics: { name: string; attrs: Record<string, Scalar>; unit: string; a: number | null; b: number | null; move: number | null }[];
  };
  const shown = 8;
  const out = [
    ...e.facts.map((fact) => `      ${fact.name}  ${String(fact.a)} → ${String(fact.b)}`),
    ...e.cells.map((cell) => `      ${cell.probe}  ${cell.a} → ${cell.b}`),
    ...e.metrics
      .slice(0, shown)
      .map(
        (metric) =>
          `      ${seriesText(metric.name, metric.attrs)}  ${formatValue(metric.a, metric.unit)} → ${formatValue(metric.b, metric.unit)}${metric.move === null ? '' : ` (moved ${(metric.move * 100).toFixed(1)} %)`}`,
      ),
  ];
  if (e.metrics.length > shown) out.push(`      and ${e.metrics.length - shown} more series`);
  out.push('      (cudamatrix diff of the baseline and the run lists each with its noise)');
  return out;
}

/** The baseline of a record: the records of its key of the same driver where there are some, else of the newest other driver. */
function baselineOf(record: BehaviourRecord, candidates: BehaviourRecord[]): BehaviourRecord[] {
  const same = candidates.filter((candidate) => pairingKey(candidate) === pairingKey(record) && candidate.id !== record.id);
  const ofDriver = same.filter((candidate) => candidate.key.driver === record.key.driver);
  if (ofDriver.length) return ofDriver;
  const newest = [...same].sort((left, right) => (left.observed.date < right.observed.date ? 1 : -1))[0];
  return newest ? same.filter((candidate) => candidate.key.driver === newest.key.driver) : [];
}

export async function gateCommand(run: string, opts: GateOptions): Promise<number> {
  const defaults = (await loadMatrixArg(undefined)).expectations;
  if (!statSync(opts.recordsDir, { throwIfNoEntry: false })?.isDirectory() && !opts.baseline)
    throw new CudamatrixError(
      'USAGE',
      `--records-dir ${opts.recordsDir} is not a folder: the gate judges a run against the records there (records, as cudamatrix record writes them), or against --baseline`,
    );
  const input = readInput(run, defaults, { complete: true });
  if (input.kind === 'records-folder')
    throw new CudamatrixError(
      'USAGE',
      `${run} is a folder of records: the gate judges one run (a run folder, its events.jsonl, or a record file); to compare folders, use cudamatrix diff`,
    );
  if (input.records.length === 0) {
    process.stderr.write(
      `${run} holds no observation of a GPU${input.unrecorded.length ? ` (${input.unrecorded.join('; ')})` : ''}: nothing to judge\n`,
    );
    return ExitCode.nothingMeasured;
  }
  const records = input.records.map((loaded) => loaded.record);
  const keys = new Set(records.map(pairingKey));
  const ids = new Set(records.map((record) => record.id));
  const stored = readHistory(opts.recordsDir, (candidate) => keys.has(pairingKey(candidate)) && !ids.has(candidate.id), KEPT_KEY_METRICS);
  const given = opts.baseline ? readInput(opts.baseline, defaults).records.map((loaded) => loaded.record) : null;
  const registry = loadKnownBad(opts.knownBad);
  const verdicts = records.map((record) =>
    judge(record, baselineOf(record, given ?? stored), [...stored, ...(given ?? [])], given ? opts.baseline! : opts.recordsDir, registry),
  );
  const status = verdicts.reduce<GateStatus>(
    (worst, verdict) => (severity[verdict.status] > severity[worst] ? verdict.status : worst),
    'pass',
  );
  const lines: string[] = [];
  for (const verdict of verdicts) {
    lines.push(
      `${verdict.target}: ${verdict.status.toUpperCase()}  ${verdict.key}${verdict.baseline ? ` against driver ${verdict.baseline.driver} (${plural(verdict.baseline.records, 'record')} in ${verdict.baseline.from}; ${plural(verdict.baseline.runs, 'run')} of its newest kernel the baseline)` : ''}`,
    );
    for (const reason of verdict.reasons) {
      lines.push(`  ${reason.fails ? '✗' : '·'} ${reason.message}`);
      lines.push(...evidenceLines(reason));
    }
  }
  lines.push(`Gate: ${status}`);
  const json = {
    schema: GATE_SCHEMA,
    status,
    healthy: status === 'pass',
    run: input.source,
    targets: verdicts,
  };
  if (opts.json === '-') {
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    process.stderr.write(`${lines.join('\n')}\n`);
  } else {
    process.stdout.write(`${lines.join('\n')}\n`);
    if (opts.json) writeOutput(opts.json, `${JSON.stringify(json, null, 2)}\n`);
  }
  // The most severe target's outcome.
  return { pass: ExitCode.ok, changed: ExitCode.expectationFailed, 'known-bad': ExitCode.knownBad, inconclusive: ExitCode.inconclusive }[
    status
  ];
}
