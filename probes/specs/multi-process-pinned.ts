/** The multi-process-pinned probe's spec (cudaprobe run multi-process-pinned) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { MiB, positive } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { factEvidence, metricsOf, signed } from '../summary-lines.ts';

export const multiProcessPinned: ProbeSpec = {
  name: 'multi-process-pinned',
  title: 'Do several processes pinning at once add up?',
  claims: ['C14'],
  description: 'K subjects each pin N; readings after all have pinned, after each frees and after each exits.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    processes: z.number().int().min(1).max(16).default(2).describe('Subjects pinning at once'),
    size_gib: positive(1, 'Size each subject pins, GiB'),
  }),
  facts: [
    {
      name: 'vram_growth',
      description: 'Device growth with all pinned: none, sum-of-processes (within 25 % of K x N), or partial',
      values: ['none', 'sum-of-processes', 'partial'],
    },
  ],
  metrics: [
    {
      name: 'device_growth_bytes',
      unit: 'bytes',
      description: 'Growth of a device source with all subjects pinned (attrs.source)',
      tolerance: { relative: 0.05, absolute: 4 * MiB },
    },
    {
      name: 'system_growth_bytes',
      unit: 'bytes',
      description: 'Drop of available system memory with all subjects pinned',
      tolerance: { relative: 0.05, absolute: 64 * MiB },
    },
  ],
  quick: { size_gib: 0.25 },
  typicalMs: 1_800,
  summary: (records) => {
    const growth = metricsOf(records, 'device_growth_bytes');
    if (!growth.length) return [];
    const source = factEvidence(records, 'vram_growth')?.source;
    const dev = growth.find((metric) => metric.attrs?.source === source) ?? growth[0]!;
    const system = metricsOf(records, 'system_growth_bytes')[0];
    const processes = dev.attrs?.processes;
    return [[`${processes ?? 'all'} processes pinned`, `device ${signed(dev)} (${dev.attrs?.source}), system memory ${signed(system)}`]];
  },
};
