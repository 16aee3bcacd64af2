/**
 * What `record` and `diff` take as an input, read into behaviour records: an event log (an
 * events.jsonl, or the run folder holding one), a record file, a file of records submitted by a
 * user (`record --submit`), or a folder of records (records, or one driver-<v>/ of it).
 * Every failure names the file and what would fix it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CudamatrixError } from '../core/errors.ts';
import { readEventLog, type RunEvent } from '../events/events.ts';
import type { Expectation } from '../matrix/schema.ts';
import { checkRecord, invalid, isObject } from './validate-record.ts';
import { keyText, recordsFromEvents, type BehaviourRecord } from './behaviour-record.ts';
import { HISTORY_PER_DRIVER } from './noise.ts';
import { comparedRecords } from './diff.ts';
import { readDigests, type KeptMetrics } from './records-index.ts';
import { isSubmission, parseSubmission } from './submit.ts';

export type InputKind = 'event-log' | 'record' | 'submission' | 'records-folder';

export interface InputRecord {
  record: BehaviourRecord;
  /** The file it was read from (for records and folders of them), else null. */
  file: string | null;
}

export interface Input {
  /** The path as given. */
  source: string;
  kind: InputKind;
  /** The events.jsonl read, for an event log or run folder. */
  eventLog?: string;
  records: InputRecord[];
  /** For an event log: why each target without a record gave none (no driver, unreachable...). */
  unrecorded: string[];
}

/** Whether a record observed anything: a fact or a metric (a run of sysinfo alone gives neither). */
export const measuredSomething = (record: BehaviourRecord): boolean => Object.keys(record.facts).length > 0 || record.metrics.length > 0;

/** Why a target's record measured nothing, in words. */
export const NOTHING_MEASURED =
  'no fact and no metric measured (only sysinfo ran, or every other probe gave nothing); a record needs at least one';

/** Why each target of a log that gave no record gave none, in words. */
function unrecordedTargets(events: RunEvent[], recorded: Set<string>, empty: Set<string>): string[] {
  const out: string[] = [];
  for (const e of events) {
    if (e.type !== 'target-start' || recorded.has(e.target)) continue;
    if (empty.has(e.target)) {
      out.push(`${e.target}: ${NOTHING_MEASURED}`);
      continue;
    }
    const error = events.find((event) => event.type === 'target-error' && event.target === e.target);
    if (error?.type === 'target-error') {
      out.push(`${e.target}: not reached (${error.code}: ${error.message})`);
      continue;
    }
    const sysinfo = events.find((event) => event.type === 'cell-end' && event.target === e.target && event.probe === 'sysinfo');
    const facts = new Map(
      sysinfo?.type === 'cell-end'
        ? sysinfo.records.flatMap((probeRecord) => (probeRecord.type === 'sysinfo' ? [[probeRecord.name, probeRecord.value] as const] : []))
        : [],
    );
    if (facts.get('driver_found') === false) out.push(`${e.target}: no NVIDIA driver (the CUDA driver library could not be loaded)`);
    else if (!facts.get('driver_version') || !facts.get('gpu_name'))
      out.push(`${e.target}: no GPU observed (sysinfo names no driver version or GPU)`);
    else out.push(`${e.target}: no probe measured anything (every cell skipped, failed or not run)`);
  }
  return out;
}

/**
 * Why an event log is incomplete (a partial last line, or no run-end event: a run that crashed
 * or was cut short, or a file truncated in a copy), or null when it is whole.
 */
export function incompleteLog(file: string, events: RunEvent[]): string | null {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim());
  const last = lines[lines.length - 1];
  try {
    if (last !== undefined) JSON.parse(last);
  } catch {
    return `its last line (${lines.length}) is cut off`;
  }
  if (!events.some((e) => e.type === 'run-end')) return 'it has no run-end event';
  return null;
}

function fromEventLog(source: string, file: string, defaults: Expectations, complete: boolean): Input {
  const events = readEventLog(file);
  const why = complete ? incompleteLog(file, events) : null;
  if (why) {
    throw new CudamatrixError(
      'EVENTS_INVALID',
      `${file} is an incomplete event log (${why}): the run crashed or was cut short, or the file was truncated; a record is made from the log of a run that ended (run it again, or record the complete events.jsonl)`,
    );
  }
  const all = recordsFromEvents(events, defaults);
  // A target whose record holds no fact and no metric (sysinfo alone) observed nothing to record or compare.
  const records = all.filter(measuredSomething);
  const empty = new Set(all.filter((record) => !measuredSomething(record)).map((record) => record.observed.target));
  return {
    source,
    kind: 'event-log',
    eventLog: file,
    records: records.map((record) => ({ record, file: null })),
    unrecorded: unrecordedTargets(events, new Set(records.map((record) => record.observed.target)), empty),
  };
}

