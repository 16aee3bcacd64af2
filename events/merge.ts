/**
 * Merging event logs (the shards of one run, or runs of one matrix on several machines) into
 * one log that summaries, JUnit, records and reports read as a single run's. Pure apart from
 * reading the logs. What the merged log holds, what is refused and what is warned:
 * docs/results.md, "The merged log".
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { CudamatrixError } from '../core/errors.ts';
import { makeDir, writeFileAtomic } from '../core/fs.ts';
import {
  EVENTS_SCHEMA_VERSION,
  eventText,
  lacksSamples,
  readEventLogLines,
  type LineSpan,
  type RunEndEvent,
  type RunEvent,
  type RunStartEvent,
  type TargetStartEvent,
} from './events.ts';

/** An event log read from a file. */
export interface LogInput {
  /** The events.jsonl it was read from (as given, or inside the run folder given). */
  file: string;
  events: RunEvent[];
}

/** Where a merged run came from: one entry per log. */
export interface MergeSource {
  file: string;
  runId: string;
  shard: RunStartEvent['shard'];
  started: string;
}

/** The merged run-start: a run-start with where it came from. */
export type MergedRunStart = RunStartEvent & { mergedFrom: MergeSource[] };

export interface MergedRun {
  start: MergedRunStart;
  /** run-start, every target's events, run-end. */
  events: RunEvent[];
  /** What is worth saying but does not stop the merge. */
  warnings: string[];
}

export interface MergeOptions {
  /** --strict: the merged run is strict whatever the logs were. */
  strict?: boolean;
}

/**
 * The events.jsonl of each argument: a file as it is, a folder as the run folder holding one.
 * A newer schema is refused by readEventLog, whose message names the file. leaveOutSamples: the
 * cell-ends without their sample records (events/events.ts), which writeMergedRun copies from
 * the logs' lines.
 */
export function readLogs(args: string[], options: { leaveOutSamples?: boolean } = {}): LogInput[] {
  return args.map((arg) => {
    const st = statSync(arg, { throwIfNoEntry: false });
    if (!st)
      throw new CudamatrixError('USAGE', `${arg} does not exist; pass event logs (events.jsonl) or run folders (results/runs/<run-id>)`);
    const file = st.isDirectory() ? path.join(arg, 'events.jsonl') : arg;
    if (st.isDirectory() && !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      throw new CudamatrixError(
        'USAGE',
        `${arg} is a folder without an events.jsonl; pass a run folder (results/runs/<run-id>) or the events.jsonl itself`,
      );
    }
    const { events, spans, size, mtimeMs } = readEventLogLines(file, options);
    const source = { file, size, mtimeMs };
    events.forEach((e, i) => lineRead.set(e, { source, span: spans[i]! }));
    return { file, events };
  });
}

/** A log as readLogs read it: what writeMergedRun checks before it copies the log's lines. */
interface LogSource {
  file: string;
  size: number;
  mtimeMs: number;
}

/** The line each event that readLogs read came from (by identity: an event changed in a merge is a new object). */
const lineRead = new WeakMap<RunEvent, { source: LogSource; span: LineSpan }>();

const startOf = (log: LogInput) => log.events[0] as RunStartEvent;
const shardText = (shard: RunStartEvent['shard']) => (shard ? `shard ${shard.index}/${shard.total}` : 'no shard');
const targetOf = (cell: string) => cell.slice(0, cell.lastIndexOf('/'));
const byCodeUnits = (left: string, right: string) => (left < right ? -1 : left > right ? 1 : 0);

function realpath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/** Up to `max` names, then how many more. */
function some(names: string[], max = 5): string {
  return names.length > max ? `${names.slice(0, max).join(', ')} and ${names.length - max} more` : names.join(', ');
}

/** The cells a log planned: its run-start's list, and any planned cell it ended that the list lacks. */
function plannedCells(log: LogInput): string[] {
  const cells = [...startOf(log).cells];
  for (const e of log.events) if (e.type === 'cell-end' && e.planned && !cells.includes(e.cell)) cells.push(e.cell);
  return cells;
}

/** The log's targets: in the order its events first name them, then those it planned but never started. */
function targetsOf(log: LogInput): string[] {
  const seen = new Set<string>();
  for (const e of log.events) if ('target' in e) seen.add(e.target);
  for (const cell of startOf(log).cells) seen.add(targetOf(cell));
  return [...seen];
}

