/**
 * How both outputs (BEHAVIOUR.md and behaviour.html) write a fact's or a key metric's value. The
 * page's script (report/page/) imports this module too, so it imports nothing but core/units.ts:
 * whatever it imports is bundled into the page.
 */
import { formatValue, type Unit } from '../core/units.ts';
import type { Scalar } from '../probes/protocol.ts';

/** A value as the tables write it. */
export function valueText(value: Scalar): string {
  return value === null ? 'null' : String(value);
}

/** The unit a fact's name ends in (memory_total_bytes, tdr_delay_s): facts declare none, their names say it. */
const FACT_UNITS: [suffix: string, unit: Unit][] = [
  ['_bytes', 'bytes'],
  ['_ms', 'ms'],
  ['_us', 'us'],
  ['_s', 's'],
  ['_gbps', 'GB/s'],
];

/**
 * A fact's value as both outputs write it: a number of a fact named for its unit as the console
 * writes it (formatValue: "140 GiB", not 150109880320); anything else as recorded.
 */
export function factValueText(fact: string, value: Scalar): string {
  const unit = typeof value === 'number' ? FACT_UNITS.find(([suffix]) => fact.endsWith(suffix))?.[1] : undefined;
  return unit ? formatValue(value as number, unit) : valueText(value);
}

/**
 * A key metric's value as both outputs write it: formatValue's text, or, for a negative value of
 * a metric whose sign turns its meaning (KeyMetric.negative: allocated past free VRAM), what it
 * means ("none: stopped 135 GiB under free VRAM"), not a negative amount past.
 */
export function keyMetricText(spec: { negative?: string | undefined }, value: number | null, unit: string): string {
  return spec.negative && value !== null && value < 0 ? spec.negative.replace('{}', formatValue(-value, unit)) : formatValue(value, unit);
}