type Expectations = Partial<Record<string, Expectation[]>>;

/**
 * The record files of a folder: its *.json and those of its driver-<v>/ subfolders; not run
 * folders (they hold an events.jsonl: evidence, not records), nor the report's claims/ folder.
 */
function recordFilesUnder(dir: string, depth = 0): string[] {
  const names = readdirSync(dir).sort();
  if (depth > 0 && names.includes('events.jsonl')) return [];
  const files: string[] = [];
  for (const name of names) {
    const full = path.join(dir, name);
    const st = statSync(full);
    if (st.isFile() && name.endsWith('.json')) files.push(full);
    else if (st.isDirectory() && depth < 1 && name.startsWith('driver-')) files.push(...recordFilesUnder(full, depth + 1));
  }
  return files;
}

function readRecordFile(file: string, text: string): BehaviourRecord[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw invalid(file, `not JSON (${(e as Error).message})`);
  }
  return Array.isArray(data) ? data.map((recordData, i) => checkRecord(recordData, `${file} [${i}]`)) : [checkRecord(data, file)];
}

const readWholeFile = (file: string) => readRecordFile(file, readFileSync(file, 'utf8'));

/** Every record of some files as its digest (through the records index), and a way to read one whole in its place. */
function folderDigests(
  files: string[],
  keepMetrics: KeptMetrics,
): { records: InputRecord[]; readWhole: (digest: BehaviourRecord) => BehaviourRecord } {
  const records: InputRecord[] = [];
  const at = new Map<BehaviourRecord, { pos: number; file: string; n: number }>();
  for (let i = 0; i < files.length;) {
    const folder = path.dirname(files[i]!);
    let j = i;
    while (j < files.length && path.dirname(files[j]!) === folder) j++;
    const group = files.slice(i, j);
    readDigests(
      folder,
      group.map((file) => path.basename(file)),
      keepMetrics,
      readWholeFile,
      { metrics: false },
    ).forEach((list, fileIndex) =>
      list.forEach((record, indexInFile) => {
        at.set(record, { pos: records.length, file: group[fileIndex]!, n: indexInFile });
        records.push({ record, file: group[fileIndex]! });
      }),
    );
    i = j;
  }
  const readWhole = (digest: BehaviourRecord) => {
    const where = at.get(digest);
    if (!where) return digest;
    const whole = readWholeFile(where.file)[where.n]!;
    records[where.pos]!.record = whole;
    at.delete(digest);
    at.set(whole, where);
    return whole;
  };
  return { records, readWhole };
}

/**
 * The records of a records folder that measure the noise of the given keys (pairing key and
 * driver, as `want` says): the newest HISTORY_PER_DRIVER of each, read whole. A folder that does
 * not exist gives none.
 */
export function readHistory(dir: string, want: (record: BehaviourRecord) => boolean, keepMetrics: KeptMetrics): BehaviourRecord[] {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) return [];
  const files = recordFilesUnder(dir);
  if (!files.length) return [];
  const folder = folderDigests(files, keepMetrics);
  const groups = new Map<string, BehaviourRecord[]>();
  for (const { record } of folder.records) {
    if (!want(record) || !measuredSomething(record)) continue;
    const k = keyText(record.key);
    const list = groups.get(k);
    if (list) list.push(record);
    else groups.set(k, [record]);
  }
  const out: BehaviourRecord[] = [];
  for (const list of groups.values()) {
    list.sort((left, right) =>
      left.observed.date < right.observed.date ? 1 : left.observed.date > right.observed.date ? -1 : left.id < right.id ? -1 : 1,
    );
    for (const digest of list.slice(0, HISTORY_PER_DRIVER)) out.push(folder.readWhole(digest));
  }
  return out;
}

/**
 * Reads one input. `defaults`: the default expectations, which records made from an event log
 * are judged against (matrix/default.yaml's). `complete`: refuse an event log that is incomplete
 * (see incompleteLog), as `record` does: a record of part of a run must not stand for the run.
 * `forDiff` with `keepMetrics`: a folder is read through its records index (./index.ts), the
 * metrics named kept in every digest (the report's key metrics: one index serves both).
 */
