/**
 * Units of metrics, and bounds written with units in the matrix ("50 us", "2 GiB", "12 GB/s").
 * A bound is converted to the unit the catalogue gives the metric; a bound in a unit of another
 * dimension is an error.
 */

export type Unit = 'bytes' | 'ns' | 'us' | 'ms' | 's' | 'GB/s' | 'ratio' | 'percent' | 'count' | 'cycles' | 'MHz';

const dimensions: Record<string, { dimension: string; factor: number }> = {
  // bytes
  B: { dimension: 'bytes', factor: 1 },
  bytes: { dimension: 'bytes', factor: 1 },
  KB: { dimension: 'bytes', factor: 1e3 },
  MB: { dimension: 'bytes', factor: 1e6 },
  GB: { dimension: 'bytes', factor: 1e9 },
  KiB: { dimension: 'bytes', factor: 1024 },
  MiB: { dimension: 'bytes', factor: 1024 ** 2 },
  GiB: { dimension: 'bytes', factor: 1024 ** 3 },
  // time
  ns: { dimension: 'time', factor: 1e-9 },
  us: { dimension: 'time', factor: 1e-6 },
  µs: { dimension: 'time', factor: 1e-6 },
  ms: { dimension: 'time', factor: 1e-3 },
  s: { dimension: 'time', factor: 1 },
  // bandwidth
  'MB/s': { dimension: 'bandwidth', factor: 1e6 },
  'GB/s': { dimension: 'bandwidth', factor: 1e9 },
  'GiB/s': { dimension: 'bandwidth', factor: 1024 ** 3 },
  // dimensionless
  ratio: { dimension: 'ratio', factor: 1 },
  percent: { dimension: 'ratio', factor: 0.01 },
  '%': { dimension: 'ratio', factor: 0.01 },
  count: { dimension: 'count', factor: 1 },
  cycles: { dimension: 'cycles', factor: 1 },
  MHz: { dimension: 'frequency', factor: 1e6 },
};

export const knownUnits = Object.keys(dimensions);

/** Parses "50 us", "2GiB", "0.6" into a number in `unit`; throws a message on a mismatch. */
export function toUnit(value: number | string, unit: Unit): number {
  if (typeof value === 'number') return value;
  const match = /^\s*(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([A-Za-zµ%/]*)\s*$/i.exec(value);
  if (!match) throw new Error(`"${value}" is not a number with an optional unit (e.g. "50 us", "2 GiB")`);
  const amount = Number(match[1]);
  const given = match[2] ?? '';
  if (given === '') return amount;
  const from = dimensions[given];
  const to = dimensions[unit];
  if (!from) throw new Error(`unknown unit "${given}" (known: ${knownUnits.join(', ')})`);
  if (!to || from.dimension !== to.dimension) {
    throw new Error(`"${value}" is in ${from.dimension}, but this metric is measured in ${unit}`);
  }
  return (amount * from.factor) / to.factor;
}

/** A value with its unit, scaled for people ("1.5 GiB", "812 us"). */
export function formatValue(value: number | null, unit: Unit | string): string {
  if (value === null || !Number.isFinite(value)) return '—';
  if (unit === 'bytes') {
    const [name, size] = bytesScale(Math.abs(value));
    return name === 'B' ? `${value} B` : `${round(value / size)} ${name}`;
  }
  if (unit === 'ratio') return round(value);
  if (unit === 'percent') return `${round(value)} %`;
  return `${round(value)} ${unit}`;
}

/** The binary unit that byte counts up to `abs` are written in (GiB from 1 GiB on, ... B under 1 KiB), with its size in bytes. */
export function bytesScale(abs: number): readonly ['GiB' | 'MiB' | 'KiB' | 'B', number] {
  if (abs >= 1024 ** 3) return ['GiB', 1024 ** 3];
  if (abs >= 1024 ** 2) return ['MiB', 1024 ** 2];
  if (abs >= 1024) return ['KiB', 1024];
  return ['B', 1];
}

function round(value: number): string {
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  const text = value.toFixed(digits);
  // Drop trailing zeros of the fraction only ("1.50" -> "1.5", "140" stays "140").
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}
