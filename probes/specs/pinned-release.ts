/** The pinned-release probe's spec (cudaprobe run pinned-release) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import type { MetricRecord } from '../protocol.ts';
import { MiB, nonNegNumbers, positive, apis } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, metricsOf, num, type SummaryLine } from '../summary-lines.ts';

export const pinnedRelease: ProbeSpec = {
  name: 'pinned-release',
  title: 'When is freed pinned memory returned?',
  claims: ['C2'],
  description:
    'Pins and touches N GiB, frees it, and reads every source at each wait (stopping once it is back), then after the ' +
    'subject exits until two readings agree. "on-free", "on-exit" or "never", decided on the source the allocation was charged to.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_gib: positive(1, 'Size to pin, GiB'),
    wait_s: nonNegNumbers([0, 1, 5], 'Readings after free, seconds after the free'),
    apis,
  }),
  facts: [
    { name: 'released', description: 'When cuMemFreeHost memory is returned', values: ['on-free', 'on-exit', 'never'] },
    { name: 'released_runtime', description: 'When cudaFreeHost memory is returned', values: ['on-free', 'on-exit', 'never'] },
  ],
  metrics: [
    {
      name: 'retained_after_free_bytes',
      unit: 'bytes',
      description: 'Still held on the charged source at a wait after free',
      tolerance: { relative: 0.05, absolute: 16 * MiB },
    },
    { name: 'release_delay_s', unit: 's', description: 'First wait after free at which it was seen returned', tolerance: { relative: 0 } },
    {
      name: 'exit_release_delay_s',
      unit: 's',
      description: 'Time after the subject exited until the readings settled',
      tolerance: { relative: 0.5, absolute: 0.5 },
    },
  ],
  quick: { size_gib: 0.25, wait_s: [0, 1] },
  typicalMs: 2_600,
  keyMetrics: [{ metric: 'release_delay_s', label: 'release after cuMemFreeHost', where: { api: 'driver' } }],
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const byApi = (ms: MetricRecord[], format: (metric: MetricRecord) => string) =>
      ms.map((metric) => `${format(metric)}${metric.attrs?.api ? ` ${metric.attrs.api}` : ''}`).join(', ');
    const delay = metricsOf(records, 'release_delay_s');
    if (delay.length)
      lines.push([
        'returned after free',
        byApi(delay, (metric) =>
          metric.value === null ? `not within the waits${metric.reason ? ` (${metric.reason})` : ''}` : `in ${fmt(metric)}`,
        ),
      ]);
    const exit = metricsOf(records, 'exit_release_delay_s');
    if (exit.length) lines.push(['settled after exit', byApi(exit, (metric) => `in ${fmt(metric)}`)]);
    // The last reading after free, per API.
    const retained = metricsOf(records, 'retained_after_free_bytes');
    const last = [...new Set(retained.map((metric) => metric.attrs?.api))].map(
      (api) =>
        retained
          .filter((metric) => metric.attrs?.api === api)
          .sort((left, right) => num(right.attrs?.wait_s) - num(left.attrs?.wait_s))[0]!,
    );
    if (last.length)
      lines.push([
        'still held after free',
        byApi(last, (metric) => `${fmt(metric)}${typeof metric.attrs?.wait_s === 'number' ? ` at ${metric.attrs.wait_s} s` : ''}`),
      ]);
    return lines;
  },
};