/** Logs in a fixed order, whatever order they were given in: by shard index, start, run id, file. */
function ordered(logs: LogInput[]): LogInput[] {
  const key = (log: LogInput) => startOf(log);
  return [...logs].sort(
    (left, right) =>
      (key(left).shard?.index ?? 0) - (key(right).shard?.index ?? 0) ||
      Date.parse(key(left).started) - Date.parse(key(right).started) ||
      byCodeUnits(key(left).runId, key(right).runId) ||
      byCodeUnits(left.file, right.file),
  );
}

function checkDuplicates(logs: LogInput[]): void {
  // The logs of each run id and shard, in order (a comparison of every pair was quadratic). The
  // pair refused is the first log that has a copy, with its first copy.
  const byRun = new Map<string, LogInput[]>();
  for (const log of logs) {
    const start = startOf(log);
    // The shard as isDeepStrictEqual compares it: every key, in any order.
    const key = `${start.runId}\0${JSON.stringify(start.shard, start.shard && typeof start.shard === 'object' ? Object.keys(start.shard).sort() : undefined)}`;
    const same = byRun.get(key);
    if (same) same.push(log);
    else byRun.set(key, [log]);
  }
  const pair = [...byRun.values()].find((same) => same.length > 1);
  if (!pair) return;
  const [original, copy] = pair as [LogInput, LogInput];
  const what = `run ${startOf(original).runId}, ${shardText(startOf(original).shard)}`;
  if (realpath(original.file) === realpath(copy.file)) {
    throw new CudamatrixError(
      'MERGE_DUPLICATE',
      `${original.file} and ${copy.file} are the same event log (${what}), given twice; pass each log once`,
    );
  }
  throw new CudamatrixError(
    'MERGE_DUPLICATE',
    `${original.file} and ${copy.file} are the same run (${what}): one log and a copy of it; pass one of them`,
  );
}

function checkOverlaps(logs: LogInput[]): void {
  const owner = new Map<string, LogInput>();
  const clashes = new Map<string, { a: LogInput; b: LogInput; cells: string[] }>();
  for (const log of logs) {
    for (const cell of plannedCells(log)) {
      const first = owner.get(cell);
      if (!first) {
        owner.set(cell, log);
        continue;
      }
      const key = `${first.file}\0${log.file}`;
      if (!clashes.has(key)) clashes.set(key, { a: first, b: log, cells: [] });
      clashes.get(key)!.cells.push(cell);
    }
  }
  if (clashes.size === 0) return;
  const lines = [...clashes.values()].map(
    ({ a: firstLog, b: secondLog, cells }) =>
      `${firstLog.file} (run ${startOf(firstLog).runId}, ${shardText(startOf(firstLog).shard)}) and ${secondLog.file} (run ${startOf(secondLog).runId}, ${shardText(startOf(secondLog).shard)}) both hold ${cells.length} cell${cells.length === 1 ? '' : 's'}: ${some(cells)}`,
  );
  throw new CudamatrixError(
    'MERGE_OVERLAP',
    `the logs overlap: ${lines.join('; ')}. Shards of one run never share a cell, so these are two runs of the same cells (a shard run again, or the shards of two runs); merge one log per cell`,
  );
}

/** The expectations of each environment class, a missing class as none. */
function sameExpectations(left: RunStartEvent, right: RunStartEvent): string[] {
  const classes = [...new Set([...Object.keys(left.matrix.expectations), ...Object.keys(right.matrix.expectations)])].sort(byCodeUnits);
  return classes.filter(
    (environmentClass) =>
      !isDeepStrictEqual(left.matrix.expectations[environmentClass] ?? [], right.matrix.expectations[environmentClass] ?? []),
  );
}

