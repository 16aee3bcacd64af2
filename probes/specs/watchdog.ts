/** The watchdog probe's spec (cudaprobe run watchdog) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import type { ProbeSpec } from '../spec-types.ts';

export const watchdog: ProbeSpec = {
  name: 'watchdog',
  title: 'Kernel watchdog',
  claims: ['C25'],
  description:
    "Facts only: CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, and on Windows the registry's TdrDelay and TdrLevel (Windows' documented defaults, 2 s and 3, when unset). " +
    'No kernel runs near the limit: reaching it resets the GPU.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({}),
  facts: [
    {
      name: 'kernel_exec_timeout',
      description: 'CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: a run-time limit applies to kernels on this device',
      values: [true, false],
    },
    {
      name: 'tdr_delay_s',
      description: 'Windows TdrDelay, s (evidence.source: registry, or default when unset); null off Windows',
      platforms: ['windows'],
    },
    {
      name: 'tdr_level',
      description: 'Windows TdrLevel (0 off, 3 recover; evidence.source as for tdr_delay_s); null off Windows',
      values: [0, 1, 2, 3],
      platforms: ['windows'],
    },
  ],
  metrics: [],
  typicalMs: 150,
};
