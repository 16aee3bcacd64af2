/** The stream-priority probe's spec (cudaprobe run stream-priority) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { positive, count } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, metricsOf, type SummaryLine } from '../summary-lines.ts';

export const streamPriority: ProbeSpec = {
  name: 'stream-priority',
  title: 'Are stream priorities honoured?',
  claims: ['C6'],
  description:
    'A long low-priority kernel of many short blocks fills the GPU for several waves; delay_ms later a short kernel goes on the ' +
    'greatest-priority stream. Compared with the same at equal priorities. honoured = the short kernel finished in at most half ' +
    "the long one's time with priorities, and clearly earlier than at equal priority.",
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    repetitions: count(5, 1, 'Runs of each mode (medians are reported)'),
    block_us: positive(1000, 'Spin time of each block of the long kernel, us'),
    waves: count(10, 2, 'Waves of blocks of the long kernel'),
    delay_ms: z.number().nonnegative().default(1).describe('Delay before the short kernel, ms'),
  }),
  facts: [{ name: 'honoured', description: 'Stream priorities change which kernel the GPU runs first', values: [true, false] }],
  metrics: [
    {
      name: 'priority_least',
      unit: 'count',
      description: 'Least stream priority (cuCtxGetStreamPriorityRange)',
      tolerance: { relative: 0 },
    },
    { name: 'priority_greatest', unit: 'count', description: 'Greatest stream priority', tolerance: { relative: 0 } },
    {
      name: 'high_done_ms',
      unit: 'ms',
      description: 'Short kernel completion after the long one started (attrs.mode)',
      tolerance: { relative: 0.1 },
    },
    { name: 'long_done_ms', unit: 'ms', description: 'Long kernel completion (attrs.mode)', tolerance: { relative: 0.1 } },
    { name: 'high_done_ratio', unit: 'ratio', description: 'high_done_ms / long_done_ms (attrs.mode)', tolerance: { relative: 0.1 } },
  ],
  quick: { repetitions: 2 },
  typicalMs: 500,
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const [prio, equal] = ['priority', 'equal'].map((mode) => metricsOf(records, 'high_done_ratio', { mode })[0]);
    if (prio || equal)
      lines.push(['short kernel done at', `${fmt(prio)} of the long kernel's time with priorities, ${fmt(equal)} at equal priority`]);
    const [least, greatest] = ['priority_least', 'priority_greatest'].map((name) => metricsOf(records, name)[0]);
    if (least && greatest) lines.push(['priority range', `${least.value} (least) to ${greatest.value} (greatest)`]);
    return lines;
  },
};
