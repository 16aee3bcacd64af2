/**
 * cudamatrix diff A B: what changed between two runs, records, submitted files or folders of
 * records (two driver versions), with an exit status a workflow can fail a release on.
 */
import { statSync } from 'node:fs';
import { CudamatrixError, ExitCode } from '../core/errors.ts';
import { diffRecords, noiseText, type RecordsDiff } from '../behaviour/diff.ts';
import { formatDiff, type SideFiles } from '../behaviour/diff-text.ts';
import { keyText, type BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { readHistory, readInput, type Input } from '../behaviour/read.ts';
import { KEPT_KEY_METRICS } from '../report/behaviour-table.ts';
import { loadMatrixArg } from './matrix-arg.ts';

export const DIFF_SCHEMA = 'cudamatrix-diff/1';

/** --history's default: the committed records. */
export const DEFAULT_HISTORY = 'records';

export interface DiffOptions {
  json: boolean;
  all: boolean;
  /** The records folder that measures each key's run-to-run noise (false: none). */
  history?: string | false;
}

function describe(input: Input): string {
  const what = { 'event-log': 'event log', record: 'record', submission: 'submitted file', 'records-folder': 'folder of records' }[
    input.kind
  ];
  return `${input.source} (${what}, ${input.records.length} observation${input.records.length === 1 ? '' : 's'})`;
}

/** The diff as JSON: every pair with its changed facts and cells, its metrics (with how their noise was decided) and what was not compared. */
function diffJson(d: RecordsDiff, a: Input, b: Input, files: SideFiles): unknown {
  const withFile = <T extends { id: string }>(s: T, side: 'a' | 'b') => ({ ...s, file: files[side].get(s.id) ?? null });
  return {
    schema: DIFF_SCHEMA,
    changed: d.changed,
    a: { source: a.source, kind: a.kind, records: a.records.length },
    b: { source: b.source, kind: b.kind, records: b.records.length },
    pairs: d.pairs.map((p) => ({
      ...p,
      a: withFile(p.a, 'a'),
      b: withFile(p.b, 'b'),
      metrics: p.metrics.map((m) => ({ ...m, noiseText: noiseText(m) })),
    })),
    onlyA: d.onlyA.map((u) => ({ ...u, record: withFile(u.record, 'a') })),
    onlyB: d.onlyB.map((u) => ({ ...u, record: withFile(u.record, 'b') })),
    conflicts: d.conflicts.map((c) => ({ ...c, records: c.records.map((r) => withFile(r, c.side)) })),
  };
}

/** The records of --history of the keys and drivers the sides hold (the sides' own left out: they are read already). */
function historyOf(dir: string, sides: BehaviourRecord[]): BehaviourRecord[] {
  const keys = new Set(sides.map((r) => keyText(r.key)));
  const ids = new Set(sides.filter((r) => r.metrics.length > 0).map((r) => r.id));
  return readHistory(dir, (r) => keys.has(keyText(r.key)) && !ids.has(r.id), KEPT_KEY_METRICS);
}

export async function diffCommand(sourceA: string, sourceB: string, opts: DiffOptions): Promise<number> {
  // The default folder may be missing (a fresh clone of another project); one named is a typo.
  if (opts.history && opts.history !== DEFAULT_HISTORY && !statSync(opts.history, { throwIfNoEntry: false })?.isDirectory())
    throw new CudamatrixError(
      'USAGE',
      `--history ${opts.history} is not a folder: pass the records folder whose runs measure the noise (records), or --no-history`,
    );
  const defaults = (await loadMatrixArg(undefined)).expectations;
  // The report's key metrics: the records index that report keeps serves diff too.
  const keepMetrics = KEPT_KEY_METRICS;
  const a = readInput(sourceA, defaults, { forDiff: true, keepMetrics });
  const b = readInput(sourceB, defaults, { forDiff: true, keepMetrics });
  for (const input of [a, b]) {
    if (input.records.length === 0) {
      throw new CudamatrixError(
        'NOTHING_TO_COMPARE',
        `${input.source} holds no observation of a GPU${input.unrecorded.length ? ` (${input.unrecorded.join('; ')})` : ''}; diff compares runs that measured a GPU`,
      );
    }
  }
  const sides = [...a.records, ...b.records].map((r) => r.record);
  const d = diffRecords(
    a.records.map((r) => r.record),
    b.records.map((r) => r.record),
    { all: opts.all || opts.json, history: opts.history ? historyOf(opts.history, sides) : [] },
  );
  if (d.pairs.length === 0) {
    const keys = (i: Input) => [...new Set(i.records.map((r) => keyText({ ...r.record.key, driver: '' })))].join('; ');
    throw new CudamatrixError(
      'NOTHING_TO_COMPARE',
      `no observation of ${a.source} has a counterpart in ${b.source}: records pair by environment, GPU, OS and container (not the driver). a has ${keys(a)}; b has ${keys(b)}`,
    );
  }
  const compared = d.pairs.reduce((n, p) => n + p.factsCompared + p.metricTally.compared, 0);
  if (compared === 0) {
    throw new CudamatrixError(
      'NOTHING_TO_COMPARE',
      `nothing that compares between ${a.source} and ${b.source}: ${d.pairs.length === 1 ? 'the pair' : `the ${d.pairs.length} pairs`} of records share no fact and no metric series (records without facts or metrics, or runs of other probes); diff compares what both sides measured`,
    );
  }
  // Per side: both sides may hold a record of one id (a record against the log it came from, a doctored copy).
  const filesOf = (input: Input) => new Map(input.records.flatMap((r) => (r.file ? [[r.record.id, r.file] as const] : [])));
  const files: SideFiles = { a: filesOf(a), b: filesOf(b) };
  if (opts.json) process.stdout.write(`${JSON.stringify(diffJson(d, a, b, files), null, 2)}\n`);
  else process.stdout.write(formatDiff(d, { a: describe(a), b: describe(b) }, files, opts.all));
  return d.changed ? ExitCode.expectationFailed : ExitCode.ok;
}
