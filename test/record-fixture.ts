/**
 * The committed H200 runs (driver 580.159.04, one machine) as behaviour records, for the tests
 * of record and diff: made as `cudamatrix record` makes them, judged against matrix/default.yaml.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { readEventLog } from '../events/events.ts';
import { loadMatrixFile } from '../matrix/load.ts';
import type { Expectation } from '../matrix/schema.ts';
import { recordsFromEvents, type BehaviourRecord } from '../behaviour/behaviour-record.ts';

const root = path.resolve(import.meta.dirname, '..');
export const H200_DIR = path.join(root, 'records', 'driver-580.159.04');

/** The four runs: 2026-11-29 (compiled cudaprobe), 2026-11-30 (installed package), and two back to back on 2026-12-01. */
export const H200_RUNS = ['h200-linux', 'h200-linux-package', 'h200-linux-2026-12-01-run1', 'h200-linux-2026-12-01-run2'].map((run) =>
  path.join(H200_DIR, run, 'events.jsonl'),
);

export async function defaultExpectations(): Promise<Partial<Record<string, Expectation[]>>> {
  return (await loadMatrixFile(path.join(root, 'matrix', 'default.yaml'))).expectations;
}

/** One record per run, in H200_RUNS' order. */
export async function h200Records(): Promise<BehaviourRecord[]> {
  const defaults = await defaultExpectations();
  return H200_RUNS.map((log) => {
    const records = recordsFromEvents(readEventLog(log), defaults);
    if (records.length !== 1) throw new Error(`${log} gave ${records.length} records, not 1`);
    return records[0]!;
  });
}

/** A deep copy with its own id (another observation), changed by `edit`. */
export function doctored(record: BehaviourRecord, id: string, edit: (copy: BehaviourRecord) => void): BehaviourRecord {
  const copy = structuredClone(record);
  copy.id = id;
  edit(copy);
  return copy;
}

/** The series of a metric with exactly these attrs (its first value), for editing in tests. */
export function metricOf(record: BehaviourRecord, name: string, attrs: Record<string, unknown>) {
  const metric = record.metrics.find(
    (candidate) =>
      candidate.name === name &&
      Object.keys(attrs).every((k) => candidate.attrs?.[k] === attrs[k]) &&
      Object.keys(candidate.attrs ?? {}).length === Object.keys(attrs).length,
  );
  if (!metric) throw new Error(`no ${name} ${JSON.stringify(attrs)}`);
  return metric;
}

/** An H200 event log's text with each probe record of its cells changed by `edit` (a doctored copy of a run, as `doctored` is of a record). */
export function doctoredLog(
  log: string,
  edit: (r: { probe: string; type: string; name: string; value: unknown; attrs?: Record<string, unknown> }) => void,
): string {
  const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  return `${lines
    .map((line) => {
      const e = JSON.parse(line) as { type: string; records?: Parameters<typeof edit>[0][] };
      if (e.type === 'cell-end') for (const record of e.records ?? []) edit(record);
      return JSON.stringify(e);
    })
    .join('\n')}\n`;
}

/** The last H200 run (2026-12-01) with every pinned copy bandwidth halved: a same-driver regression, the same facts. */
export function halvedBandwidthLog(): string {
  return doctoredLog(H200_RUNS[3]!, (record) => {
    if (
      record.type === 'metric' &&
      record.name === 'bandwidth_gbps' &&
      record.attrs?.memory === 'pinned' &&
      typeof record.value === 'number'
    )
      record.value /= 2;
  });
}

/** The first H200 log with its sysinfo saying that no driver could be loaded, and every probe skipped. */
export function noDriverLog(): string {
  const events = readFileSync(H200_RUNS[0]!, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return `${events
    .map((e) => {
      if (e.type !== 'cell-end') return e;
      if (e.probe !== 'sysinfo') return { ...e, status: 'skipped', reason: 'no usable driver', records: [] };
      const kept = (e.records as { name: string }[]).filter(
        (record) => !['driver_version', 'gpu_name', 'driver_found'].includes(record.name),
      );
      return {
        ...e,
        records: [
          ...kept,
          { schema: 'cudaprobe/1', probe: 'sysinfo', type: 'sysinfo', name: 'driver_found', value: false, source: 'dlopen' },
        ],
      };
    })
    .map((e) => JSON.stringify(e))
    .join('\n')}\n`;
}
