/** The pinned-ceiling probe's spec (cudaprobe run pinned-ceiling) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { formatValue } from '../../core/units.ts';
import type { MetricRecord } from '../protocol.ts';
import { MiB, positive, hostVmMetrics } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, mean, metricsOf, type SummaryLine } from '../summary-lines.ts';

export const pinnedCeiling: ProbeSpec = {
  name: 'pinned-ceiling',
  title: 'How much can be pinned?',
  claims: ['C12', 'C11', 'C22', 'C27', 'C33'],
  description:
    'Pre-fills VRAM with cuMemAlloc to each level, then pins chunks until a pin fails or the safety cap is reached: ' +
    'the lower of max_gib (16 GiB) and max_fraction (0.5) of the available system memory. A level that pins more ' +
    'than the VRAM left free decides that the ceiling does not track free VRAM; then, with the runtime API, the same ' +
    'with and without cudaDeviceReset first, alternated.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    chunk_mib: positive(256, 'Size of each pinned chunk, MiB'),
    // 16 GiB: above the VRAM a 90 % pre-fill leaves free on common GPUs (on the H200: 13.9 GiB), so
    // the question is decided. The committed H200 runs pinned 7 x 1 GiB in 5.9-7.2 s (at most 1.02 s
    // per GiB, start-up included): 7 x 16 GiB, extrapolated, at most about 2 min of the 10 min timeout.
    max_gib: positive(16, 'Safety cap: never pin more than this, GiB (nor more than max_fraction of the available memory)'),
    max_fraction: z.number().positive().max(0.9).default(0.5).describe('Safety cap: never pin more than this fraction of available memory'),
    prefill_percent: z.array(z.number().min(0).max(95)).min(1).default([0, 50, 90]).describe('VRAM pre-fill levels, % of free'),
    reset_rounds: z.number().int().min(0).max(10).default(2).describe('Rounds of the with/without cudaDeviceReset comparison (0: off)'),
    registered_rounds: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(1)
      .describe('Rounds of malloc + cuMemHostRegister chunks to the same cap, no pre-fill (0: off)'),
  }),
  facts: [
    {
      name: 'limited_by',
      description: 'What stopped the first level: allocation-failure (a real ceiling) or safety-cap',
      values: ['allocation-failure', 'safety-cap'],
    },
    {
      name: 'tracks_free_vram',
      description:
        'The ceiling falls as VRAM fills; false also when a level pinned more than the VRAM left free (null when every level hit the safety cap below it)',
      values: [true, false],
    },
    {
      name: 'reset_helps',
      description: 'cudaDeviceReset first gives a higher ceiling or clearly faster pinning (C11)',
      values: [true, false],
    },
    {
      name: 'failure_poisons',
      description:
        'After a pin failed at a real ceiling, a pin of a sixteenth of a chunk in the same process fails too (C33; null when no pin failed before the cap)',
      values: [true, false],
    },
    {
      name: 'registered_limited_by',
      description: 'What stopped registering malloc memory (cuMemHostRegister chunks): allocation-failure or safety-cap (C22)',
      values: ['allocation-failure', 'safety-cap'],
    },
    {
      name: 'host_register_supported',
      description: 'CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: cudaHostRegister works on this device (C22)',
      values: [true, false],
    },
    {
      name: 'host_pointer_for_registered_mem',
      description:
        "CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: the GPU reaches registered memory at the CPU's address (C22)",
      values: [true, false],
    },
    {
      name: 'pageable_memory_access',
      description: 'CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: the GPU reaches pageable memory without registering it (C22)',
      values: [true, false],
    },
  ],
  metrics: [
    {
      name: 'ceiling_bytes',
      unit: 'bytes',
      description: 'Bytes pinned before failure or the cap (attrs: prefill_percent or variant: reset, no-reset, registered; stopped_by)',
      tolerance: { relative: 0.05 },
    },
    { name: 'free_vram_bytes', unit: 'bytes', description: 'Free VRAM after the pre-fill', tolerance: { relative: 0.02 } },
    { name: 'chunk_alloc_ms', unit: 'ms', description: 'Median time to pin one chunk', tolerance: { relative: 0.7 } },
    ...hostVmMetrics,
  ],
  hostVmMemory: true,
  quick: { max_gib: 0.5, prefill_percent: [0, 90], reset_rounds: 1 },
  typicalMs: 88_500,
  keyMetrics: [
    { metric: 'ceiling_bytes', label: 'pinned ceiling, VRAM not pre-filled', where: { prefill_percent: 0 } },
    { metric: 'ceiling_bytes', label: 'registered ceiling (malloc + cuMemHostRegister)', where: { variant: 'registered' } },
  ],
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const levels = metricsOf(records, 'ceiling_bytes').filter((metric) => typeof metric.attrs?.prefill_percent === 'number');
    if (levels.length) {
      const stops = [...new Set(levels.map((level) => level.attrs?.stopped_by))];
      const part = (level: MetricRecord) =>
        `${fmt(level)} at ${level.attrs?.prefill_percent} %${stops.length > 1 ? ` (${level.attrs?.stopped_by})` : ''}`;
      lines.push([
        'ceiling by VRAM pre-fill',
        `${levels.map(part).join(', ')}${stops.length === 1 && stops[0] ? ` (stopped by ${stops[0]})` : ''}`,
      ]);
    }
    const variant = (variantName: string) => metricsOf(records, 'chunk_alloc_ms', { variant: variantName });
    const [reset, noReset] = [variant('reset'), variant('no-reset')];
    if (reset.length && noReset.length) {
      const ceiling = (variantName: string) =>
        formatValue(mean(metricsOf(records, 'ceiling_bytes', { variant: variantName }).map((metric) => metric.value)), 'bytes');
      lines.push([
        'with / without cudaDeviceReset',
        `${ceiling('reset')} / ${ceiling('no-reset')} pinned, ${formatValue(mean(reset.map((metric) => metric.value)), 'ms')} / ${formatValue(mean(noReset.map((metric) => metric.value)), 'ms')} per chunk`,
      ]);
    }
    return lines;
  },
};
