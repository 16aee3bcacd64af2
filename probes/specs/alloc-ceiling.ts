/** The alloc-ceiling probe's spec (cudaprobe run alloc-ceiling) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { MiB, positive, apis } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, largest, metricsOf, type SummaryLine } from '../summary-lines.ts';

// alloc-ceiling, sysmem-fallback and the new metrics of pinned-ceiling and managed-memory (issue
// 24): their tolerances are provisional, not yet calibrated by repeated GPU runs.
export const allocCeiling: ProbeSpec = {
  name: 'alloc-ceiling',
  title: 'How much device memory can really be allocated?',
  claims: ['C20'],
  description:
    'Per API (cuMemAlloc, cudaMalloc, cudaMallocAsync), in a fresh subject: the free VRAM cuMemGetInfo reports at the start, ' +
    'the largest single allocation (bisection to granularity_mib) and the total of chunk_mib chunks held at once, both bounded ' +
    "by max_gib (0: the device's total memory). reaches_free_vram: the chunks stopped by a failure came within one chunk and max(512 MiB, 3 %) of the free VRAM.",
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    apis: z
      .array(z.enum(['driver', 'runtime', 'async']))
      .min(1)
      .default(['driver', 'runtime', 'async'])
      .describe('API series: driver (cuMemAlloc), runtime (cudaMalloc), async (cudaMallocAsync)'),
    chunk_mib: positive(256, 'Size of each chunk, MiB'),
    max_gib: z
      .number()
      .nonnegative()
      .default(0)
      .describe("Cap, GiB: 0 is the device's total memory (never past it); on a shared card give one below its free VRAM"),
    granularity_mib: positive(64, 'Bisection step of the largest single allocation, MiB'),
  }),
  facts: [
    {
      name: 'memory_pools_supported',
      description: 'CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: the stream-ordered allocator (cudaMallocAsync) is there',
      values: [true, false],
    },
    {
      name: 'reaches_free_vram',
      description: 'cuMemAlloc chunks reach the free VRAM reported at the start (null when the cap stopped them first)',
      values: [true, false],
    },
    { name: 'reaches_free_vram_runtime', description: 'The same with cudaMalloc', values: [true, false] },
    { name: 'reaches_free_vram_async', description: 'The same with cudaMallocAsync', values: [true, false] },
  ],
  metrics: [
    {
      name: 'free_vram_bytes',
      unit: 'bytes',
      description: 'Free VRAM at the start, cuMemGetInfo in the subject (attrs.api)',
      tolerance: { relative: 0.02 },
    },
    { name: 'total_vram_bytes', unit: 'bytes', description: 'Total VRAM, cuMemGetInfo', tolerance: { relative: 0 } },
    {
      name: 'largest_single_bytes',
      unit: 'bytes',
      description: 'Largest single allocation that succeeded (attrs: api, stopped_by, cap_bytes)',
      tolerance: { relative: 0.02 },
    },
    {
      name: 'cumulative_bytes',
      unit: 'bytes',
      description: 'Chunks held at once before a failure or the cap (attrs: api, stopped_by, cap_bytes)',
      tolerance: { relative: 0.02 },
    },
    {
      name: 'shortfall_bytes',
      unit: 'bytes',
      description: 'Free VRAM at the start less the chunks held when one failed',
      tolerance: { relative: 0.2, absolute: 512 * MiB },
    },
    {
      name: 'free_after_fill_bytes',
      unit: 'bytes',
      description: 'Free VRAM with the chunks held',
      tolerance: { relative: 0.2, absolute: 512 * MiB },
    },
  ],
  quick: { max_gib: 1, granularity_mib: 128 },
  keyMetrics: [
    { metric: 'largest_single_bytes', label: 'largest single cuMemAlloc (to the cap)', where: { api: 'driver' } },
    { metric: 'cumulative_bytes', label: 'cuMemAlloc in 256 MiB chunks (to the cap)', where: { api: 'driver' } },
    { metric: 'shortfall_bytes', label: 'free VRAM that cuMemAlloc chunks could not get', where: { api: 'driver' } },
  ],
  summary: (records) =>
    ['driver', 'runtime', 'async'].flatMap((api): SummaryLine[] => {
      const [free, largest, held] = ['free_vram_bytes', 'largest_single_bytes', 'cumulative_bytes'].map(
        (name) => metricsOf(records, name, { api })[0],
      );
      if (!free && !largest && !held) return [];
      return [
        [
          `${api} API`,
          `free at start ${fmt(free)}, largest single ${fmt(largest)}, in chunks ${fmt(held)}${held?.attrs?.stopped_by ? ` (stopped by ${held.attrs.stopped_by})` : ''}`,
        ],
      ];
    }),
  optIn: 'it allocates up to max_gib of device memory (all of it on a smaller card)',
};
