/** The sysmem-fallback probe's spec (cudaprobe run sysmem-fallback) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { MiB, positive } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, metricsOf, signed } from '../summary-lines.ts';

export const sysmemFallback: ProbeSpec = {
  name: 'sysmem-fallback',
  title: 'Do allocations past VRAM spill into system memory?',
  claims: ['C21'],
  description:
    'A subject allocates chunk_mib chunks, held, up to VRAM + past_vram_gib (at most 4) or max_gib when lower, and never more past ' +
    'free VRAM than half the available system memory; every source is read before and after (on Windows, PDH Shared Usage ' +
    'shows the spill). allocates_past_vram: more than a chunk past free VRAM succeeded; the write bandwidth of the last chunk ' +
    'against the first shows what a spilled chunk costs.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    api: z
      .enum(['driver', 'runtime'])
      .default('runtime')
      .describe('runtime (cudaMalloc, what the fallback policy names) or driver (cuMemAlloc)'),
    chunk_mib: positive(256, 'Size of each chunk, MiB'),
    past_vram_gib: z.number().min(0).max(4).default(2).describe('Bound past the total VRAM, GiB'),
    max_gib: z
      .number()
      .nonnegative()
      .default(0)
      .describe('A lower bound in GiB (0: VRAM + past_vram_gib); on a shared card keep it below the free VRAM'),
  }),
  facts: [
    {
      name: 'allocates_past_vram',
      description: 'Allocations succeeded past the free VRAM (false: one failed before it; null: the bound came first)',
      values: [true, false],
    },
    { name: 'spill_slower', description: "The last chunk writes at under half the first chunk's bandwidth", values: [true, false] },
    {
      name: 'spill_in_shared_usage',
      description: 'Windows PDH Shared Usage of the subject grew by at least half of what went past free VRAM',
      values: [true, false],
    },
  ],
  metrics: [
    {
      name: 'free_vram_bytes',
      unit: 'bytes',
      description: 'Free VRAM at the start (cuMemGetInfo in the subject)',
      tolerance: { relative: 0.02 },
    },
    { name: 'total_vram_bytes', unit: 'bytes', description: 'Total VRAM', tolerance: { relative: 0 } },
    {
      name: 'allocated_bytes',
      unit: 'bytes',
      description: 'Chunks held before a failure or the bound (attrs: stopped_by, target_bytes)',
      tolerance: { relative: 0.02 },
    },
    {
      name: 'past_free_vram_bytes',
      unit: 'bytes',
      description: 'allocated_bytes less the free VRAM at the start (negative: it stopped before)',
      tolerance: { relative: 0.1, absolute: 512 * MiB },
    },
    {
      name: 'first_chunk_write_gbps',
      unit: 'GB/s',
      description: 'cuMemsetD32 bandwidth of the first chunk (4 memsets + 1 synchronize, host-timed), median of 3',
      tolerance: { relative: 0.2 },
    },
    { name: 'last_chunk_write_gbps', unit: 'GB/s', description: 'The same for the last chunk', tolerance: { relative: 0.2 } },
    {
      name: 'last_first_write_ratio',
      unit: 'ratio',
      description: 'last_chunk_write_gbps / first_chunk_write_gbps',
      tolerance: { relative: 0.2 },
    },
    {
      name: 'shared_usage_growth_bytes',
      unit: 'bytes',
      description: "Growth of the subject's PDH Shared Usage (Windows; null elsewhere)",
      tolerance: { relative: 0.1, absolute: 64 * MiB },
    },
    {
      name: 'dedicated_usage_growth_bytes',
      unit: 'bytes',
      description: "Growth of the subject's PDH Dedicated Usage (Windows)",
      tolerance: { relative: 0.1, absolute: 64 * MiB },
    },
  ],
  quick: { max_gib: 1 },
  keyMetrics: [
    {
      metric: 'past_free_vram_bytes',
      label: 'allocated past free VRAM (sysmem fallback)',
      // allocated_bytes less the free VRAM: negative when the bound or a failure stopped it first.
      negative: 'none: stopped {} under free VRAM',
    },
    { metric: 'last_first_write_ratio', label: 'last / first chunk write bandwidth (sysmem fallback)' },
  ],
  summary: (records) => {
    const [allocated, free, first, last, shared] = [
      'allocated_bytes',
      'free_vram_bytes',
      'first_chunk_write_gbps',
      'last_chunk_write_gbps',
      'shared_usage_growth_bytes',
    ].map((name) => metricsOf(records, name)[0]);
    if (!allocated) return [];
    return [
      [
        'allocated',
        `${fmt(allocated)} of ${fmt(free)} free${allocated.attrs?.stopped_by ? ` (stopped by ${allocated.attrs.stopped_by})` : ''}, Shared Usage ${signed(shared)}`,
      ],
      ['chunk write bandwidth', `first ${fmt(first)}, last ${fmt(last)}`],
    ];
  },
  optIn: 'it fills the device memory and goes past it (bounded at VRAM + past_vram_gib)',
};
