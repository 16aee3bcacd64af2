/** The event-host-gap probe's spec (cudaprobe run event-host-gap) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { count } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';

export const eventHostGap: ProbeSpec = {
  name: 'event-host-gap',
  title: 'Events around host time without GPU work',
  claims: ['C24'],
  description:
    'Records an event, sleeps sleep_ms on the host with no GPU work, records another, and synchronizes; once as is and once with a ' +
    'cuStreamQuery after the first record (which submits it). Under WDDM a record waits in the command buffer, so the pair may not bracket the sleep.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    sleep_ms: z.number().min(1).max(1000).default(20).describe('Host sleep between the two records, ms'),
    repetitions: count(10, 3, 'Rounds per variant (at least 3)'),
  }),
  facts: [
    {
      name: 'brackets_host_gap',
      description: "Without a flush, the events' median elapsed time is at least 90 % of the host's gap between the records",
      values: [true, false],
    },
    { name: 'brackets_host_gap_flushed', description: 'The same with cuStreamQuery after the first record', values: [true, false] },
  ],
  metrics: [
    {
      name: 'elapsed_ms',
      unit: 'ms',
      description: 'Median cuEventElapsedTime of the pair (attrs: flush none|query, sleep_ms)',
      tolerance: { relative: 0.1 },
    },
    {
      name: 'elapsed_min_ms',
      unit: 'ms',
      description: 'Smallest elapsed time of the pair (attrs: flush, sleep_ms)',
      tolerance: { relative: 0.2 },
    },
    {
      name: 'host_gap_ms',
      unit: 'ms',
      description: 'Median host time between the records (the sleep as the host clock saw it)',
      tolerance: { relative: 0.1 },
    },
    {
      name: 'elapsed_host_ratio',
      unit: 'ratio',
      description: 'Median elapsed time over median host gap (attrs.flush)',
      tolerance: { relative: 0.1 },
    },
  ],
  quick: { repetitions: 3 },
  typicalMs: 730,
  keyMetrics: [
    { metric: 'elapsed_ms', label: 'event pair around 20 ms host sleep', where: { flush: 'none' } },
    { metric: 'elapsed_ms', label: 'the same, flushed with cuStreamQuery', where: { flush: 'query' } },
  ],
};
