/**
 * The versioned event log: every run (or shard) writes results/runs/<run-id>/events.jsonl, one
 * JSON event a line, written as it happens so that a crash loses nothing already measured. The
 * first line carries the schema version; JUnit, summaries and records are renderings of the log.
 * Since schema 2 a cell-end's sample records are on a line of their own just before it (see
 * eventText): docs/results.md, "The event log".
 */
import { isUtf8 } from 'node:buffer';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { CudamatrixError } from '../core/errors.ts';
import type { Expectation } from '../matrix/schema.ts';
import type { ProbeRecord, ProtocolProblem } from '../probes/protocol.ts';
import type { ProbeStatus } from '../probes/run-probe.ts';
import type { HostKeyAdded } from '../transports/transport.ts';

export const EVENTS_SCHEMA_VERSION = 2;

export interface RunStartEvent {
  type: 'run-start';
  schemaVersion: number;
  tool: 'cudamatrix';
  version: string;
  runId: string;
  started: string;
  shard: { index: number; total: number } | null;
  matrix: { file: string; description?: string; expectations: Partial<Record<string, Expectation[]>> };
  cells: string[];
  options: { strict: boolean; quick?: boolean };
}

export interface TargetStartEvent {
  type: 'target-start';
  target: string;
  time: string;
  environment: string;
  transport: string[];
  probes: string[];
  expect: Expectation[];
  /** The target asks for no GPU (docker gpus: none): a driver missing there is as asked. Absent otherwise (and from older logs). */
  noGpu?: true;
}

export interface TargetReadyEvent {
  type: 'target-ready';
  target: string;
  time: string;
  session: string;
  platform: string;
  arch: string;
  /** built: compiled by this run; prebuilt: the package's own binary (absent from older logs). */
  probe: { hash: string; built: boolean; prebuilt?: boolean; uploaded?: boolean; path?: string };
  /** Host keys that --accept-new (or hostKeyPolicy: accept-new) wrote to known_hosts while connecting; absent when none (and from older logs). */
  hostKeysAdded?: HostKeyAdded[];
}

/**
 * The target could not be used (unreachable, deploy failed, environment mismatch...). The
 * code's class (core/errors.ts) says what that means: for a not-applicable code (WSL_VERSION_1:
 * the target cannot run probes by its nature) its cells end as skipped, not as errors, and
 * the run does not fail because of it.
 */
export interface TargetErrorEvent {
  type: 'target-error';
  target: string;
  time: string;
  code: string;
  message: string;
  /** As in target-ready: keys written before the connection failed (authentication, say). */
  hostKeysAdded?: HostKeyAdded[];
}

/** A cell starts running (sysinfo's run included). */
export interface CellStartEvent {
  type: 'cell-start';
  cell: string;
  target: string;
  probe: string;
  time: string;
}

/**
 * How a cell ended: what the probe did (passed, skipped, error, cancelled while it ran), or
 * not-run: the run was interrupted before the cell started (not an error).
 */
export type CellStatus = ProbeStatus | 'not-run';

export interface CellEndEvent {
  type: 'cell-end';
  cell: string;
  target: string;
  probe: string;
  /** False for the sysinfo run every target gets when sysinfo is not one of its planned cells. */
  planned: boolean;
  time: string;
  status: CellStatus;
  reason?: string;
  /**
   * The code of what ended the cell: with status error, what failed; with status skipped, the
   * not-applicable code of its target (WSL_VERSION_1), absent when the probe itself skipped.
   */
  errorCode?: string;
  /** The parameters the probe ran with (defaults, --quick, the matrix's). */
  params?: Record<string, unknown>;
  durationMs: number;
  exitCode: number | null;
  signal: string | null;
  records: ProbeRecord[];
  problems: ProtocolProblem[];
  stderrTail: string;
}

export interface RunEndEvent {
  type: 'run-end';
  finished: string;
  durationMs: number;
  interrupted: boolean;
}

/** The line before a cell-end that holds its sample records (eventText); read into the cell-end, never an event. */
interface CellSamplesLine {
  type: 'cell-samples';
  count: number;
  cell: string;
  samples: ProbeRecord[];
}

export type RunEvent = RunStartEvent | TargetStartEvent | TargetReadyEvent | TargetErrorEvent | CellStartEvent | CellEndEvent | RunEndEvent;

/** Whether a record is one of the memory samples a probe took (most of a log's bytes). */
const isSample = (record: ProbeRecord | null | undefined) => record?.type === 'sample';

/**
 * The lines an event is written as, each ending in "\n": its JSON, and for a cell-end with
 * sample records first a line of them alone,
 *
 *   {"type":"cell-samples","count":N,"cell":CELL,"samples":[...]}
 *
 * the cell-end then holding the other records. A reader that needs no samples (merge, whose
 * 2,000 logs are 62 % samples) skips that line unread; readEventLog puts them back, after the
 * cell-end's other records. `e.records` is put in that order, so that the run's own events and
 * the log read back are the same.
 */
