/** The pinned-vram probe's spec (cudaprobe run pinned-vram) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { formatValue } from '../../core/units.ts';
import type { MetricRecord } from '../protocol.ts';
import { MiB, vramValues, numbers, count, apis, hostVmMetrics, memoryMetrics } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { factEvidence, fmt, largest, metricsOf, signed, type SummaryLine } from '../summary-lines.ts';

export const pinnedVram: ProbeSpec = {
  name: 'pinned-vram',
  title: 'Does pinned host memory count against VRAM?',
  claims: ['C1', 'C3', 'C4', 'C27'],
  description:
    'Pins N GiB (one fresh subject process per size and API), touches every page, and compares the growth of every ' +
    'device-memory source with a device-memory (cuMemAlloc) control of the same size and with registered memory. ' +
    '"true" when the device source grew by at least half of N, "false" by at most 5 %, else "partial".',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    sizes_gib: numbers([1, 2, 4], 'Sizes to pin, GiB (one subject each)'),
    apis,
    register_size_gib: z.number().nonnegative().default(1).describe('Size of the registered-memory series, GiB (0: off)'),
    wait_s: z.number().nonnegative().max(60).default(0.1).describe('Wait after free before the after-wait reading, s'),
  }),
  facts: [
    { name: 'counts_as_vram', description: 'cuMemHostAlloc memory counts against device memory (largest size)', values: vramValues },
    {
      name: 'counts_as_vram_runtime',
      description: 'cudaMallocHost memory counts against device memory (largest size)',
      values: vramValues,
    },
    { name: 'registered_counts_as_vram', description: 'cuMemHostRegister-ed memory counts against device memory', values: vramValues },
    {
      name: 'control_counts_as_vram',
      description: 'The cuMemAlloc control counts against device memory (checks the method: expected true)',
      values: vramValues,
    },
  ],
  metrics: [
    ...memoryMetrics,
    {
      name: 'device_growth_per_gib_bytes',
      unit: 'bytes',
      description: 'Device growth per GiB pinned on the deciding source (a few MiB: page tables; a GiB: charged to the GPU)',
      tolerance: { relative: 0.05, absolute: MiB },
    },
    ...hostVmMetrics,
  ],
  hostVmMemory: true,
  quick: { sizes_gib: [0.25], register_size_gib: 0.25, wait_s: 0.1 },
  typicalMs: 18_300,
  keyMetrics: [
    {
      metric: 'device_growth_per_gib_bytes',
      label: 'device growth per GiB pinned, cuMemHostAlloc (deciding source)',
      where: { api: 'driver', kind: 'pinned' },
    },
    {
      metric: 'device_growth_per_gib_bytes',
      label: 'device growth per GiB pinned, cudaMallocHost (deciding source)',
      where: { api: 'runtime', kind: 'pinned' },
    },
  ],
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const perGib = metricsOf(records, 'device_growth_per_gib_bytes');
    if (perGib.length) {
      const sources = [...new Set(perGib.map((metric) => metric.attrs?.source))];
      const one = sources.length === 1 && sources[0];
      const part = (metric: MetricRecord) =>
        `${fmt(metric)} ${metric.attrs?.kind === 'pinned' || metric.attrs?.kind === undefined ? (metric.attrs?.api ?? '') : `${metric.attrs.kind}${metric.attrs?.api === 'driver' ? '' : ` (${metric.attrs?.api})`}`}${one ? '' : ` on ${metric.attrs?.source}`}`.trim();
      lines.push(['device growth per GiB pinned', `${perGib.map(part).join(', ')}${one ? ` (on ${one}, the deciding source)` : ''}`]);
    }
    // The largest size, driver API: what pinning did to the deciding source and to the host,
    // beside the cuMemAlloc control of the same size.
    const pinned = metricsOf(records, 'device_growth_bytes', { kind: 'pinned', api: 'driver' });
    const size = largest(pinned, 'size_bytes');
    const source =
      perGib.find((metric) => metric.attrs?.api === 'driver')?.attrs?.source ?? factEvidence(records, 'counts_as_vram')?.source;
    if (size !== undefined && typeof source === 'string') {
      const at = { size_bytes: size, source };
      const dev = metricsOf(records, 'device_growth_bytes', { ...at, kind: 'pinned', api: 'driver' })[0];
      const host = metricsOf(records, 'host_growth_bytes', { size_bytes: size, kind: 'pinned', api: 'driver' })[0];
      const control = metricsOf(records, 'device_growth_bytes', { ...at, kind: 'device' })[0];
      lines.push([
        `${formatValue(size, 'bytes')} pinned (driver API)`,
        `device ${signed(dev)}, host ${signed(host)}${control ? `; ${formatValue(size, 'bytes')} of cuMemAlloc: device ${signed(control)}` : ''} (${source})`,
      ]);
    }
    return lines;
  },
};
