/**
 * The report's key metrics (each probe's ProbeSpec.keyMetrics, in the catalogue's order): which
 * metric of a record each row picks, what the records index keeps of a record's metrics, and a
 * record as the report's verdicts compare it (its key metrics' series only).
 */
import { catalogue, replacesKeyMetric, type KeyMetric } from '../probes/catalogue.ts';
import type { Scalar } from '../probes/protocol.ts';
import type { MetricComparison } from '../behaviour/diff.ts';
import type { BehaviourRecord, RecordedMetric } from '../behaviour/behaviour-record.ts';
import { packedMetricsOf, type KeptMetrics } from '../behaviour/records-index.ts';

/** A key metric (the catalogue's), named probe.metric as records name metrics. */
export interface MetricRowSpec extends KeyMetric {
  /** probe.metric */
  metric: string;
}

/** The numbers behind the claims, as the catalogue's probes declare them (ProbeSpec.keyMetrics), in its order. */
export const KEY_METRICS: MetricRowSpec[] = catalogue.flatMap((probe) =>
  (probe.keyMetrics ?? []).map((k) => ({ ...k, metric: `${probe.name}.${k.metric}` })),
);

/** The metric a spec picks from a record, or undefined. */
export function pickMetric(record: BehaviourRecord, spec: MetricRowSpec): RecordedMetric | undefined {
  return pickMetrics(record.metrics, [spec])[0];
}

const KEY_METRIC_NAMES = new Set(KEY_METRICS.map((k) => k.metric));

/**
 * What the records index keeps of each record's metrics: every series of a key metric's name
 * (the rows pick from them; the drift section compares them all, e.g. every transfer size).
 */
export const KEPT_KEY_METRICS: KeptMetrics = {
  names: [...KEY_METRIC_NAMES],
  pick: (metrics) => metrics.filter((metric) => KEY_METRIC_NAMES.has(metric.name)),
};

/**
 * The metric each spec picks from a record, in one pass over its metrics (thousands of records
 * of ~170 metrics each: one pass per spec would be a dozen).
 */
export function pickMetrics(
  metrics: readonly RecordedMetric[],
  specs: readonly MetricRowSpec[],
  byName = specsByName(specs),
): (RecordedMetric | undefined)[] {
  const picked: (RecordedMetric | undefined)[] = new Array(specs.length);
  for (const metric of metrics) {
    const candidates = byName.get(metric.name);
    if (!candidates) continue;
    for (const { i, where } of candidates) {
      // matchesKeyMetric, with the spec's attributes listed once (it runs for every metric of every record).
      if (!where.every(([attribute, value]) => metric.attrs?.[attribute] === value)) continue;
      const best = picked[i];
      if (!best || replacesKeyMetric(metric, best, specs[i]!)) picked[i] = metric;
    }
  }
  return picked;
}

/** Per metric name, the specs of that name: their place and the attributes they require. */
export function specsByName(specs: readonly MetricRowSpec[]): Map<string, { i: number; where: [string, Scalar][] }[]> {
  const byName = new Map<string, { i: number; where: [string, Scalar][] }[]>();
  specs.forEach((spec, i) => byName.set(spec.metric, [...(byName.get(spec.metric) ?? []), { i, where: Object.entries(spec.where ?? {}) }]));
  return byName;
}

/** Records as the verdicts compare them, made once per record. */
const keyMetricsOf = new WeakMap<BehaviourRecord, BehaviourRecord>();

/**
 * A record as the report's verdicts (drift, changed between drivers) compare it: with the key
 * metrics' series only (KEPT_KEY_METRICS), as the records index keeps every record but the shown
 * ones. So the verdicts are the same whether the records were read whole or through the index,
 * and cost ~40 series a record, not ~170 (bench/report: 10,000 records).
 */
export function withKeyMetrics(record: BehaviourRecord): BehaviourRecord {
  // Read through the index: its metrics are already the kept ones.
  if (packedMetricsOf(record)) return record;
  let got = keyMetricsOf.get(record);
  if (!got) keyMetricsOf.set(record, (got = { ...record, metrics: KEPT_KEY_METRICS.pick(record.metrics) }));
  return got;
}

/** Whether a compared series is the metric a key-metric row picked (the same name and attrs). */
export function isSeries(comparison: MetricComparison, metric: RecordedMetric): boolean {
  const comparedAttrs = comparison.attrs;
  const metricAttrs = metric.attrs ?? {};
  return (
    comparison.name === metric.name &&
    Object.keys(comparedAttrs).length === Object.keys(metricAttrs).length &&
    Object.keys(comparedAttrs).every((k) => comparedAttrs[k] === metricAttrs[k])
  );
}
