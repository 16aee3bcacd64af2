/**
 * Reads the committed behaviour records for `report`: every driver-<version>/<name>.json under
 * the records folder (where recordPath puts them; the raw run folders beside them, one level
 * deeper, are not records and are left alone). Each file is checked as record and diff check
 * it (results/record/check.ts, by hand rather than with a schema library: 10,000 records must
 * load in about the time JSON.parse takes, bench/report), and its memory samples.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CudamatrixError } from '../../core/errors.ts';
import { checkRecord, invalid, isObject } from '../record/check.ts';
import { keyText, type BehaviourRecord } from '../record/format.ts';
import { readDigests } from '../record/index.ts';

/** A record and where it lies, relative to the records folder, with / separators. */
export interface LoadedRecord {
  file: string;
  record: BehaviourRecord;
}

/** The record files under `dir`, sorted (the order everything after is built from). */
export function recordFiles(dir: string): string[] {
  let top: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a folder');
    top = readdirSync(dir);
  } catch {
    throw new CudamatrixError(
      'USAGE',
      `records folder ${dir} does not exist or is not a folder; pass the folder that holds driver-<version>/*.json (--records-dir, default results/records)`,
    );
  }
  const files: string[] = [];
  for (const sub of top.filter((n) => n.startsWith('driver-')).sort()) {
    const at = path.join(dir, sub);
    if (!statSync(at).isDirectory()) continue;
    for (const name of readdirSync(at)
      .filter((n) => n.endsWith('.json'))
      .sort()) {
      if (statSync(path.join(at, name)).isFile()) files.push(`${sub}/${name}`);
    }
  }
  return files;
}

/**
 * Every record under `dir`, read and checked; the first bad file stops it with its name and what
 * is wrong. Only the record each column shows in full (its newest with facts: columnsOf's
 * chosen) keeps its memory samples, every metric and its facts' evidence; the others keep what
 * the tables read of them (key, facts, sysinfo, cells, verdicts, and of the metrics those named
 * in `keepMetrics`, the report's key metrics). Those come from the records index
 * (results/record/index.ts) where it is current, so only the shown records are read whole:
 * time and memory go with the columns, not the records (10,000 records of 104 KiB:
 * bench/scale). Without `keepMetrics` every record is read whole and keeps every metric.
 */
export function loadRecords(dir: string, keepMetrics?: ReadonlySet<string>): LoadedRecord[] {
  const files = recordFiles(dir);
  if (!keepMetrics) {
    const all = files.map((file) => ({ file, record: readReportRecord(path.join(dir, file)) }));
    const shown = new Set(shownOf(all).values());
    for (const r of all) if (!shown.has(r)) r.record.samples = [];
    return all;
  }
  const loaded: LoadedRecord[] = [];
  // recordFiles sorts by folder, then name: each driver folder's files are together.
  for (let i = 0; i < files.length;) {
    const sub = files[i]!.slice(0, files[i]!.indexOf('/'));
    let j = i;
    while (j < files.length && files[j]!.startsWith(`${sub}/`)) j++;
    const names = files.slice(i, j).map((f) => f.slice(sub.length + 1));
    const digests = readDigests(path.join(dir, sub), names, keepMetrics, (file) => [readReportRecord(file)]);
    names.forEach((name, n) => loaded.push({ file: `${sub}/${name}`, record: digests[n]![0]! }));
    i = j;
  }
  for (const r of shownOf(loaded).values()) r.record = readReportRecord(path.join(dir, r.file));
  return loaded;
}

/** Per key, the record its column shows in full. */
function shownOf(records: LoadedRecord[]): Map<string, LoadedRecord> {
  const shown = new Map<string, LoadedRecord>();
  for (const r of records) {
    const key = keyText(r.record.key);
    const held = shown.get(key);
    if (!held || shownBefore(r, held)) shown.set(key, r);
  }
  return shown;
}

function readReportRecord(full: string): BehaviourRecord {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(full, 'utf8'));
  } catch (e) {
    throw invalid(full, `not JSON (${(e as Error).message})`);
  }
  return checkReportRecord(data, full);
}

const hasFacts = (r: LoadedRecord) => Object.keys(r.record.facts).length > 0;
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Whether `a` is shown rather than `b` (of one key): as columnsOf chooses, the newest with facts, else the newest. */
function shownBefore(a: LoadedRecord, b: LoadedRecord): boolean {
  if (hasFacts(a) !== hasFacts(b)) return hasFacts(a);
  return (cmp(a.record.observed.date, b.record.observed.date) || cmp(a.record.id, b.record.id) || cmp(a.file, b.file)) > 0;
}

/**
 * A record checked as record and diff check it (results/record/check.ts), and its samples, which
 * only the report's memory charts read.
 */
export function checkReportRecord(data: unknown, file: string): BehaviourRecord {
  const r = checkRecord(data, file);
  r.samples.forEach((s: unknown, i) => {
    if (
      !isObject(s) ||
      typeof s.probe !== 'string' ||
      typeof s.phase !== 'string' ||
      !isObject(s.readings) ||
      (s.attrs !== undefined && !isObject(s.attrs))
    ) {
      throw invalid(file, `samples[${i}]: expected {probe, phase, attrs?, readings}`);
    }
  });
  return r;
}