function checkSameMatrix(logs: LogInput[]): void {
  const [first, ...rest] = logs as [LogInput, ...LogInput[]];
  const firstStart = startOf(first);
  // The same text is the same expectations (but for a -0 against a 0, which no log cudamatrix
  // wrote holds: JSON.stringify writes -0 as 0), so a fleet's logs of one matrix need no deep
  // comparison each (0.4 s of a merge of 2,000: bench/scale).
  const text0 = JSON.stringify(firstStart.matrix.expectations);
  for (const log of rest) {
    const start = startOf(log);
    if (start.version !== firstStart.version) {
      throw new CudamatrixError(
        'MERGE_MISMATCH',
        `${first.file} was written by cudamatrix ${firstStart.version} and ${log.file} by cudamatrix ${start.version}; a merged run has one version (its records name the version that measured them), so merge the logs of one version, or record each log on its own (cudamatrix record LOG)`,
      );
    }
    const differ = JSON.stringify(start.matrix.expectations) === text0 ? [] : sameExpectations(firstStart, start);
    if (differ.length) {
      throw new CudamatrixError(
        'MERGE_MISMATCH',
        `${first.file} and ${log.file} come from different matrices: their expectations for ${differ.join(', ')} differ, and a merged run is judged against one matrix; merge the logs of runs of one matrix`,
      );
    }
  }
  // A target in several logs (its probes split between them) must be the same target in each.
  const defined = new Map<string, { log: LogInput; e: TargetStartEvent }>();
  for (const log of logs) {
    for (const e of log.events) {
      if (e.type !== 'target-start') continue;
      const other = defined.get(e.target);
      if (!other) {
        defined.set(e.target, { log, e });
        continue;
      }
      const fields = (['environment', 'transport', 'expect'] as const).filter((k) => !isDeepStrictEqual(other.e[k], e[k]));
      if (fields.length) {
        throw new CudamatrixError(
          'MERGE_MISMATCH',
          `target "${e.target}" is defined differently in ${other.log.file} and ${log.file} (${fields.join(', ')}): the logs come from different matrices; merge the logs of runs of one matrix`,
        );
      }
    }
  }
}

function warningsOf(logs: LogInput[]): string[] {
  const warnings: string[] = [];
  const files = [...new Set(logs.map((log) => startOf(log).matrix.file))];
  if (files.length > 1)
    warnings.push(
      `the logs name different matrix files (${files.join(', ')}); their expectations agree, so they are taken as one matrix, named ${files[0]}`,
    );
  const quick = logs.filter((log) => startOf(log).options.quick);
  if (quick.length > 0 && quick.length < logs.length) {
    warnings.push(
      `${some(quick.map((log) => log.file))} ran with --quick (small parameters) and the others did not: each cell keeps the parameters it ran with`,
    );
  }
  const totals = [...new Set(logs.flatMap((log) => (startOf(log).shard ? [startOf(log).shard!.total] : [])))];
  for (const total of totals) {
    const have = new Set(logs.flatMap((log) => (startOf(log).shard?.total === total ? [startOf(log).shard!.index] : [])));
    const missing = Array.from({ length: total }, (_, i) => i + 1).filter((i) => !have.has(i));
    const one = missing.length === 1;
    if (missing.length)
      warnings.push(
        `shard${one ? '' : 's'} ${missing.map((i) => `${i}/${total}`).join(', ')} of the split into ${total} ${one ? 'is' : 'are'} not among the logs: the merged run lacks ${one ? 'its' : 'their'} cells`,
      );
  }
  for (const log of logs) {
    if (!log.events.some((e) => e.type === 'run-end')) {
      warnings.push(
        `${log.file} has no run-end (the run was killed, or the file cut short): what it did not finish is missing, and the merged log has no run-end either, so it counts as interrupted and is as incomplete as that log (record refuses it)`,
      );
    }
  }
  return warnings;
}

/** The same logs give the same id: the earliest start, as run ids begin, then a hash of the logs' run ids and shards. */
export function mergedRunId(logs: LogInput[], started: string): string {
  const parts = logs.map((log) => `${startOf(log).runId}\0${shardText(startOf(log).shard)}`).sort(byCodeUnits);
  const hash = createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 6);
  return `${started.replace(/[:.]/g, '-')}-merged-${hash}`;
}

/**
 * Targets in the order every log gives (its own order is kept); between logs, which do not say
 * where one log's targets stood among another's in the matrix, by name.
 */
function targetOrder(logs: LogInput[]): string[] {
  // Each round places the least of the chains' next targets. The next targets are kept in a
  // heap, each with the chains it heads: a scan and sort of every chain per target was
  // quadratic in the logs (2,000 logs of one target each: bench/scale).
  const chains = logs.map(targetsOf);
  const at = chains.map(() => 0);
  const placed: string[] = [];
  const done = new Set<string>();
  const heads = new Map<string, number[]>();
  const heap: string[] = [];
  const advance = (i: number) => {
    const chain = chains[i]!;
    while (at[i]! < chain.length && done.has(chain[at[i]!]!)) at[i]!++;
    if (at[i]! === chain.length) return;
    const head = chain[at[i]!]!;
    const chainsOf = heads.get(head);
    if (chainsOf) return void chainsOf.push(i);
    heads.set(head, [i]);
    heapPush(heap, head);
  };
  chains.forEach((_, i) => advance(i));
  while (heap.length) {
    const next = heapPop(heap);
    done.add(next);
    placed.push(next);
    const chainsOf = heads.get(next)!;
    heads.delete(next);
    for (const i of chainsOf) advance(i);
  }
  return placed;
}

