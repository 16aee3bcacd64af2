/** The cuda-graph probe's spec (cudaprobe run cuda-graph) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { count } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, metricsOf } from '../summary-lines.ts';

export const cudaGraph: ProbeSpec = {
  name: 'cuda-graph',
  title: 'CUDA Graphs: supported, and launch cost',
  claims: ['C5'],
  description: 'Captures N no-op kernels, instantiates and launches the graph; its time against N plain launches, medians after warm-up.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    kernels: count(1000, 1, 'Kernels in the graph'),
    repetitions: count(20, 3, 'Timed launches of each'),
  }),
  facts: [{ name: 'supported', description: 'Stream capture, instantiation and launch of a graph work', values: [true, false] }],
  metrics: [
    { name: 'graph_us', unit: 'us', description: 'Graph launch + synchronize', tolerance: { relative: 0.1 } },
    { name: 'plain_us', unit: 'us', description: 'The same kernels launched one by one + synchronize', tolerance: { relative: 0.4 } },
    { name: 'graph_per_kernel_us', unit: 'us', description: 'graph_us per kernel', tolerance: { relative: 0.1 } },
    { name: 'plain_per_kernel_us', unit: 'us', description: 'plain_us per kernel', tolerance: { relative: 0.4 } },
    { name: 'graph_speedup', unit: 'ratio', description: 'plain_us / graph_us', tolerance: { relative: 0.4 } },
  ],
  quick: { repetitions: 5 },
  typicalMs: 480,
  keyMetrics: [{ metric: 'graph_speedup', label: 'graph launch speed-up over plain launches' }],
  summary: (records) => {
    const [graph, plain, speedup] = ['graph_per_kernel_us', 'plain_per_kernel_us', 'graph_speedup'].map(
      (name) => metricsOf(records, name)[0],
    );
    if (!graph && !plain) return [];
    const kernels = graph?.attrs?.kernels;
    return [
      [
        'launch per kernel',
        `${fmt(graph)} in a graph, ${fmt(plain)} one by one${speedup?.value != null ? ` (${fmt(speedup)}x${kernels ? `, ${kernels} kernels` : ''})` : ''}`,
      ],
    ];
  },
};
