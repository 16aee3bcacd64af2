/** Builds event logs for tests of the verdict engine and the reporters. */
import type { Expectation } from '../matrix/schema.ts';
import type { ProbeRecord } from '../probes/protocol.ts';
import { EVENTS_SCHEMA_VERSION, type CellEndEvent, type RunEvent, type RunStartEvent } from '../events/events.ts';

export function runStart(expectations: RunStartEvent['matrix']['expectations'] = {}, cells: string[] = []): RunStartEvent {
  return {
    type: 'run-start',
    schemaVersion: EVENTS_SCHEMA_VERSION,
    tool: 'cudamatrix',
    version: '0.1.0',
    runId: 'test-run',
    started: '2026-11-29T12:00:00.000Z',
    shard: null,
    matrix: { file: 'test.yaml', expectations },
    cells,
    options: { strict: false },
  };
}

export function targetStart(target: string, expect: Expectation[] = [], environment = 'auto', probes = ['sysinfo']): RunEvent {
  return { type: 'target-start', target, time: '2026-11-29T12:00:00.000Z', environment, transport: ['local'], probes, expect };
}

export function cell(
  target: string,
  probe: string,
  status: CellEndEvent['status'],
  records: ProbeRecord[] = [],
  extra: Partial<CellEndEvent> = {},
): CellEndEvent {
  return {
    type: 'cell-end',
    cell: `${target}/${probe}`,
    target,
    probe,
    planned: true,
    time: '2026-11-29T12:00:01.000Z',
    status,
    durationMs: 120,
    exitCode: status === 'passed' ? 0 : status === 'skipped' ? 3 : 1,
    signal: null,
    records,
    problems: [],
    stderrTail: '',
    ...extra,
  };
}

export function sysinfo(values: Record<string, string | number | boolean | null>): ProbeRecord[] {
  return Object.entries(values).map(
    ([name, value]) => ({ schema: 'cudaprobe/1', type: 'sysinfo', probe: 'sysinfo', name, value }) as ProbeRecord,
  );
}

export const runEnd: RunEvent = { type: 'run-end', finished: '2026-11-29T12:00:02.000Z', durationMs: 2000, interrupted: false };
