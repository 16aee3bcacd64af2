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
import { KEPT_KEY_METRICS } from '../report/key-metrics.ts';
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
function diffJson(diff: RecordsDiff, inputA: Input, inputB: Input, files: SideFiles): unknown {
  const withFile = <T extends { id: string }>(record: T, side: 'a' | 'b') => ({ ...record, file: files[side].get(record.id) ?? null });
  return {
    schema: DIFF_SCHEMA,
    changed: diff.changed,
    a: { source: inputA.source, kind: inputA.kind, records: inputA.records.length },
    b: { source: inputB.source, kind: inputB.kind, records: inputB.records.length },
    pairs: diff.pairs.map((pair) => ({
      ...pair,
      a: withFile(pair.a, 'a'),
      b: withFile(pair.b, 'b'),
      metrics: pair.metrics.map((metric) => ({ ...metric, noiseText: noiseText(metric) })),
    })),
    onlyA: diff.onlyA.map((unpaired) => ({ ...unpaired, record: withFile(unpaired.record, 'a') })),
    onlyB: diff.onlyB.map((unpaired) => ({ ...unpaired, record: withFile(unpaired.record, 'b') })),
    conflicts: diff.conflicts.map((conflict) => ({
      ...conflict,
      records: conflict.records.map((record) => withFile(record, conflict.side)),
    })),
  };
}

/** The records of --history of the keys and drivers the sides hold (the sides' own left out: they are read already). */
function historyOf(dir: string, sides: BehaviourRecord[]): BehaviourRecord[] {
  const keys = new Set(sides.map((record) => keyText(record.key)));
  const ids = new Set(sides.filter((record) => record.metrics.length > 0).map((record) => record.id));
  return readHistory(dir, (record) => keys.has(keyText(record.key)) && !ids.has(record.id), KEPT_KEY_METRICS);
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
  const inputA = readInput(sourceA, defaults, { forDiff: true, keepMetrics });
  const inputB = readInput(sourceB, defaults, { forDiff: true, keepMetrics });
  for (const input of [inputA, inputB]) {
    if (input.records.length === 0) {
      throw new CudamatrixError(
        'NOTHING_TO_COMPARE',
        `${input.source} holds no observation of a GPU${input.unrecorded.length ? ` (${input.unrecorded.join('; ')})` : ''}; diff compares runs that measured a GPU`,
      );
    }
  }
  const sides = [...inputA.records, ...inputB.records].map((loaded) => loaded.record);
  const diff = diffRecords(
    inputA.records.map((loaded) => loaded.record),
    inputB.records.map((loaded) => loaded.record),
    { all: opts.all || opts.json, history: opts.history ? historyOf(opts.history, sides) : [] },
  );
  if (diff.pairs.length === 0) {
    const keys = (input: Input) => [...new Set(input.records.map((loaded) => keyText({ ...loaded.record.key, driver: '' })))].join('; ');
    throw new CudamatrixError(
      'NOTHING_TO_COMPARE',
      `no observation of ${inputA.source} has a counterpart in ${inputB.source}: records pair by environment, GPU, OS and container (not the driver). a has ${keys(inputA)}; b has ${keys(inputB)}`,
    );
  }
  const compared = diff.pairs.reduce((total, pair) => total + pair.factsCompared + pair.metricTally.compared, 0);
  if (compared === 0) {
    throw new CudamatrixError(
      'NOTHING_TO_COMPARE',
      `nothing that compares between ${inputA.source} and ${inputB.source}: ${diff.pairs.length === 1 ? 'the pair' : `the ${diff.pairs.length} pairs`} of records share no fact and no metric series (records without facts or metrics, or runs of other probes); diff compares what both sides measured`,
    );
  }
  // Per side: both sides may hold a record of one id (a record against the log it came from, a doctored copy).
  const filesOf = (input: Input) =>
    new Map(input.records.flatMap((loaded) => (loaded.file ? [[loaded.record.id, loaded.file] as const] : [])));
  const files: SideFiles = { a: filesOf(inputA), b: filesOf(inputB) };
  if (opts.json) process.stdout.write(`${JSON.stringify(diffJson(diff, inputA, inputB, files), null, 2)}\n`);
  else process.stdout.write(formatDiff(diff, { a: describe(inputA), b: describe(inputB) }, files, opts.all));
  return diff.changed ? ExitCode.expectationFailed : ExitCode.ok;
}
