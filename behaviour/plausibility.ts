/**
 * Numbers that cannot be true: the bounds a behaviour record's values must keep, from physics
 * (the PCIe specification's rates) and from the record's own sysinfo (the device's and the
 * host's total memory). `record` refuses a record that breaks one (RECORD_IMPLAUSIBLE), so that a
 * submitted file with a typo, an edit or a broken timer never reaches records/. Every bound is in
 * BOUNDS below with its source; docs/records.md ("Numbers that cannot be true") has the table.
 * A bound whose inputs the record lacks (an unknown link, no host total) is not applied: only
 * what the record itself proves impossible is refused.
 */
import { CudamatrixError } from '../core/errors.ts';
import { formatValue } from '../core/units.ts';
import type { Scalar } from '../probes/protocol.ts';
import { keyText, type BehaviourRecord } from './behaviour-record.ts';

/**
 * Per lane and direction, from the PCIe Base Specification: the transfer rate and the share of
 * it that carries data (8b/10b for gen1-2, 128b/130b for gen3-5; gen6 sends 256-byte FLITs of
 * which 242 bytes carry TLPs and DLLPs, as cudaprobe's pcie_theoretical_gbps counts it).
 * Packet headers are not subtracted: the result is a ceiling no payload can reach.
 */
export const PCIE_RATES: Readonly<Record<number, { gigatransfers: number; encoding: string; efficiency: number }>> = {
  1: { gigatransfers: 2.5, encoding: '8b/10b', efficiency: 8 / 10 },
  2: { gigatransfers: 5, encoding: '8b/10b', efficiency: 8 / 10 },
  3: { gigatransfers: 8, encoding: '128b/130b', efficiency: 128 / 130 },
  4: { gigatransfers: 16, encoding: '128b/130b', efficiency: 128 / 130 },
  5: { gigatransfers: 32, encoding: '128b/130b', efficiency: 128 / 130 },
  6: { gigatransfers: 64, encoding: 'FLIT, 242 of 256 bytes', efficiency: 242 / 256 },
};

/** Room above the link's rate for a timer's error on the median copy (the H200's best pinned copies reach 0.88 of it). */
export const PCIE_MARGIN = 0.1;

/** GB/s (10^9 bytes a second, as the probes' GB/s) one direction of a link carries at most. */
export function pcieRate(gen: number, width: number): number | null {
  const rate = PCIE_RATES[gen];
  return rate && width > 0 ? (rate.gigatransfers * rate.efficiency * width) / 8 : null;
}

/** Sample readings of device memory (the others are host memory, or Windows' shared system memory). */
const DEVICE_READINGS = new Set([
  'subject_cu_used_bytes',
  'nvml_device_used_bytes',
  'nvml_process_used_bytes',
  'pdh_process_dedicated_bytes',
  'pdh_adapter_dedicated_bytes',
  'dxgi_local_bytes',
]);

/** A limit from the record, with where it came from; or why there is none. */
type Limit = { max: number; source: string } | { positive: true; source: string } | { none: string };

interface Bound {
  /** What the values are, in a few words. */
  what: string;
  /** The metrics it bounds: probe.metric, with a test of the attrs where only some series are. */
  metrics: { name: string; where?: (attrs: Record<string, Scalar>) => boolean }[];
  /** Whether it bounds the memory probes' sample readings too (of a device source). */
  deviceSamples?: true;
  /** Where the bound comes from (the docs' table). */
  source: string;
  limit: (sysinfo: Record<string, Scalar>) => Limit;
}

const num = (value: Scalar | undefined): number | null => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null);
const deviceSource = (attrs: Record<string, Scalar>) => typeof attrs.source === 'string' && DEVICE_READINGS.has(attrs.source);

/**
 * The link a record's host↔device copies crossed, if the record proves it: its maximum
 * generation and width (the current ones are read at idle, when a link trains down, so they
 * understate it). Only on x86_64: an x86 CPU reaches the GPU over PCIe alone, while on aarch64
 * (Grace's NVLink-C2C, 900 GB/s) and ppc64le (POWER9's NVLink) the copies may bypass PCIe.
 */
function pcieLimit(sysinfo: Record<string, Scalar>): Limit {
  if (sysinfo.arch !== 'x86_64')
    return { none: `host ${String(sysinfo.arch ?? 'of unknown arch')}: its GPU may be on NVLink-C2C or NVLink, not PCIe` };
  const gen = num(sysinfo.pcie_gen_max);
  const width = num(sysinfo.pcie_width_max);
  const rate = gen !== null && width !== null ? pcieRate(gen, width) : null;
  if (rate === null || gen === null) return { none: 'the PCIe link is unknown (no sysinfo pcie_gen_max and pcie_width_max)' };
  const spec = PCIE_RATES[gen]!;
  return {
    max: rate * (1 + PCIE_MARGIN),
    source: `PCIe gen${gen} x${width} (sysinfo pcie_gen_max, pcie_width_max): ${spec.gigatransfers} GT/s × ${width} lanes, ${spec.encoding}, ${formatValue(rate, 'GB/s')} a direction, + ${PCIE_MARGIN * 100} %`,
  };
}

/** The device's memory: the larger of CUDA's and NVML's totals (NVML's counts memory the driver reserves). */
function deviceLimit(sysinfo: Record<string, Scalar>): Limit {
  const totals = (['memory_total_bytes', 'nvml_memory_total_bytes'] as const).flatMap((field) => {
    const total = num(sysinfo[field]);
    return total === null ? [] : [{ field, total }];
  });
  if (totals.length === 0) return { none: 'no device total (sysinfo memory_total_bytes, nvml_memory_total_bytes)' };
  const largest = totals.reduce((best, candidate) => (candidate.total > best.total ? candidate : best));
  return { max: largest.total, source: `the device's total memory (sysinfo ${largest.field})` };
}

