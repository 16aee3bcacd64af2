/**
 * The real H200 run (records/driver-580.159.04/h200-linux, 2026-11-29) with expectations
 * added, for the tests of the evidence in verdicts and reporters; and the records of that run that
 * an expectation matches, read from the log, so that tests assert on the measured numbers.
 */
import path from 'node:path';
import { readEventLog, type RunEvent, type RunStartEvent } from '../events/events.ts';
import type { Expectation } from '../matrix/schema.ts';
import type { MetricRecord, ProbeRecord, Scalar } from '../probes/protocol.ts';
import { repoRoot } from './helpers.ts';

export const h200EventsFile = path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux', 'events.jsonl');
export const h200Events: RunEvent[] = readEventLog(h200EventsFile);

/** The new user's expectation of the issue: pinned host-to-device bandwidth of at least 40 GB/s. */
export const pinnedH2dAtLeast40: Expectation = {
  metric: 'transfer-bandwidth.bandwidth_gbps',
  where: { direction: 'h2d', memory: 'pinned' },
  '>=': '40 GB/s',
  why: "the H200's PCIe gen5 x16 link carries 63 GB/s; pinned copies should reach most of it",
};

/** The H200 log with `replace` in the linux class, in place of the expectations on the same facts and metrics. */
export function h200WithLinuxExpectations(replace: Expectation[]): RunEvent[] {
  const start = h200Events[0] as RunStartEvent;
  const names = new Set(replace.map((e) => e.fact ?? e.metric));
  const linux = (start.matrix.expectations.linux ?? []).filter((e) => !names.has(e.fact ?? e.metric));
  return [
    { ...start, matrix: { ...start.matrix, expectations: { ...start.matrix.expectations, linux: [...linux, ...replace] } } },
    ...h200Events.slice(1),
  ];
}

function plannedRecords(events: RunEvent[], probe: string): ProbeRecord[] {
  return events.flatMap((e) => (e.type === 'cell-end' && e.planned && e.probe === probe ? e.records : []));
}

/** The metric records of the log that `qualified` and `where` select, in the log's order. */
export function metricsIn(events: RunEvent[], qualified: string, where: Record<string, Scalar> = {}): MetricRecord[] {
  const [probe, name] = [qualified.slice(0, qualified.indexOf('.')), qualified.slice(qualified.indexOf('.') + 1)];
  return plannedRecords(events, probe).filter(
    (record): record is MetricRecord =>
      record.type === 'metric' && record.name === name && Object.entries(where).every(([k, expected]) => record.attrs?.[k] === expected),
  );
}

/** The fact record of the log for `qualified`. */
export function factIn(events: RunEvent[], qualified: string): Extract<ProbeRecord, { type: 'fact' }> {
  const [probe, name] = [qualified.slice(0, qualified.indexOf('.')), qualified.slice(qualified.indexOf('.') + 1)];
  const fact = plannedRecords(events, probe).find(
    (record): record is Extract<ProbeRecord, { type: 'fact' }> => record.type === 'fact' && record.name === name,
  );
  if (!fact) throw new Error(`the H200 log has no fact ${qualified}`);
  return fact;
}
