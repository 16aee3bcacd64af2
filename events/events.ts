/**
 * The versioned event log: every run (or shard) writes results/runs/<run-id>/events.jsonl, one
 * JSON event a line, written as it happens so that a crash loses nothing already measured. The
 * first line carries the schema version; JUnit, summaries and records are renderings of the log.
 */
import { readFileSync } from 'node:fs';
import { CudamatrixError } from '../core/errors.ts';
import type { Expectation } from '../matrix/schema.ts';
import type { ProbeRecord, ProtocolProblem } from '../probes/protocol.ts';
import type { ProbeStatus } from '../probes/run-probe.ts';
import type { HostKeyAdded } from '../runners/transport.ts';

export const EVENTS_SCHEMA_VERSION = 1;

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

export type RunEvent = RunStartEvent | TargetStartEvent | TargetReadyEvent | TargetErrorEvent | CellStartEvent | CellEndEvent | RunEndEvent;

/** Reads a log back; refuses a newer schema and names the line of anything unreadable. */
export function readEventLog(file: string): RunEvent[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CudamatrixError(
      'EVENTS_INVALID',
      `event log ${file} cannot be read; pass the events.jsonl of a run (results/runs/<run-id>/events.jsonl)`,
    );
  }
  const events: RunEvent[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    let e: unknown;
    try {
      e = JSON.parse(line);
    } catch {
      // A run killed mid-write leaves a partial last line: everything before it still counts.
      if (i === lines.length - 1) return;
      throw new CudamatrixError('EVENTS_INVALID', `${file}:${i + 1}: not a JSON event`);
    }
    events.push(e as RunEvent);
  });
  const head = events[0];
  if (!head || head.type !== 'run-start') {
    throw new CudamatrixError('EVENTS_INVALID', `${file}: the first line is not a run-start event; is this a cudamatrix event log?`);
  }
  if (typeof head.schemaVersion !== 'number' || head.schemaVersion > EVENTS_SCHEMA_VERSION) {
    throw new CudamatrixError(
      'EVENTS_TOO_NEW',
      `${file} was written with event schema ${String(head.schemaVersion)} by cudamatrix ${head.version}; this cudamatrix reads schema ${EVENTS_SCHEMA_VERSION} and older: upgrade cudamatrix to read it`,
    );
  }
  return events;
}