export function eventText(e: RunEvent): string {
  if (e.type !== 'cell-end' || !e.records.some(isSample)) return `${JSON.stringify(e)}\n`;
  const samples = e.records.filter(isSample);
  e.records = [...e.records.filter((record) => !isSample(record)), ...samples];
  const line = JSON.stringify({ type: 'cell-samples', count: samples.length, cell: e.cell, samples });
  return `${line}\n${JSON.stringify({ ...e, records: e.records.slice(0, -samples.length) })}\n`;
}

/** How a samples line starts, as eventText writes it: its count read without parsing the line. */
const SAMPLES_LINE = Buffer.from('{"type":"cell-samples","count":');
const SAMPLES_HEAD = /^\{"type":"cell-samples","count":(\d+),"cell":("(?:[^"\\]|\\.)*")/;

/** A samples line read, waiting for its cell-end: where it starts, its cell, its samples (or only their count). */
interface PendingSamples {
  start: number;
  end: number;
  line: number;
  /** Plain, and ended by LF alone: the two lines can be copied as one span. */
  plain: boolean;
  cell: string;
  samples?: ProbeRecord[];
  count: number;
}

/** Reads a log back; refuses a newer schema and names the line of anything unreadable. */
export function readEventLog(file: string): RunEvent[] {
  return readEventLogLines(file).events;
}

/**
 * Where an event's line lies in its file: bytes [start, end), without the "\n" (nor a "\r"
 * before it). plain: the line is one JSON object with nothing around it, in valid UTF-8, as a
 * writer of JSON lines writes it; a merge copies such a line's bytes instead of writing it anew.
 */
export interface LineSpan {
  start: number;
  end: number;
  plain: boolean;
}

/**
 * readEventLog, with each event's line as bytes of the file (spans[i] is events[i]'s), and the
 * size read and the file's modification time: what a merge needs to copy the lines as they are
 * (and to see that the file has changed since). leaveOutSamples: the cell-ends of plain lines
 * without their sample records (counted: sampleCount), for a reader that needs none of them and
 * copies those lines as they are (merge: kept, they cost its reading of 2,000 logs about 1 s of
 * CPU, mostly the collector's: bench/scale).
 */
