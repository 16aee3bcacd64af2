/**
 * The evidence behind a verdict, as data (for the JSON summary) and as text for people (the
 * console and the JUnit <failure> body): for a metric, every sample that matched the
 * expectation, within and outside its bounds; for a fact, its value, the probe's reason and the
 * probe's own evidence, with the memory probes' readings written as a line.
 */
import { formatValue } from '../core/units.ts';
import type { Scalar } from '../probes/protocol.ts';

/** One metric record that matched an expectation's name and `where`. */
export interface SampleEvidence {
  attrs: Record<string, Scalar>;
  value: number | null;
  unit: string;
  /** Why the probe gave no value (when value is null). */
  reason?: string;
}

export interface MetricEvidence {
  kind: 'metric';
  /** The bounds in the metric's catalogue unit; null where the expectation sets none. */
  bounds: { low: number | null; high: number | null; unit: string };
  within: SampleEvidence[];
  /** Outside the bounds, or without a value: each of these fails the expectation. */
  outside: SampleEvidence[];
}

export interface FactEvidence {
  kind: 'fact';
  value: Scalar;
  /** Why the probe reported null. */
  reason?: string;
  /** Where a sysinfo value came from ("NVML", "/proc/version"). */
  source?: string;
  /** The probe's evidence object, as it reported it (raw numbers and the deciding source). */
  evidence?: Record<string, unknown>;
  /** The evidence as a line for people (see describeFactEvidence). */
  summary?: string;
}

export type VerdictEvidence = MetricEvidence | FactEvidence;

/**
 * Short names of the memory probes' readings (probes/catalogue.ts sampleReadings gives the long
 * ones). A test checks that every reading has one.
 */
export const readingLabels: Record<string, string> = {
  nvml_process_used_bytes: 'NVML process memory',
  nvml_device_used_bytes: 'NVML device memory',
  subject_cu_used_bytes: 'cuMemGetInfo used',
  pdh_process_dedicated_bytes: 'PDH process dedicated',
  pdh_process_shared_bytes: 'PDH process shared',
  pdh_adapter_dedicated_bytes: 'PDH adapter dedicated',
  pdh_adapter_shared_bytes: 'PDH adapter shared',
  dxgi_local_bytes: 'DXGI local',
  dxgi_nonlocal_bytes: 'DXGI non-local',
  subject_rss_bytes: 'resident set',
  subject_private_bytes: 'private memory',
  system_available_bytes: 'system available memory',
};

/** Units read off an attribute's or evidence key's suffix: size_bytes, wait_s, target_us. */
const suffixUnits: [suffix: string, unit: string][] = [
  ['_bytes', 'bytes'],
  ['_percent', 'percent'],
  ['_gbps', 'GB/s'],
  ['_us', 'us'],
  ['_ms', 'ms'],
  ['_s', 's'],
];

/** "size_bytes", 1048576 -> "size 1 MiB"; "direction", "h2d" -> "direction h2d". */
export function attrText(key: string, value: unknown): string {
  if (typeof value === 'number') {
    const hit = suffixUnits.find(([suffix]) => key.endsWith(suffix) && key.length > suffix.length);
    if (hit) return `${key.slice(0, -hit[0].length)} ${formatValue(value, hit[1])}`;
  }
  return `${key} ${typeof value === 'string' ? value : JSON.stringify(value)}`;
}

export function attrsText(attrs: Record<string, unknown>, keys: string[] = Object.keys(attrs)): string {
  return keys
    .filter((k) => k in attrs)
    .map((k) => attrText(k, attrs[k]))
    .join(', ');
}

/** A sample's value: "36.7 GB/s", or "not measured (why)". */
export function sampleValueText(sample: SampleEvidence): string {
  return sample.value === null ? `not measured${sample.reason ? ` (${sample.reason})` : ''}` : formatValue(sample.value, sample.unit);
}

/**
 * The attributes that tell matching samples apart (those that differ among them, in the order
 * the first sample has them): "size" for the bandwidth samples of one direction and memory.
 */
export function varyingAttrs(samples: SampleEvidence[]): string[] {
  const keys = [...new Set(samples.flatMap((sample) => Object.keys(sample.attrs)))];
  return keys.filter((k) => new Set(samples.map((sample) => JSON.stringify(sample.attrs[k] ?? null))).size > 1);
}

/** "36.7 GB/s at size 1 MiB": a sample's value and the attributes that set it apart. */
export function sampleText(sample: SampleEvidence, keys: string[]): string {
  const at = attrsText(sample.attrs, keys);
  return `${sampleValueText(sample)}${at ? ` at ${at}` : ''}`;
}

/** "53.6 GB/s to 55.4 GB/s": the range of the samples' values (one value when they agree). */
export function rangeText(samples: SampleEvidence[]): string {
  const values = samples.map((sample) => sample.value).filter((value): value is number => value !== null);
  if (!values.length) return '—';
  const unit = samples[0]!.unit;
  const [low, high] = [formatValue(Math.min(...values), unit), formatValue(Math.max(...values), unit)];
  return low === high ? low : `${low} to ${high}`;
}

/**
 * The probe's evidence for a fact as one line. The memory probes (probes/cudaprobe/judge.cpp
 * growthEvidence) report the size allocated, the growth of each reading they could take from
 * baseline to after-touch, and the deciding source; those become
 * "NVML process memory +0 B for 4 GiB (the deciding source); NVML device memory +8 MiB, ...".
 * Other evidence is written key by key, with units read off the keys' suffixes.
 */
export function describeFactEvidence(evidence: Record<string, unknown>): string {
  const source = evidence.source;
  const size = evidence.size_bytes;
  const growth = typeof source === 'string' && source in readingLabels && typeof size === 'number';
  const parts: string[] = [];
  let lead = '';
  for (const [key, value] of Object.entries(evidence)) {
    if (growth && (key === 'source' || key === 'size_bytes')) continue;
    if (growth && key in readingLabels && typeof value === 'number') {
      const text = `${readingLabels[key]} ${signed(value)}`;
      if (key === source) lead = `${text} for ${formatValue(size, 'bytes')} (the deciding source)`;
      else parts.push(text);
    } else {
      parts.push(attrText(key, value));
    }
  }
  // A deciding source the probe could not read has no growth: still say which one it was.
  if (growth && !lead) lead = `deciding source ${readingLabels[source]} (no reading) for ${formatValue(size, 'bytes')}`;
  return [lead, parts.join(', ')].filter(Boolean).join('; ');
}

function signed(bytes: number): string {
  return `${bytes >= 0 ? '+' : ''}${formatValue(bytes, 'bytes')}`;
}
