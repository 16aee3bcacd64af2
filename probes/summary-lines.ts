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
    (r): r is MetricRecord => r.type === 'metric' && r.name === name && Object.entries(where).every(([k, v]) => r.attrs?.[k] === v),
  );
}

export function fmt(m: MetricRecord | undefined): string {
  return m ? formatValue(m.value, m.unit) : '—';
}

export function signed(m: MetricRecord | undefined): string {
  return m && m.value !== null && m.value >= 0 ? `+${fmt(m)}` : fmt(m);
}

export function num(v: Scalar | undefined): number {
  return typeof v === 'number' ? v : -Infinity;
}

/** The largest value of a numeric attribute among records. */
export function largest(ms: MetricRecord[], attr: string): number | undefined {
  const sizes = ms.map((m) => m.attrs?.[attr]).filter((v): v is number => typeof v === 'number');
  return sizes.length ? Math.max(...sizes) : undefined;
}

export function factEvidence(records: readonly ProbeRecord[], name: string): Record<string, unknown> | undefined {
  const r = records.find((x) => x.type === 'fact' && x.name === name);
  return r && r.type === 'fact' ? r.evidence : undefined;
}

export function mean(values: (number | null)[]): number | null {
  const v = values.filter((x): x is number => x !== null);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
}
