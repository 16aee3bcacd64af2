/** Checks a behaviour record read from a file: what record, report and diff rely on. */
import { CudamatrixError } from '../core/errors.ts';
import { RECORD_SCHEMA, type BehaviourRecord } from './behaviour-record.ts';

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

export function invalid(file: string, what: string): CudamatrixError {
  return new CudamatrixError(
    'RECORD_INVALID',
    `behaviour record ${file}: ${what}; records are written by \`cudamatrix record\` (write it again from its run's events.jsonl)`,
  );
}

/**
 * Checks what record, report and diff read of a record; returns it typed, or throws naming the
 * file and the place. A newer record schema is refused with what to do.
 */
export function checkRecord(data: unknown, file: string): BehaviourRecord {
  if (!isObject(data)) throw invalid(file, 'not a JSON object');
  if (typeof data.recordSchema !== 'number') throw invalid(file, 'no recordSchema (is this a behaviour record?)');
  if (data.recordSchema > RECORD_SCHEMA) {
    throw new CudamatrixError(
      'RECORD_INVALID',
      `behaviour record ${file} has record schema ${data.recordSchema}; this cudamatrix reads schema ${RECORD_SCHEMA} and older: upgrade cudamatrix to read it`,
    );
  }
  if (typeof data.id !== 'string' || !data.id) throw invalid(file, 'no id');
  const key = data.key;
  if (!isObject(key)) throw invalid(file, 'no key');
  for (const k of ['environment', 'gpu', 'driver', 'os'] as const)
    if (typeof key[k] !== 'string') throw invalid(file, `key.${k}: expected a string, got ${JSON.stringify(key[k])}`);
  for (const k of ['osBuild', 'container'] as const)
    if (key[k] !== null && typeof key[k] !== 'string')
      throw invalid(file, `key.${k}: expected a string or null, got ${JSON.stringify(key[k])}`);
  if (!isObject(data.observed) || typeof data.observed.date !== 'string' || typeof data.observed.runId !== 'string')
    throw invalid(file, 'observed: expected {date, runId, target, ...}');
  if (!isObject(data.sysinfo)) throw invalid(file, 'sysinfo: expected an object');
  if (!isObject(data.facts)) throw invalid(file, 'facts: expected an object of probe.fact -> {value}');
  for (const [name, f] of Object.entries(data.facts))
    if (!isObject(f) || !isScalar(f.value)) throw invalid(file, `facts["${name}"]: expected {value: a string, number, boolean or null}`);
  if (!Array.isArray(data.metrics)) throw invalid(file, 'metrics: expected an array');
  data.metrics.forEach((m: unknown, i) => {
    if (
      !isObject(m) ||
      typeof m.name !== 'string' ||
      (m.value !== null && typeof m.value !== 'number') ||
      typeof m.unit !== 'string' ||
      (m.attrs !== undefined && !isObject(m.attrs))
    ) {
      throw invalid(file, `metrics[${i}]: expected {name, value: a number or null, unit, attrs?}`);
    }
    if (m.repeats !== undefined && (!Array.isArray(m.repeats) || m.repeats.some((v) => typeof v !== 'number' || !Number.isFinite(v))))
      throw invalid(file, `metrics[${i}].repeats: expected an array of numbers (the repetitions behind the value)`);
  });
  if (
    data.shared !== undefined &&
    (!Array.isArray(data.shared) ||
      data.shared.some(
        (c: unknown) => !isObject(c) || typeof c.probe !== 'string' || typeof c.processes !== 'number' || !Array.isArray(c.pids),
      ))
  )
    throw invalid(
      file,
      'shared: expected an array of {probe, processes, usedBytes, pids} (cells during which another process used the GPU)',
    );
  for (const k of ['samples', 'cells', 'verdicts'] as const) if (!Array.isArray(data[k])) throw invalid(file, `${k}: expected an array`);
  return data as unknown as BehaviourRecord;
}
