/**
 * Helpers for a probe's summary lines (ProbeSpec.summary, ./spec-types.ts; each probe's in
 * ./specs/): pick a cell's metrics and facts from its records and write their values as the
 * console does.
 */
import { formatValue } from '../core/units.ts';
import type { MetricRecord, ProbeRecord, Scalar } from './protocol.ts';

/** A line under "what the driver does": a label and its text. */
export type SummaryLine = [label: string, text: string];

/** The metrics of a name whose attrs have the given values. */
export function metricsOf(records: readonly ProbeRecord[], name: string, where: Record<string, Scalar> = {}): MetricRecord[] {
  return records.filter(
    (record): record is MetricRecord =>
      record.type === 'metric' && record.name === name && Object.entries(where).every(([k, value]) => record.attrs?.[k] === value),
  );
}

export function fmt(metric: MetricRecord | undefined): string {
  return metric ? formatValue(metric.value, metric.unit) : '—';
}

export function signed(metric: MetricRecord | undefined): string {
  return metric && metric.value !== null && metric.value >= 0 ? `+${fmt(metric)}` : fmt(metric);
}

export function num(value: Scalar | undefined): number {
  return typeof value === 'number' ? value : -Infinity;
}

/** The largest value of a numeric attribute among records. */
export function largest(ms: MetricRecord[], attr: string): number | undefined {
  const sizes = ms.map((metric) => metric.attrs?.[attr]).filter((value): value is number => typeof value === 'number');
  return sizes.length ? Math.max(...sizes) : undefined;
}

export function factEvidence(records: readonly ProbeRecord[], name: string): Record<string, unknown> | undefined {
  const fact = records.find((record) => record.type === 'fact' && record.name === name);
  return fact && fact.type === 'fact' ? fact.evidence : undefined;
}

export function mean(values: (number | null)[]): number | null {
  const numbers = values.filter((value): value is number => value !== null);
  return numbers.length ? numbers.reduce((sum, value) => sum + value, 0) / numbers.length : null;
}

/**
 * A capability probe's lines (issue 36): the features whose attribute and calls disagree, each
 * with the call and its error, then how many work. Where all agree one line says so.
 */
export function capabilitySummary(records: readonly ProbeRecord[]): SummaryLine[] {
  const facts = records.filter((record) => record.type === 'fact' && typeof record.value === 'string');
  if (!facts.length) return [];
  const lines: SummaryLine[] = [];
  for (const fact of facts) {
    if (fact.type !== 'fact' || (fact.value !== 'claimed-but-fails' && fact.value !== 'works-unclaimed')) continue;
    const evidence = fact.evidence ?? {};
    lines.push([fact.name, `${fact.value}: ${String(evidence.call)} returned ${String(evidence.result)}`]);
  }
  const working = facts.filter((fact) => fact.type === 'fact' && (fact.value === 'works' || fact.value === 'works-unclaimed'));
  lines.push(['features', `${working.length} of ${facts.length} work${lines.length ? '' : ', each as its attribute says'}`]);
  return lines;
}
