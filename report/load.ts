/**
 * Reads the committed behaviour records for `report`: every driver-<version>/<name>.json under
 * the records folder (where recordPath puts them; the raw run folders beside them, one level
 * deeper, are not records and are left alone). Each file is checked as record and diff check
 * it (behaviour/validate-record.ts, by hand rather than with a schema library: 10,000 records must
 * load in about the time JSON.parse takes, bench/report), and its memory samples.
 */
import { readdirSync, readFileSync, statSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { CudamatrixError } from '../core/errors.ts';
import { checkRecord, invalid, isObject } from '../behaviour/validate-record.ts';
import type { BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { readDigests, type KeptMetrics } from '../behaviour/records-index.ts';
import { recordsShownInFull, type LoadedRecord } from './behaviour-table.ts';

export type { LoadedRecord } from './behaviour-table.ts';

/** The record files under `dir`, sorted (the order everything after is built from). */
export function recordFiles(dir: string): string[] {
  let top: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a folder');
    top = readdirSync(dir);
  } catch {
    throw new CudamatrixError(
      'USAGE',
      `records folder ${dir} does not exist or is not a folder; pass the folder that holds driver-<version>/*.json (--records-dir, default records)`,
    );
  }
  const drivers = top.filter((name) => name.startsWith('driver-')).sort();
  // Another folder given for the records folder would give an empty report over the committed
  // one. An empty folder (hidden files and a README aside) is a project with no records yet.
  if (drivers.length === 0 && top.some((name) => name.endsWith('.json'))) {
    throw new CudamatrixError(
      'USAGE',
      `${dir} holds record files itself, not driver-<version>/ folders: pass the records folder above it (--records-dir ${path.dirname(path.resolve(dir))}); nothing was written`,
    );
  }
  const others = top.filter((name) => !name.startsWith('.') && !/^readme/i.test(name)).sort();
  if (drivers.length === 0 && others.length > 0) {
    throw new CudamatrixError(
      'USAGE',
      `${dir} is not a records folder: it holds no driver-<version>/ folders, but ${others.length} other entr${others.length === 1 ? 'y' : 'ies'} (${others.slice(0, 3).join(', ')}${others.length > 3 ? ', …' : ''}); pass the folder that holds driver-<version>/*.json (--records-dir, default records); nothing was written`,
    );
  }
  const files: string[] = [];
  for (const sub of drivers) {
    const at = path.join(dir, sub);
    if (!statSync(at).isDirectory()) continue;
    // A link to a record is followed (stat), as readFileSync would; other entries are told apart without a stat each.
    const isFile = (e: Dirent) =>
      e.isFile() || (e.isSymbolicLink() && statSync(path.join(at, e.name), { throwIfNoEntry: false })?.isFile());
    const names = readdirSync(at, { withFileTypes: true })
      .filter((e) => e.name.endsWith('.json') && isFile(e))
      .map((e) => e.name);
    for (const name of names.sort()) files.push(`${sub}/${name}`);
  }
  return files;
}

/**
 * Every record under `dir`, read and checked; the first bad file stops it with its name and what
 * is wrong. Only the records each column shows in full (recordsShownInFull: its newest with
 * facts and the newest that measured each probe) keep their memory samples, every metric and its facts' evidence; the others keep what
 * the tables read of them (key, facts, sysinfo, cells, verdicts, and of the metrics those named
 * in `keepMetrics`, the report's key metrics). Those come from the records index
 * (behaviour/records-index.ts) where it is current, so only the shown records are read whole:
 * time and memory go with the columns, not the records (10,000 records of 104 KiB:
 * bench/scale). Without `keepMetrics` every record is read whole and keeps every metric.
 */
export function loadRecords(dir: string, keepMetrics?: KeptMetrics): LoadedRecord[] {
  const files = recordFiles(dir);
  if (!keepMetrics) {
    const all = files.map((file) => ({ file, record: readReportRecord(path.join(dir, file)) }));
    const shown = recordsShownInFull(all);
    for (const loadedRecord of all) if (!shown.has(loadedRecord)) loadedRecord.record.samples = [];
    return all;
  }
  const loaded: LoadedRecord[] = [];
  // recordFiles sorts by folder, then name: each driver folder's files are together.
  for (let i = 0; i < files.length;) {
    const sub = files[i]!.slice(0, files[i]!.indexOf('/'));
    let j = i;
    while (j < files.length && files[j]!.startsWith(`${sub}/`)) j++;
    const names = files.slice(i, j).map((file) => file.slice(sub.length + 1));
    const digests = readDigests(path.join(dir, sub), names, keepMetrics, (file) => [readReportRecord(file)]);
    names.forEach((name, index) => loaded.push({ file: `${sub}/${name}`, record: digests[index]![0]! }));
    i = j;
  }
  for (const loadedRecord of recordsShownInFull(loaded)) loadedRecord.record = readReportRecord(path.join(dir, loadedRecord.file));
  return loaded;
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

/**
 * A record checked as record and diff check it (behaviour/validate-record.ts), and its samples, which
 * only the report's memory charts read.
 */
export function checkReportRecord(data: unknown, file: string): BehaviourRecord {
  const record = checkRecord(data, file);
  record.samples.forEach((sample: unknown, i) => {
    if (
      !isObject(sample) ||
      typeof sample.probe !== 'string' ||
      typeof sample.phase !== 'string' ||
      !isObject(sample.readings) ||
      (sample.attrs !== undefined && !isObject(sample.attrs))
    ) {
      throw invalid(file, `samples[${i}]: expected {probe, phase, attrs?, readings}`);
    }
  });
  return record;
}
