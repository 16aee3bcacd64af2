/** Checks a behaviour record read from a file: what record, report and diff rely on. */
import { CudamatrixError } from '../core/errors.ts';
import { RECORD_SCHEMA, type BehaviourRecord } from './behaviour-record.ts';

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isScalar = (value: unknown) => value === null || ['string', 'number', 'boolean'].includes(typeof value);

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
  for (const [name, fact] of Object.entries(data.facts))
    if (!isObject(fact) || !isScalar(fact.value))
      throw invalid(file, `facts["${name}"]: expected {value: a string, number, boolean or null}`);
  if (!Array.isArray(data.metrics)) throw invalid(file, 'metrics: expected an array');
  data.metrics.forEach((metric: unknown, i) => {
    if (
      !isObject(metric) ||
      typeof metric.name !== 'string' ||
      (metric.value !== null && typeof metric.value !== 'number') ||
      typeof metric.unit !== 'string' ||
      (metric.attrs !== undefined && !isObject(metric.attrs))
    ) {
      throw invalid(file, `metrics[${i}]: expected {name, value: a number or null, unit, attrs?}`);
    }
    if (
      metric.repeats !== undefined &&
      (!Array.isArray(metric.repeats) || metric.repeats.some((repeat) => typeof repeat !== 'number' || !Number.isFinite(repeat)))
    )
      throw invalid(file, `metrics[${i}].repeats: expected an array of numbers (the repetitions behind the value)`);
  });
  if (
    data.shared !== undefined &&
    (!Array.isArray(data.shared) ||
      data.shared.some(
        (cell: unknown) =>
          !isObject(cell) || typeof cell.probe !== 'string' || typeof cell.processes !== 'number' || !Array.isArray(cell.pids),
      ))
  )
    throw invalid(
      file,
      'shared: expected an array of {probe, processes, usedBytes, pids} (cells during which another process used the GPU)',
    );
  for (const k of ['samples', 'cells', 'verdicts'] as const) if (!Array.isArray(data[k])) throw invalid(file, `${k}: expected an array`);
  return data as unknown as BehaviourRecord;
}
