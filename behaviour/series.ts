/**
 * A metric series in a record: its identity (name and attrs, in any order), where it lies among
 * the record's metrics, and its value and repetitions there. Shared by diff and its
 * explanations; keyed without JSON, since 10,000 records must diff in well under a second.
 */
import type { Scalar } from '../probes/protocol.ts';
import type { RecordedMetric } from './behaviour-record.ts';
import { median } from './noise.ts';

/** A series' identity: name and attrs, whatever the attrs' order (a string of its own, not JSON: 10,000 records must diff in well under a second). */
export function seriesKey(metric: RecordedMetric): string {
  const attrs = metric.attrs;
  if (!attrs) return metric.name;
  const keys = Object.keys(attrs);
  if (keys.length > 1) keys.sort();
  let key = metric.name;
  for (const k of keys) {
    const value = attrs[k];
    key += `\u0000${k}\u0001${typeof value}:${String(value)}`;
  }
  return key;
}

/** Where each series of a record lies: series key -> its positions in the record's metrics. */
export type Shape = Map<string, number[]>;

const shapes = new WeakMap<RecordedMetric[], Shape>();
export function shapeOf(metrics: RecordedMetric[]): Shape {
  let got = shapes.get(metrics);
  if (got) return got;
  got = new Map();
  for (let i = 0; i < metrics.length; i++) {
    const k = seriesKey(metrics[i]!);
    const at = got.get(k);
    if (at) at.push(i);
    else got.set(k, [i]);
  }
  shapes.set(metrics, got);
  return got;
}

function sameAttrs(left: Record<string, Scalar> | undefined, right: Record<string, Scalar> | undefined): boolean {
  if (left === right) return true;
  if (!left || !right) return false;
  let keyBalance = 0;
  for (const k in left) {
    if (left[k] !== right[k]) return false;
    keyBalance++;
  }
  for (const _ in right) keyBalance--;
  return keyBalance === 0;
}

/**
 * Whether two records list the same series in the same order (runs of one cudaprobe: the usual
 * case), so that one's shape serves both: keying every metric of every record is most of the
 * cost of diffing 10,000 of them.
 */
export function aligned(metricsA: RecordedMetric[], metricsB: RecordedMetric[]): boolean {
  if (metricsA.length !== metricsB.length) return false;
  for (let i = 0; i < metricsA.length; i++)
    if (metricsA[i]!.name !== metricsB[i]!.name || !sameAttrs(metricsA[i]!.attrs, metricsB[i]!.attrs)) return false;
  return true;
}

/** The numeric values of a series in a record: its repetitions (a metric's `repeats`, or several entries of it), else its value. */
export function valuesAt(metrics: RecordedMetric[], at: number[]): number[] {
  if (at.length === 1) {
    const metric = metrics[at[0]!]!;
    if (metric.value === null) return [];
    return metric.repeats && metric.repeats.length > 1 ? metric.repeats : [metric.value];
  }
  const out: number[] = [];
  for (const i of at) {
    const value = metrics[i]!.value;
    if (value !== null) out.push(value);
  }
  return out;
}

/** A record's value of a series: its own (the median the probe reported), or the median of its several entries. */
export function valueAt(metrics: RecordedMetric[], at: number[]): number | null {
  if (at.length === 1) return metrics[at[0]!]!.value;
  const values = valuesAt(metrics, at);
  return values.length ? median(values) : null;
}

/** The relative move between two values: |valueA - valueB| / max(|valueA|, |valueB|), 0 when both are 0. */
export function relativeMove(valueA: number, valueB: number): number {
  const scale = Math.max(Math.abs(valueA), Math.abs(valueB));
  return scale === 0 ? 0 : Math.abs(valueA - valueB) / scale;
}

/** A series as people read it: name {attr: value, ...}. */
export function seriesText(name: string, attrs: Record<string, Scalar> | undefined): string {
  const entries = Object.entries(attrs ?? {});
  return entries.length
    ? `${name} {${entries.map(([k, value]) => `${k}: ${typeof value === 'string' ? value : JSON.stringify(value)}`).join(', ')}}`
    : name;
}