/** A binary min-heap of names in code-unit order, in an array. */
function heapPush(heap: string[], name: string): void {
  let i = heap.push(name) - 1;
  while (i > 0) {
    const up = (i - 1) >> 1;
    if (heap[up]! <= name) break;
    heap[i] = heap[up]!;
    i = up;
  }
  heap[i] = name;
}

function heapPop(heap: string[]): string {
  const top = heap[0]!;
  const last = heap.pop()!;
  if (heap.length === 0) return top;
  let i = 0;
  for (;;) {
    const leftChild = 2 * i + 1;
    if (leftChild >= heap.length) break;
    const smaller = leftChild + 1 < heap.length && heap[leftChild + 1]! < heap[leftChild]! ? leftChild + 1 : leftChild;
    if (heap[smaller]! >= last) break;
    heap[i] = heap[smaller]!;
    i = smaller;
  }
  heap[i] = last;
  return top;
}

const endOf = (log: LogInput) => log.events.find((e): e is RunEndEvent => e.type === 'run-end');

const earliest = (times: string[]) =>
  times.reduce((earliestSoFar, time) => (Date.parse(time) < Date.parse(earliestSoFar) ? time : earliestSoFar));
const latest = (times: string[]) => times.reduce((latestSoFar, time) => (Date.parse(time) > Date.parse(latestSoFar) ? time : latestSoFar));

/** Merges logs into one run (docs/results.md, "The merged log": what it looks like and what is refused). */
export function mergeEventLogs(given: LogInput[], options: MergeOptions = {}): MergedRun {
  if (given.length === 0)
    throw new CudamatrixError('USAGE', 'nothing to merge: pass the event logs (events.jsonl) or run folders of the shards');
  const logs = ordered(given);
  checkDuplicates(logs);
  checkSameMatrix(logs);
  checkOverlaps(logs);

  const starts = logs.map(startOf);
  const first = starts[0]!;
  const started = earliest(starts.map((logStart) => logStart.started));
  const order = targetOrder(logs);
  // Each target's cells and events, log by log, gathered in one pass (a filter of every log per
  // target was quadratic: most of a merge of 2,000 logs, bench/scale).
  const cellsOf = new Map<string, string[]>();
  for (const log of logs)
    for (const cell of startOf(log).cells) cellsOf.set(targetOf(cell), [...(cellsOf.get(targetOf(cell)) ?? []), cell]);
  const cells = order.flatMap((target) => cellsOf.get(target) ?? []);
  const eventsOf = new Map<string, Map<LogInput, RunEvent[]>>();
  for (const log of logs) {
    for (const e of log.events) {
      if (!('target' in e)) continue;
      let byLog = eventsOf.get(e.target);
      if (!byLog) eventsOf.set(e.target, (byLog = new Map()));
      const list = byLog.get(log);
      if (list) list.push(e);
      else byLog.set(log, [e]);
    }
  }
  const start: MergedRunStart = {
    type: 'run-start',
    schemaVersion: EVENTS_SCHEMA_VERSION,
    tool: 'cudamatrix',
    version: first.version,
    runId: mergedRunId(logs, started),
    started,
    shard: null,
    matrix: {
      file: first.matrix.file,
      ...(first.matrix.description !== undefined ? { description: first.matrix.description } : {}),
      expectations: first.matrix.expectations,
    },
    cells,
    options: {
      strict: options.strict || starts.every((logStart) => logStart.options.strict),
      quick: starts.some((logStart) => Boolean(logStart.options.quick)),
    },
    mergedFrom: logs.map((log) => ({
      file: log.file,
      runId: startOf(log).runId,
      shard: startOf(log).shard,
      started: startOf(log).started,
    })),
  };

  const events: RunEvent[] = [start];
  for (const target of order) {
    const byLog = eventsOf.get(target) ?? new Map<LogInput, RunEvent[]>();
    const parts = [...byLog.keys()];
    const of = (log: LogInput) => byLog.get(log) ?? [];
    // A target whose probes were split between logs starts once, with all of its probes.
    const probes = [...new Set(parts.flatMap((log) => of(log).flatMap((e) => (e.type === 'target-start' ? e.probes : []))))];
    // And with one sysinfo run, as a single run has: the planned one, else the first log's.
    const sysinfoFrom = parts.find((log) => of(log).some((e) => e.type === 'cell-end' && e.probe === 'sysinfo' && e.planned)) ?? parts[0];
    let started = false;
    for (const log of parts) {
      for (const e of of(log)) {
        if (!('target' in e)) continue;
        if ((e.type === 'cell-start' || e.type === 'cell-end') && e.probe === 'sysinfo' && log !== sysinfoFrom) continue;
        if (e.type === 'target-start') {
          if (started) continue;
          started = true;
          events.push(parts.length > 1 ? { ...e, probes } : e);
        } else {
          events.push(e);
        }
      }
    }
  }
  const ends = logs.map(endOf);
  // A log that never ended (killed, or cut short) is incomplete, and so is the merged log: no run-end.
  if (ends.every((e) => e !== undefined)) {
    const finished = latest(ends.map((e) => e!.finished));
    events.push({
      type: 'run-end',
      finished,
      durationMs: Math.max(0, Date.parse(finished) - Date.parse(started)),
      interrupted: ends.some((e) => e!.interrupted),
    });
  }
  return { start, events, warnings: warningsOf(logs) };
}

