/** The sync-latency probe's spec (cudaprobe run sync-latency) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { count } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, mean, metricsOf } from '../summary-lines.ts';

export const syncLatency: ProbeSpec = {
  name: 'sync-latency',
  title: 'Launch + stream synchronize latency',
  claims: ['C5'],
  description: 'N x (no-op kernel + cuStreamSynchronize), each timed with the host clock after warm-up.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({ iterations: count(10000, 100, 'Timed iterations') }),
  facts: [],
  metrics: [
    { name: 'p50_us', unit: 'us', description: 'Median latency', tolerance: { relative: 0.15 } },
    { name: 'p99_us', unit: 'us', description: '99th percentile latency', tolerance: { relative: 0.3 } },
    { name: 'mean_us', unit: 'us', description: 'Mean latency', tolerance: { relative: 0.15 } },
    { name: 'min_us', unit: 'us', description: 'Smallest latency', tolerance: { relative: 0.15 } },
  ],
  quick: { iterations: 1000 },
  typicalMs: 450,
  keyMetrics: [
    { metric: 'p50_us', label: 'launch + synchronize, median' },
    { metric: 'p99_us', label: 'launch + synchronize, 99th percentile' },
  ],
  summary: (records) => {
    const [p50, p99, avg, min] = ['p50_us', 'p99_us', 'mean_us', 'min_us'].map((name) => metricsOf(records, name)[0]);
    if (!p50 && !p99) return [];
    const iterations = p50?.attrs?.iterations;
    return [
      [
        'launch + synchronize',
        `p50 ${fmt(p50)}, p99 ${fmt(p99)} (mean ${fmt(avg)}, min ${fmt(min)}${iterations ? `; ${iterations} iterations` : ''})`,
      ],
    ];
  },
};
