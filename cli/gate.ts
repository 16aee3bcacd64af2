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
import { KEPT_KEY_METRICS } from '../report/behaviour-table.ts';
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
  const ran = new Set(record.cells.filter((c) => c.status === 'passed').map((c) => c.probe));
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
    const d = diffRecords(baseline, record, { history });
    const p: PairDiff = d.pairs[0]!;
    verdict.baseline = { driver: p.a.driver, records: baseline.length, runs: p.runs.a, from };
    if (p.environment.length)
      reasons.push({
        type: 'EnvironmentDiffers',
        fails: false,
        message: `around the driver, also different from the baseline: ${p.environment.map((e) => `${e.field} ${String(e.a)} → ${String(e.b)}`).join('; ')}`,
        evidence: { differences: p.environment },
      });
    const sharedCells = p.shared.b;
    if (p.changed)
      reasons.push({
        type: 'BehaviourChanged',
        fails: true,
        message: `behaviour changed against driver ${p.a.driver} (${plural(p.runs.a, 'run')}): ${[
          p.facts.length ? `${plural(p.facts.length, 'fact')} changed` : '',
          p.cells.length ? `${plural(p.cells.length, 'cell outcome')} changed` : '',
          p.metricTally.flagged ? `${plural(p.metricTally.flagged, 'metric')} beyond noise` : '',
        ]
          .filter(Boolean)
          .join(', ')}`,
        evidence: {
          facts: p.facts,
          cells: p.cells,
          metrics: p.metrics
            .filter((m) => m.flagged)
            .map((m) => ({
              name: m.name,
              attrs: m.attrs,
              unit: m.unit,
              a: m.a,
              b: m.b,
              move: m.move,
              noise: m.noise,
              noiseFrom: m.noiseFrom,
            })),
          verdicts: p.verdicts,
        },
      });
    if (sharedCells.length)
      reasons.push({
        type: 'SharedGPU',
        fails: false,
        message: `the run shared the GPU with other processes during ${plural(sharedCells.length, 'cell')} (${sharedCells.map((c) => c.probe).join(', ')}): ${p.metricTally.explained + p.facts.filter((f) => f.shared).length ? 'what moved there is not judged; run again on an idle GPU' : 'nothing there moved beyond noise'}`,
        evidence: { cells: sharedCells, explained: p.metricTally.explained },
      });
  }
  const failing = reasons.filter((r) => r.fails);
  verdict.status = failing.some((r) => r.type === 'BehaviourChanged')
    ? 'changed'
    : failing.some((r) => r.type === 'KnownBadDriver')
      ? 'known-bad'
      : reasons.some((r) => r.type === 'SharedGPU' && (r.evidence.explained as number) > 0) || reasons.some((r) => r.type === 'NoBaseline')
        ? 'inconclusive'
        : 'pass';
  return verdict;
}

const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;

/** What changed, under a BehaviourChanged reason: the facts, cells and the first series (cudamatrix diff lists every one). */
function evidenceLines(r: GateReason): string[] {
  if (r.type !== 'BehaviourChanged') return [];
  const e = r.evidence as {
    facts: FactChange[];
    cells: CellChange[];
    metrics: { name: string; attrs: Record<string, Scalar>; unit: string; a: number | null; b: number | null; move: number | null }[];
  };
  const shown = 8;
  const out = [
    ...e.facts.map((f) => `      ${f.name}  ${String(f.a)} → ${String(f.b)}`),
    ...e.cells.map((c) => `      ${c.probe}  ${c.a} → ${c.b}`),
    ...e.metrics
      .slice(0, shown)
      .map(
        (m) =>
          `      ${seriesText(m.name, m.attrs)}  ${formatValue(m.a, m.unit)} → ${formatValue(m.b, m.unit)}${m.move === null ? '' : ` (moved ${(m.move * 100).toFixed(1)} %)`}`,
      ),
  ];
  if (e.metrics.length > shown) out.push(`      and ${e.metrics.length - shown} more series`);
  out.push('      (cudamatrix diff of the baseline and the run lists each with its noise)');
  return out;
}

/** The baseline of a record: the records of its key of the same driver where there are some, else of the newest other driver. */
function baselineOf(record: BehaviourRecord, candidates: BehaviourRecord[]): BehaviourRecord[] {
  const same = candidates.filter((r) => pairingKey(r) === pairingKey(record) && r.id !== record.id);
  const ofDriver = same.filter((r) => r.key.driver === record.key.driver);
  if (ofDriver.length) return ofDriver;
  const newest = [...same].sort((x, y) => (x.observed.date < y.observed.date ? 1 : -1))[0];
  return newest ? same.filter((r) => r.key.driver === newest.key.driver) : [];
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
  const records = input.records.map((r) => r.record);
  const keys = new Set(records.map(pairingKey));
  const ids = new Set(records.map((r) => r.id));
  const stored = readHistory(opts.recordsDir, (r) => keys.has(pairingKey(r)) && !ids.has(r.id), KEPT_KEY_METRICS);
  const given = opts.baseline ? readInput(opts.baseline, defaults).records.map((r) => r.record) : null;
  const registry = loadKnownBad(opts.knownBad);
  const verdicts = records.map((r) =>
    judge(r, baselineOf(r, given ?? stored), [...stored, ...(given ?? [])], given ? opts.baseline! : opts.recordsDir, registry),
  );
  const status = verdicts.reduce<GateStatus>((s, v) => (severity[v.status] > severity[s] ? v.status : s), 'pass');
  const lines: string[] = [];
  for (const v of verdicts) {
    lines.push(
      `${v.target}: ${v.status.toUpperCase()}  ${v.key}${v.baseline ? ` against driver ${v.baseline.driver} (${plural(v.baseline.records, 'record')} in ${v.baseline.from}; ${plural(v.baseline.runs, 'run')} of its newest kernel the baseline)` : ''}`,
    );
    for (const r of v.reasons) {
      lines.push(`  ${r.fails ? '✗' : '·'} ${r.message}`);
      lines.push(...evidenceLines(r));
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
