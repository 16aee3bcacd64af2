/**
 * Reads the committed behaviour records for `report`: every driver-<version>/<name>.json under
 * the records folder (where recordPath puts them; the raw run folders beside them, one level
 * deeper, are not records and are left alone). Each file is checked for what the report reads,
 * by hand rather than with a schema library: 10,000 records must load in about the time
 * JSON.parse takes (bench/report), and a deep schema parse costs several times that.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CudamatrixError } from '../../core/errors.ts';
import { RECORD_SCHEMA, type BehaviourRecord } from '../record/format.ts';

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
    throw new CudamatrixError('USAGE', `records folder ${dir} does not exist or is not a folder; pass the folder that holds driver-<version>/*.json (--records-dir, default results/records)`);
  }
  const files: string[] = [];
  for (const sub of top.filter((n) => n.startsWith('driver-')).sort()) {
    const at = path.join(dir, sub);
    if (!statSync(at).isDirectory()) continue;
    for (const name of readdirSync(at).filter((n) => n.endsWith('.json')).sort()) {
      if (statSync(path.join(at, name)).isFile()) files.push(`${sub}/${name}`);
    }
  }
  return files;
}

/** Every record under `dir`, read and checked; the first bad file stops it with its name and what is wrong. */
export function loadRecords(dir: string): LoadedRecord[] {
  return recordFiles(dir).map((file) => {
    const full = path.join(dir, file);
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(full, 'utf8'));
    } catch (e) {
      throw invalid(full, `is not JSON (${(e as Error).message})`);
    }
    return { file, record: checkRecord(data, full) };
  });
}

function invalid(file: string, what: string): CudamatrixError {
  return new CudamatrixError(
    'RECORD_INVALID',
    `behaviour record ${file} ${what}; records are written by \`cudamatrix record\` (fix or remove the file, or write it again from its run's events.jsonl)`,
  );
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

/** Checks the parts of a record that the report reads; returns it typed, or throws naming the file and the place. */
export function checkRecord(data: unknown, file: string): BehaviourRecord {
  if (!isObject(data)) throw invalid(file, 'is not a JSON object');
  if (typeof data.recordSchema !== 'number') throw invalid(file, 'has no recordSchema (is this a behaviour record? run folders belong one level deeper)');
  if (data.recordSchema > RECORD_SCHEMA) {
    throw new CudamatrixError('RECORD_INVALID', `behaviour record ${file} has record schema ${data.recordSchema}; this cudamatrix reads schema ${RECORD_SCHEMA} and older: upgrade cudamatrix to read it`);
  }
  if (typeof data.id !== 'string' || !data.id) throw invalid(file, 'has no id');
  const key = data.key;
  if (!isObject(key)) throw invalid(file, 'has no key');
  for (const k of ['environment', 'gpu', 'driver', 'os'] as const) if (typeof key[k] !== 'string') throw invalid(file, `key.${k}: expected a string, got ${JSON.stringify(key[k])}`);
  for (const k of ['osBuild', 'container'] as const) if (key[k] !== null && typeof key[k] !== 'string') throw invalid(file, `key.${k}: expected a string or null, got ${JSON.stringify(key[k])}`);
  if (!isObject(data.observed) || typeof data.observed.date !== 'string') throw invalid(file, 'observed.date: expected the date of the run (ISO 8601)');
  if (!isObject(data.sysinfo)) throw invalid(file, 'sysinfo: expected an object');
  if (!isObject(data.facts)) throw invalid(file, 'facts: expected an object of probe.fact -> {value}');
  for (const [name, f] of Object.entries(data.facts)) {
    if (!isObject(f) || !isScalar(f.value)) throw invalid(file, `facts["${name}"]: expected {value: a string, number, boolean or null}`);
  }
  if (!Array.isArray(data.metrics)) throw invalid(file, 'metrics: expected an array');
  data.metrics.forEach((m: unknown, i) => {
    if (!isObject(m) || typeof m.name !== 'string' || (m.value !== null && typeof m.value !== 'number') || typeof m.unit !== 'string' || (m.attrs !== undefined && !isObject(m.attrs))) {
      throw invalid(file, `metrics[${i}]: expected {name, value: a number or null, unit, attrs?}`);
    }
  });
  if (!Array.isArray(data.samples)) throw invalid(file, 'samples: expected an array');
  data.samples.forEach((s: unknown, i) => {
    if (!isObject(s) || typeof s.probe !== 'string' || typeof s.phase !== 'string' || !isObject(s.readings) || (s.attrs !== undefined && !isObject(s.attrs))) {
      throw invalid(file, `samples[${i}]: expected {probe, phase, attrs?, readings}`);
    }
  });
  return data as unknown as BehaviourRecord;
}