/**
 * Writes the merged run's folder, <resultsDir>/<run-id>/events.jsonl, as run writes its own (one
 * event a line). The same logs give the same run id: a second merge of them replaces the file.
 */
export function writeMergedRun(merged: MergedRun, resultsDir: string): { runDir: string; eventsFile: string } {
  const runDir = path.join(resultsDir, merged.start.runId);
  makeDir(runDir, 'the run folder');
  const eventsFile = path.join(runDir, 'events.jsonl');
  // Line by line: a fleet's merged log (250 MB for 2,000 targets) is never one string.
  writeFileAtomic(eventsFile, mergedLines(merged.events));
  return { runDir, eventsFile };
}

/**
 * The merged log's lines. An event as read from a log is its line's bytes, copied from the log
 * (JSON.stringify of the parsed line gives the same bytes, in five times the time: bench/scale),
 * the lines that follow each other in one log in one read (a cell-end with its samples line: two
 * lines); an event the merge made, a line not plain (events/events.ts) or a log changed since it
 * was read, the lines eventText writes.
 */
function* mergedLines(events: RunEvent[]): Generator<string | Uint8Array> {
  const logs = new LogCopier();
  let run: { source: LogSource; start: number; end: number } | undefined;
  try {
    for (const e of events) {
      const read = lineRead.get(e);
      const copy = read?.span.plain && logs.unchanged(read.source) ? read : undefined;
      // The next line of the same log, after its "\n": one read for both.
      if (copy && run?.source === copy.source && run.end + 1 === copy.span.start) {
        run.end = copy.span.end;
        continue;
      }
      if (run) yield* [logs.bytes(run.source, run.start, run.end), '\n'];
      run = copy && { source: copy.source, start: copy.span.start, end: copy.span.end };
      if (!copy && lacksSamples(e)) {
        throw new CudamatrixError(
          'EVENTS_INVALID',
          `${read!.source.file} changed while it was being merged (its size or modification time is not what it was when read); merge it again when nothing writes to it`,
        );
      }
      if (!copy) yield eventText(e);
    }
    if (run) yield* [logs.bytes(run.source, run.start, run.end), '\n'];
  } finally {
    logs.close();
  }
}

/** Reads bytes of the logs again, one log open at a time. */
class LogCopier {
  private fd: number | undefined;
  private openFor: LogSource | undefined;
  private readonly same = new Map<LogSource, boolean>();

  /** Whether the log is as it was read (same size and modification time), so that its spans still hold. */
  unchanged(source: LogSource): boolean {
    let same = this.same.get(source);
    if (same !== undefined) return same;
    try {
      this.open(source);
      const st = fstatSync(this.fd!);
      same = st.size === source.size && st.mtimeMs === source.mtimeMs;
    } catch {
      same = false;
    }
    this.same.set(source, same);
    return same;
  }

  bytes(source: LogSource, start: number, end: number): Uint8Array {
    this.open(source);
    const buffer = Buffer.allocUnsafe(end - start);
    for (let at = 0; at < buffer.length;) {
      const bytesRead = readSync(this.fd!, buffer, at, buffer.length - at, start + at);
      if (bytesRead === 0) throw new Error(`${source.file} was cut short while the merged log was written`);
      at += bytesRead;
    }
    return buffer;
  }

  private open(source: LogSource): void {
    if (this.openFor === source) return;
    this.close();
    this.fd = openSync(source.file, 'r');
    this.openFor = source;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.openFor = undefined;
  }
}