function hostLimit(sysinfo: Record<string, Scalar>): Limit {
  const total = num(sysinfo.host_memory_total_bytes);
  return total === null
    ? { none: 'no host total (sysinfo host_memory_total_bytes)' }
    : { max: total, source: "the host's total memory (sysinfo host_memory_total_bytes)" };
}

/** The bounds, one row each: what they bound and where the bound comes from. */
export const BOUNDS: readonly Bound[] = [
  {
    what: 'host↔device copy bandwidth (pinned and pageable)',
    metrics: [{ name: 'transfer-bandwidth.bandwidth_gbps' }],
    source: `the PCIe specification's rate of the record's link (sysinfo pcie_gen_max × pcie_width_max), + ${PCIE_MARGIN * 100} %`,
    limit: pcieLimit,
  },
  {
    what: 'device memory',
    metrics: [
      { name: 'pinned-vram.device_growth_bytes', where: deviceSource },
      { name: 'multi-process-pinned.device_growth_bytes', where: deviceSource },
      { name: 'pinned-ceiling.free_vram_bytes' },
      { name: 'transfer-bandwidth.fill_bytes' },
      { name: 'alloc-ceiling.free_vram_bytes' },
      { name: 'alloc-ceiling.total_vram_bytes' },
      { name: 'alloc-ceiling.largest_single_bytes' },
      { name: 'alloc-ceiling.cumulative_bytes' },
      { name: 'alloc-ceiling.free_after_fill_bytes' },
      { name: 'managed-memory.free_vram_bytes' },
      { name: 'sysmem-fallback.free_vram_bytes' },
      { name: 'sysmem-fallback.total_vram_bytes' },
    ],
    deviceSamples: true,
    source: "the record's sysinfo: the larger of memory_total_bytes (cuDeviceTotalMem) and nvml_memory_total_bytes",
    limit: deviceLimit,
  },
  {
    what: 'pinned host memory',
    metrics: [
      { name: 'pinned-ceiling.ceiling_bytes' },
      { name: 'pinned-vram.host_growth_bytes' },
      { name: 'multi-process-pinned.system_growth_bytes' },
    ],
    source: "the record's sysinfo host_memory_total_bytes, where it has it",
    limit: hostLimit,
  },
  {
    what: 'timing resolution',
    metrics: [{ name: 'event-timing.resolution_us' }, { name: 'event-timing.host_clock_resolution_us' }],
    source: 'a clock steps forward: its smallest step is above zero',
    limit: () => ({ positive: true, source: 'a clock step is above zero' }),
  },
];

/** A value a record cannot hold: the metric (or sample reading), its value, the bound and where the bound came from. */
export interface Implausible {
  what: string;
  value: string;
  bound: string;
  source: string;
}

const attrText = (attrs: Record<string, Scalar> | undefined) =>
  attrs && Object.keys(attrs).length
    ? ` {${Object.keys(attrs)
        .sort()
        .map((name) => `${name}: ${String(attrs[name])}`)
        .join(', ')}}`
    : '';
const bytesText = (value: number) => `${value} bytes (${formatValue(value, 'bytes')})`;
const valueText = (value: number, unit: string) => (unit === 'bytes' ? bytesText(value) : formatValue(value, unit));

/** The values of the record that break a bound (none: the record is plausible). */
export function implausibleValues(record: BehaviourRecord): Implausible[] {
  const found: Implausible[] = [];
  for (const bound of BOUNDS) {
    const limit = bound.limit(record.sysinfo);
    if ('none' in limit) continue;
    const check = (what: string, value: number, unit: string) => {
      if ('positive' in limit) {
        if (value <= 0) found.push({ what, value: valueText(value, unit), bound: 'above 0', source: limit.source });
      } else if (value > limit.max)
        found.push({ what, value: valueText(value, unit), bound: `at most ${valueText(limit.max, unit)}`, source: limit.source });
    };
    for (const metric of record.metrics) {
      if (metric.value === null) continue;
      const rule = bound.metrics.find((candidate) => candidate.name === metric.name);
      if (!rule || (rule.where && !rule.where(metric.attrs ?? {}))) continue;
      check(`${metric.name}${attrText(metric.attrs)}`, metric.value, metric.unit);
    }
    if (bound.deviceSamples)
      for (const sample of record.samples)
        for (const [reading, value] of Object.entries(sample.readings))
          if (value !== null && DEVICE_READINGS.has(reading))
            check(`${sample.probe} sample ${sample.phase}${attrText(sample.attrs)} ${reading}`, value, 'bytes');
  }
  return found;
}

/**
 * Throws RECORD_IMPLAUSIBLE naming every value of these records that cannot be true, each with
 * its bound and the bound's source; `where` names the record (its file or target).
 */
export function refuseImplausible(records: { record: BehaviourRecord; where: string }[]): void {
  const lines = records.flatMap(({ record, where }) =>
    implausibleValues(record).map(
      (problem) => `  ${where} (${keyText(record.key)}): ${problem.what} = ${problem.value}, ${problem.bound}: ${problem.source}`,
    ),
  );
  if (lines.length === 0) return;
  throw new CudamatrixError(
    'RECORD_IMPLAUSIBLE',
    `${lines.length} value${lines.length === 1 ? '' : 's'} that cannot be true; nothing was written:\n${lines.join('\n')}\n` +
      'A record is refused whole: measure the machine again (a broken timer, a link that trained down, an edited file give such numbers), or, if the value is right, its sysinfo is not: report it with the record',
  );
}
