/** The event-timing probe's spec (cudaprobe run event-timing) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { numbers, count } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, metricsOf, num, type SummaryLine } from '../summary-lines.ts';

export const eventTiming: ProbeSpec = {
  name: 'event-timing',
  title: 'Resolution of cuEventElapsedTime',
  claims: ['C7'],
  description:
    'Spin kernels of 1-20 us (cycles calibrated against events) timed with events; the smallest step between distinct elapsed times, against the host clock.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    targets_us: numbers([1, 2, 5, 10, 20], 'Spin durations, us'),
    repetitions: count(50, 5, 'Timings per duration'),
  }),
  facts: [
    {
      name: 'resolution_class',
      description: 'Event resolution: sub-microsecond (< 1 us), microsecond, or millisecond',
      values: ['sub-microsecond', 'microsecond', 'millisecond'],
    },
  ],
  metrics: [
    { name: 'resolution_us', unit: 'us', description: 'Smallest step between distinct event-timed values', tolerance: { relative: 0.1 } },
    { name: 'distinct_values', unit: 'count', description: 'Distinct elapsed times seen', tolerance: { relative: 0.5 } },
    { name: 'elapsed_us', unit: 'us', description: 'Median event-timed duration (attrs.target_us)', tolerance: { relative: 0.1 } },
    {
      name: 'host_elapsed_us',
      unit: 'us',
      description: 'Median host-timed launch-to-completion (attrs.target_us)',
      tolerance: { relative: 0.35 },
    },
    { name: 'host_clock_resolution_us', unit: 'us', description: "The host clock's smallest step", tolerance: { relative: 0.5 } },
    {
      name: 'spin_cycles_per_us',
      unit: 'cycles',
      description: 'SM clock cycles per microsecond (spin calibration)',
      tolerance: { relative: 0.05 },
    },
  ],
  quick: { repetitions: 20 },
  typicalMs: 520,
  keyMetrics: [{ metric: 'resolution_us', label: 'event timing resolution' }],
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const res = metricsOf(records, 'resolution_us')[0];
    if (res) {
      const distinct = metricsOf(records, 'distinct_values')[0];
      const host = metricsOf(records, 'host_clock_resolution_us')[0];
      const extra = [distinct && `${distinct.value} distinct values`, host && `host clock ${fmt(host)}`].filter(Boolean);
      lines.push(['resolution', `${fmt(res)}${extra.length ? ` (${extra.join(', ')})` : ''}`]);
    }
    const elapsed = metricsOf(records, 'elapsed_us').sort((left, right) => num(left.attrs?.target_us) - num(right.attrs?.target_us))[0];
    if (elapsed && typeof elapsed.attrs?.target_us === 'number') {
      const host = metricsOf(records, 'host_elapsed_us', { target_us: elapsed.attrs.target_us })[0];
      lines.push([
        `${elapsed.attrs.target_us} us spin timed`,
        `${fmt(elapsed)} by events${host ? `, ${fmt(host)} by the host clock` : ''}`,
      ]);
    }
    return lines;
  },
};