export function readEventLogLines(
  file: string,
  options: { leaveOutSamples?: boolean } = {},
): { events: RunEvent[]; spans: LineSpan[]; size: number; mtimeMs: number } {
  let bytes: Buffer;
  let st: { mtimeMs: number };
  try {
    const fd = openSync(file, 'r');
    try {
      bytes = readFileSync(fd);
      st = fstatSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    throw new CudamatrixError(
      'EVENTS_INVALID',
      `event log ${file} cannot be read; pass the events.jsonl of a run (results/runs/<run-id>/events.jsonl)`,
    );
  }
  const events: RunEvent[] = [];
  const spans: LineSpan[] = [];
  let pending: PendingSamples | undefined;
  for (let start = 0, lineNumber = 1; start <= bytes.length; lineNumber++) {
    const newline = bytes.indexOf(0x0a, start);
    const last = newline < 0;
    const stop = last ? bytes.length : newline;
    const end = stop > start && bytes[stop - 1] === 0x0d ? stop - 1 : stop;
    const plain = bytes[start] === 0x7b && bytes[end - 1] === 0x7d && isUtf8(bytes.subarray(start, end));
    const lineStart = start;
    start = stop + 1;
    // A samples line as eventText writes it, for a reader that leaves samples out: its count
    // and cell from its first bytes, the rest never decoded.
    const head =
      options.leaveOutSamples && plain && bytes.subarray(lineStart, Math.min(end, lineStart + SAMPLES_LINE.length)).equals(SAMPLES_LINE)
        ? SAMPLES_HEAD.exec(bytes.toString('utf8', lineStart, Math.min(end, lineStart + 4096)))
        : null;
    const samplesLine = (cell: string, count: number, samples?: ProbeRecord[]): PendingSamples => ({
      start: lineStart,
      end,
      line: lineNumber,
      plain: plain && end === stop,
      cell,
      count,
      samples,
    });
    if (head && !pending) {
      pending = samplesLine(JSON.parse(head[2]!) as string, Number(head[1]));
      continue;
    }
    const line = bytes.toString('utf8', lineStart, end);
    if (!line.trim()) continue;
    let e: unknown;
    try {
      e = JSON.parse(line);
    } catch {
      if (events.length === 0 && !pending) throw unreadableFirstLine(file, line, last ? '' : bytes.toString('utf8', start, start + 65536));
      // A run killed mid-write leaves a partial last line: everything before it still counts.
      if (last) break;
      throw new CudamatrixError('EVENTS_INVALID', `${file}:${lineNumber}: not a JSON event`);
    }
    const event = e as RunEvent | CellSamplesLine;
    if (pending && (event.type !== 'cell-end' || event.cell !== pending.cell)) {
      throw new CudamatrixError(
        'EVENTS_INVALID',
        `${file}:${pending.line}: the samples of cell ${pending.cell} are not followed by its cell-end (line ${lineNumber} is ${event.type === 'cell-end' ? `the cell-end of ${event.cell}` : `a ${String(event.type)}`})`,
      );
    }
    if (event.type === 'cell-samples') {
      if (!Array.isArray(event.samples) || typeof event.cell !== 'string')
        throw new CudamatrixError('EVENTS_INVALID', `${file}:${lineNumber}: a cell-samples line without its cell and samples`);
      pending = samplesLine(event.cell, event.samples.length, event.samples);
      continue;
    }
    let span = { start: lineStart, end, plain };
    let cut = 0;
    if (pending && event.type === 'cell-end') {
      // One event of two lines: its span covers both, so that a merge copies them together.
      span = { start: pending.start, end, plain: plain && pending.plain };
      // Left unread, but the two lines cannot be copied as they are: read after all, kept.
      if (!pending.samples && !span.plain)
        pending.samples = (JSON.parse(bytes.toString('utf8', pending.start, pending.end)) as CellSamplesLine).samples;
      if (pending.samples) event.records = [...event.records, ...pending.samples];
      else cut = pending.count;
      pending = undefined;
    }
    if (options.leaveOutSamples && span.plain) leaveOutSamples(event, cut);
    events.push(event);
    spans.push(span);
  }
  // A samples line left without its cell-end is the end of a run killed between the two writes: dropped, as a cut line is.
  const head = events[0];
  if (head && head.type !== 'run-start' && EVENT_TYPES.has(String(head.type))) {
    throw new CudamatrixError(
      'EVENTS_INVALID',
      `${file}:1: the log starts with a ${head.type} event, not with the run's run-start: its beginning is missing (truncated or damaged), and it cannot be read without it; ${TAKE_IT_AGAIN}`,
    );
  }
  if (!head || head.type !== 'run-start') throw notAnEventLog(file);
  if (typeof head.schemaVersion !== 'number' || head.schemaVersion > EVENTS_SCHEMA_VERSION) {
    throw new CudamatrixError(
      'EVENTS_TOO_NEW',
      `${file} was written with event schema ${String(head.schemaVersion)} by cudamatrix ${head.version}; this cudamatrix reads schema ${EVENTS_SCHEMA_VERSION} and older: upgrade cudamatrix to read it`,
    );
  }
  return { events, spans, size: bytes.length, mtimeMs: st.mtimeMs };
}

/** The types of the lines of an event log. */
const EVENT_TYPES = new Set([
  'run-start',
  'target-start',
  'target-ready',
  'target-error',
  'cell-start',
  'cell-end',
  'run-end',
  'cell-samples',
]);

const TAKE_IT_AGAIN =
  "take events.jsonl again from the run's folder (results/runs/<run-id>/) or from where it was copied, or run the matrix again";

function notAnEventLog(file: string): CudamatrixError {
  return new CudamatrixError(
    'EVENTS_INVALID',
    `${file} is not a cudamatrix event log (its first line is not a run-start event); pass the events.jsonl of a run (results/runs/<run-id>/events.jsonl)`,
  );
}

/**
 * A first line that is not JSON: the run-start of a log cut or damaged there, when it reads as
 * part of one or the lines after it are events (a log cut at its start, or a copy that lost
 * bytes), else a file that is no event log at all.
 */
function unreadableFirstLine(file: string, line: string, after: string): CudamatrixError {
  const nextLine = after.split('\n').find((laterLine) => laterLine.trim());
  let next: unknown;
  try {
    next = nextLine === undefined ? undefined : JSON.parse(nextLine);
  } catch {
    next = undefined;
  }
  const nextIsEvent = typeof next === 'object' && next !== null && EVENT_TYPES.has(String((next as { type?: unknown }).type));
  if (!nextIsEvent && !/^\s*\{"type":"run-start"/.test(line)) return notAnEventLog(file);
  return new CudamatrixError(
    'EVENTS_INVALID',
    `${file}:1: the first line, the run's run-start event, is cut short or damaged: the log is truncated or damaged at line 1 (${nextIsEvent ? 'the lines after it are events' : 'the file ends within it'}), and cannot be read without its run-start; ${TAKE_IT_AGAIN}`,
  );
}

/** The sample records readEventLogLines left out of a cell-end, by event. */
const samplesLeftOut = new WeakMap<RunEvent, number>();

/** Leaves out the sample records a cell-end still holds; `skipped` were on its samples line, never parsed. */
function leaveOutSamples(e: RunEvent, skipped: number): void {
  if (e.type !== 'cell-end' || !Array.isArray(e.records)) return;
  const kept = e.records.filter((record) => !isSample(record));
  const left = e.records.length - kept.length + skipped;
  if (left === 0) return;
  samplesLeftOut.set(e, left);
  e.records = kept;
}

/** How many sample records a cell had: those its cell-end holds, and those left out when it was read. */
export function sampleCount(e: CellEndEvent): number {
  return (samplesLeftOut.get(e) ?? 0) + e.records.filter((record) => record.type === 'sample').length;
}

/** Whether reading left sample records out of the event (it is not the whole of its line). */
export function lacksSamples(e: RunEvent): boolean {
  return samplesLeftOut.has(e);
}
