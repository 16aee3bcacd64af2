/** The transfer-bandwidth probe's spec (cudaprobe run transfer-bandwidth) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { formatValue } from '../../core/units.ts';
import type { Scalar } from '../protocol.ts';
import { MiB, numbers, count } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, largest, metricsOf, type SummaryLine } from '../summary-lines.ts';

export const transferBandwidth: ProbeSpec = {
  name: 'transfer-bandwidth',
  title: 'Pageable versus pinned copy bandwidth',
  claims: ['C8', 'C28'],
  description:
    'H2D and D2H from pre-touched pageable and from pinned memory, median of the timed copies after warm-up, timed with events; ' +
    'then again with fill_percent of the free VRAM allocated and written (a busy card), never leaving less than fill_reserve_gib free.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    sizes_mib: numbers([1, 16, 256, 1024], 'Copy sizes, MiB'),
    repetitions: count(20, 20, 'Timed copies per size (at least 20)'),
    warmup: count(2, 0, 'Untimed copies first'),
    fill_percent: z
      .array(z.number().min(0).max(90))
      .min(1)
      .default([0, 90])
      .describe('Rounds with this percentage of the free VRAM held while copying (0: the idle card; at most 90)'),
    fill_reserve_gib: z
      .number()
      .nonnegative()
      .default(8)
      .describe('The fill never leaves less free VRAM than this, GiB (a shared card keeps room for others)'),
  }),
  facts: [],
  metrics: [
    {
      name: 'bandwidth_gbps',
      unit: 'GB/s',
      description: 'Copy bandwidth (attrs: direction h2d|d2h, memory pageable|pinned, size_bytes)',
      tolerance: [
        // 1 MiB copies are latency-bound: 6.7 % apart between the first four H200 runs, 10.7 %
        // (with 90 % of VRAM filled) between runs of 2026-12-02 and 2026-12-04.
        { where: { memory: 'pinned', size_bytes: { below: 16 * MiB } }, relative: 0.15 },
        { where: { memory: 'pinned' }, relative: 0.03 },
        { relative: 0.45 },
      ],
    },
    {
      name: 'pageable_pinned_ratio',
      unit: 'ratio',
      description: 'Pageable bandwidth over pinned bandwidth (attrs: direction, size_bytes)',
      tolerance: { relative: 0.45 },
    },
    {
      name: 'host_memcpy_gbps',
      unit: 'GB/s',
      description:
        'Host memcpy bandwidth of the same size between two pageable buffers: the control for pageable copies (a slower host slows both)',
      tolerance: { relative: 0.45 },
    },
    {
      name: 'pcie_theoretical_gbps',
      unit: 'GB/s',
      description: "The link's payload rate from its maximum generation and width",
      tolerance: { relative: 0 },
    },
    {
      name: 'pinned_fraction_of_link',
      unit: 'ratio',
      description: 'Best pinned bandwidth over the theoretical link rate (idle card)',
      tolerance: { relative: 0.03 },
    },
    {
      name: 'fill_bytes',
      unit: 'bytes',
      description: 'Device memory held during a filled round (attrs.fill_percent; the copies of that round carry it too)',
      tolerance: { relative: 0.1 },
    },
    {
      name: 'vram_used_fraction',
      unit: 'ratio',
      description: 'Share of VRAM in use once filled (1 - free / total; attrs.fill_percent)',
      tolerance: { relative: 0.1 },
    },
    {
      name: 'filled_idle_ratio',
      unit: 'ratio',
      description: "Pinned bandwidth of the largest copy with VRAM filled over the idle card's (attrs: direction, fill_percent)",
      tolerance: { relative: 0.05 },
    },
  ],
  quick: { sizes_mib: [1, 64] },
  typicalMs: 18_800,
  keyMetrics: [
    { metric: 'bandwidth_gbps', label: 'H2D pinned', where: { direction: 'h2d', memory: 'pinned' }, largestSize: true },
    { metric: 'bandwidth_gbps', label: 'D2H pinned', where: { direction: 'd2h', memory: 'pinned' }, largestSize: true },
    { metric: 'bandwidth_gbps', label: 'H2D pageable', where: { direction: 'h2d', memory: 'pageable' }, largestSize: true },
    { metric: 'pageable_pinned_ratio', label: 'H2D pageable / pinned', where: { direction: 'h2d' }, largestSize: true },
    { metric: 'filled_idle_ratio', label: 'H2D pinned, VRAM filled / idle', where: { direction: 'h2d' } },
    { metric: 'filled_idle_ratio', label: 'D2H pinned, VRAM filled / idle', where: { direction: 'd2h' } },
  ],
  summary: (all) => {
    const lines: SummaryLine[] = [];
    // The idle card's series; the filled rounds' (attrs.fill_percent) have a line of their own.
    const records = all.filter((record) => record.type !== 'metric' || record.attrs?.fill_percent === undefined);
    const bw = metricsOf(records, 'bandwidth_gbps');
    const size = largest(bw, 'size_bytes');
    if (size !== undefined) {
      const at = formatValue(size, 'bytes');
      const dirs = (name: string, where: Record<string, Scalar>) =>
        ['h2d', 'd2h']
          .flatMap((direction) =>
            metricsOf(records, name, { ...where, direction: direction, size_bytes: size }).map((metric) => `${fmt(metric)} ${direction}`),
          )
          .join(', ');
      lines.push([`pinned at ${at}`, dirs('bandwidth_gbps', { memory: 'pinned' })]);
      lines.push([`pageable at ${at}`, dirs('bandwidth_gbps', { memory: 'pageable' })]);
      const ratio = dirs('pageable_pinned_ratio', {});
      if (ratio) lines.push([`pageable/pinned at ${at}`, ratio]);
    }
    const link = metricsOf(records, 'pcie_theoretical_gbps')[0];
    if (link) {
      const fractions = ['h2d', 'd2h'].flatMap((direction) =>
        metricsOf(records, 'pinned_fraction_of_link', { direction: direction }).map(
          (metric) => `${metric.value === null ? '—' : formatValue(metric.value * 100, 'percent')} ${direction}`,
        ),
      );
      const what = typeof link.attrs?.gen === 'number' ? `gen${link.attrs.gen} x${link.attrs.width}, ` : '';
      lines.push(['PCIe link', `${what}${fmt(link)}${fractions.length ? `; best pinned reaches ${fractions.join(', ')}` : ''}`]);
    }
    for (const used of metricsOf(all, 'vram_used_fraction')) {
      const fill = used.attrs?.fill_percent as number;
      const ratios = ['h2d', 'd2h'].flatMap((direction) =>
        metricsOf(all, 'filled_idle_ratio', { direction: direction, fill_percent: fill }).map((metric) => `${fmt(metric)} ${direction}`),
      );
      lines.push([
        `VRAM ${used.value === null ? '—' : formatValue(used.value * 100, 'percent')} in use`,
        `pinned bandwidth ${ratios.join(', ') || '—'} of the idle card's`,
      ]);
    }
    return lines;
  },
};