export function readInput(
  source: string,
  defaults: Expectations,
  options: { complete?: boolean; forDiff?: boolean; keepMetrics?: KeptMetrics; foldersOfRecords?: boolean } = {},
): Input {
  const complete = options.complete ?? false;
  // What a caller that takes no folder of records (export) must not suggest.
  const orFolder = options.foldersOfRecords === false ? '' : ', or a folder of records';
  let st;
  try {
    st = statSync(source);
  } catch {
    throw new CudamatrixError(
      'USAGE',
      `${source} does not exist; pass an events.jsonl, a run folder (results/runs/<run-id>), a record (.json)${orFolder ? ', a file made by record --submit' + orFolder : ' or a file made by record --submit'}`,
    );
  }
  if (st.isDirectory()) {
    const log = path.join(source, 'events.jsonl');
    if (statSync(log, { throwIfNoEntry: false })?.isFile()) return fromEventLog(source, log, defaults, complete);
    const files = recordFilesUnder(source);
    if (files.length === 0) {
      const runs = readdirSync(source).filter((name) =>
        statSync(path.join(source, name, 'events.jsonl'), { throwIfNoEntry: false })?.isFile(),
      );
      const inside = runs.length
        ? `; it holds ${runs.length} run folder${runs.length === 1 ? '' : 's'}: pass one of them (the newest is ${path.join(source, runs.sort().at(-1)!)})`
        : '';
      throw new CudamatrixError(
        'USAGE',
        `${source} holds neither an events.jsonl (a run folder) nor record files (*.json, or driver-<version>/*.json)${inside || `; pass a run folder${orFolder}`}`,
      );
    }
    const records: Input['records'] = [];
    if (options.forDiff && options.keepMetrics) {
      // Through the records index: every record's digest, then the one compared per key whole.
      const folder = folderDigests(files, options.keepMetrics);
      for (const digest of comparedRecords(folder.records.map((inputRecord) => inputRecord.record))) folder.readWhole(digest);
      return { source, kind: 'records-folder', records: folder.records, unrecorded: [] };
    }
    for (const file of files) for (const record of readWholeFile(file)) records.push({ record, file });
    if (options.forDiff) {
      // Only the records diff compares keep their metrics and samples: the others keep what diff says of them.
      const compared = comparedRecords(records.map((inputRecord) => inputRecord.record));
      for (const { record } of records) if (!compared.has(record)) [record.metrics, record.samples] = [[], []];
    }
    return { source, kind: 'records-folder', records, unrecorded: [] };
  }
  const text = readFileSync(source, 'utf8');
  if (isSubmission(text))
    return { source, kind: 'submission', records: parseSubmission(text, source).map((record) => ({ record, file: null })), unrecorded: [] };
  const trimmed = text.trimStart();
  // An event log is JSON lines whose first is a run-start event; a record is one JSON document.
  const newline = trimmed.indexOf('\n');
  const firstLine = newline < 0 ? trimmed : trimmed.slice(0, newline);
  let first: unknown;
  try {
    first = JSON.parse(firstLine);
  } catch {
    first = undefined;
  }
  if (isObject(first) && 'type' in first) return fromEventLog(source, source, defaults, complete);
  // A log whose first line is cut: the event log's reader says so (truncated or damaged at line 1).
  if (first === undefined && looksLikeCutEventLog(firstLine, newline < 0 ? '' : trimmed.slice(newline + 1)))
    return fromEventLog(source, source, defaults, complete);
  if (trimmed.startsWith('{') || trimmed.startsWith('['))
    return { source, kind: 'record', records: readRecordFile(source, text).map((record) => ({ record, file: source })), unrecorded: [] };
  throw new CudamatrixError(
    'RECORD_INVALID',
    `${source} is neither an event log (events.jsonl: JSON lines, the first a run-start event), a behaviour record (JSON with recordSchema), nor a file made by \`cudamatrix record --submit\`; pass one of those`,
  );
}

/** A first line that is part of a run-start, or one followed by event lines: an event log cut at line 1. */
function looksLikeCutEventLog(firstLine: string, rest: string): boolean {
  if (/^\{"type":"run-start"/.test(firstLine)) return true;
  const next = rest.split('\n').find((line) => line.trim());
  try {
    const event: unknown = next === undefined ? undefined : JSON.parse(next);
    return isObject(event) && typeof event.type === 'string';
  } catch {
    return false;
  }
}
