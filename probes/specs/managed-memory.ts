/** The managed-memory probe's spec (cudaprobe run managed-memory) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { formatValue } from '../../core/units.ts';
import { MiB, positive } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, metricsOf } from '../summary-lines.ts';

export const managedMemory: ProbeSpec = {
  name: 'managed-memory',
  title: 'Managed memory and concurrent access',
  claims: ['C13', 'C23'],
  description:
    'The managed-memory attributes, and a managed allocation written by the CPU, filled by a kernel and read back by the CPU ' +
    '(never concurrently: without concurrent access that is a fault).',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z.number().positive().max(1024).default(64).describe('Managed allocation, MiB (kept small: never more than free VRAM)'),
    // Opt-in: above 100 it oversubscribes, which can hang some GPUs (never on the lent H200).
    percent_of_free: z
      .number()
      .min(0)
      .max(150)
      .default(0)
      .describe(
        'Opt-in large step: one managed allocation of this % of free VRAM, filled by a kernel and read back (0: off; above 100 oversubscribes, bounded by half the available RAM)',
      ),
  }),
  facts: [
    { name: 'managed_supported', description: 'CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY', values: [true, false] },
    {
      name: 'concurrent_access',
      description: 'CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: CPU and GPU may touch managed memory at once',
      values: [true, false],
    },
    {
      name: 'pageable_access',
      description: 'CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: the GPU can access pageable memory',
      values: [true, false],
    },
    { name: 'roundtrip_ok', description: 'CPU write, GPU fill, CPU read back gave the right values', values: [true, false] },
    {
      name: 'large_roundtrip_ok',
      description: 'The percent_of_free step: the managed allocation, its GPU fill and CPU read back worked (C23)',
      values: [true, false],
    },
    {
      name: 'oversubscription_ok',
      description: 'The same, with percent_of_free above 100: managed memory past free VRAM works (C23; null when not asked for)',
      values: [true, false],
    },
  ],
  metrics: [
    { name: 'cpu_first_touch_ms', unit: 'ms', description: 'CPU writing the whole allocation first', tolerance: { relative: 0.5 } },
    { name: 'gpu_fill_ms', unit: 'ms', description: 'Kernel filling it (migration included)', tolerance: { relative: 0.5 } },
    { name: 'cpu_read_back_ms', unit: 'ms', description: 'CPU reading it back (migration included)', tolerance: { relative: 0.5 } },
    { name: 'free_vram_bytes', unit: 'bytes', description: 'Free VRAM before the percent_of_free step', tolerance: { relative: 0.02 } },
    { name: 'managed_bytes', unit: 'bytes', description: 'Size of the percent_of_free allocation', tolerance: { relative: 0.02 } },
    {
      name: 'large_gpu_fill_gbps',
      unit: 'GB/s',
      description: 'Kernel filling the percent_of_free allocation (first-touch migration or eviction included)',
      tolerance: { relative: 0.5 },
    },
    {
      name: 'large_cpu_read_back_ms',
      unit: 'ms',
      description: 'CPU reading it back at up to 4096 places, a page or more apart',
      tolerance: { relative: 0.5 },
    },
  ],
  quick: { size_mib: 16 },
  typicalMs: 400,
  summary: (records) => {
    const [touch, fill, back] = ['cpu_first_touch_ms', 'gpu_fill_ms', 'cpu_read_back_ms'].map((name) => metricsOf(records, name)[0]);
    if (!touch && !fill && !back) return [];
    const size = [touch, fill, back].find((metric) => typeof metric?.attrs?.size_bytes === 'number')?.attrs?.size_bytes as
      number | undefined;
    return [
      [
        `round trip${size ? ` of ${formatValue(size, 'bytes')}` : ''}`,
        `CPU first touch ${fmt(touch)}, GPU fill ${fmt(fill)}, CPU read back ${fmt(back)}`,
      ],
    ];
  },
};
