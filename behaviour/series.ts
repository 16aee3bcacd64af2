/**
 * A metric series in a record: its identity (name and attrs, in any order), where it lies among
 * the record's metrics, and its value and repetitions there. Shared by diff and its
 * explanations; keyed without JSON, since 10,000 records must diff in well under a second.
 */
import type { Scalar } from '../probes/protocol.ts';
import type { RecordedMetric } from './behaviour-record.ts';
import { median } from './noise.ts';

/** A series' identity: name and attrs, whatever the attrs' order (a string of its own, not JSON: 10,000 records must diff in well under a second). */
export function seriesKey(m: RecordedMetric): string {
  const attrs = m.attrs;
  if (!attrs) return m.name;
  const keys = Object.keys(attrs);
  if (keys.length > 1) keys.sort();
  let s = m.name;
  for (const k of keys) {
    const v = attrs[k];
    s += `\u0000${k}\u0001${typeof v}:${String(v)}`;
  }
  return s;
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

function sameAttrs(p: Record<string, Scalar> | undefined, q: Record<string, Scalar> | undefined): boolean {
  if (p === q) return true;
  if (!p || !q) return false;
  let n = 0;
  for (const k in p) {
    if (p[k] !== q[k]) return false;
    n++;
  }
  for (const _ in q) n--;
  return n === 0;
}

/**
 * Whether two records list the same series in the same order (runs of one cudaprobe: the usual
 * case), so that one's shape serves both: keying every metric of every record is most of the
 * cost of diffing 10,000 of them.
 */
export function aligned(x: RecordedMetric[], y: RecordedMetric[]): boolean {
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i]!.name !== y[i]!.name || !sameAttrs(x[i]!.attrs, y[i]!.attrs)) return false;
  return true;
}

/** The numeric values of a series in a record: its repetitions (a metric's `repeats`, or several entries of it), else its value. */
export function valuesAt(metrics: RecordedMetric[], at: number[]): number[] {
  if (at.length === 1) {
    const m = metrics[at[0]!]!;
    if (m.value === null) return [];
    return m.repeats && m.repeats.length > 1 ? m.repeats : [m.value];
  }
  const out: number[] = [];
  for (const i of at) {
    const v = metrics[i]!.value;
    if (v !== null) out.push(v);
  }
  return out;
}

/** A record's value of a series: its own (the median the probe reported), or the median of its several entries. */
export function valueAt(metrics: RecordedMetric[], at: number[]): number | null {
  if (at.length === 1) return metrics[at[0]!]!.value;
  const v = valuesAt(metrics, at);
  return v.length ? median(v) : null;
}

/** The relative move between two values: |a - b| / max(|a|, |b|), 0 when both are 0. */
export function relativeMove(a: number, b: number): number {
  const scale = Math.max(Math.abs(a), Math.abs(b));
  return scale === 0 ? 0 : Math.abs(a - b) / scale;
}

/** A series as people read it: name {attr: value, ...}. */
export function seriesText(name: string, attrs: Record<string, Scalar> | undefined): string {
  const entries = Object.entries(attrs ?? {});
  return entries.length
    ? `${name} {${entries.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')}}`
    : name;
}
