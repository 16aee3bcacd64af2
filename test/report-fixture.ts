/**
 * Behaviour records for the report's tests, made the way `cudamatrix record` makes them: from
 * the committed H200 event logs (2026-11-29, and the second run of 2026-11-30 with the same
 * driver), judged against matrix/default.yaml's expectations; and written where recordPath
 * puts them.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readEventLog } from '../events/events.ts';
import { loadMatrixFile } from '../matrix/load.ts';
import { recordPath, recordsFromEvents, type BehaviourRecord } from '../behaviour/behaviour-record.ts';
import type { LoadedRecord } from '../report/load.ts';
import { repoRoot } from './helpers.ts';

export const H200_LOGS = ['h200-linux', 'h200-linux-package'].map((run) =>
  path.join(repoRoot, 'records', 'driver-580.159.04', run, 'events.jsonl'),
);

/** The records of the H200 runs: [2026-11-29, 2026-11-30]. */
export async function h200Records(): Promise<[BehaviourRecord, BehaviourRecord]> {
  const defaults = (await loadMatrixFile(path.join(repoRoot, 'matrix', 'default.yaml'))).expectations;
  const records = H200_LOGS.flatMap((log) => recordsFromEvents(readEventLog(log), defaults));
  if (records.length !== 2) throw new Error(`the H200 logs gave ${records.length} records, not 2`);
  return [records[0]!, records[1]!];
}

/** A deep copy, changed by `edit`, with an id of its own (another run of the same machine). */
export function variant(record: BehaviourRecord, id: string, edit: (copy: BehaviourRecord) => void): BehaviourRecord {
  const copy = structuredClone(record);
  copy.id = id;
  edit(copy);
  return copy;
}

/** As loadRecords gives them: at their recordPath. */
export function loaded(records: BehaviourRecord[]): LoadedRecord[] {
  return records.map((record) => ({ file: recordPath(record), record }));
}

/** Writes records under dir as `cudamatrix record` does (driver-<v>/<name>.json); returns their paths. */
export function writeRecords(dir: string, records: BehaviourRecord[]): string[] {
  return records.map((record) => {
    const file = path.join(dir, recordPath(record));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
    return file;
  });
}
