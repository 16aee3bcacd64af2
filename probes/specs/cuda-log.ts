/** The cuda-log probe's spec (cudaprobe run cuda-log) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import type { ProbeSpec } from '../spec-types.ts';
import { metricsOf } from '../summary-lines.ts';

export const cudaLog: ProbeSpec = {
  name: 'cuda-log',
  title: 'What CUDA_LOG_FILE logs',
  claims: ['C9'],
  description:
    'Two fresh subjects with CUDA_LOG_FILE set (and CUDA_LOG_LEVEL when log_level is given): one makes a successful ' +
    'cudaMallocHost, the other also a deliberate error; the lines each log are counted. Needs CUDA 12.9+.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({ log_level: z.string().default('').describe('CUDA_LOG_LEVEL for the subjects (undocumented; empty: unset)') }),
  facts: [
    { name: 'log_file_written', description: 'A log file was written', values: [true, false] },
    { name: 'logs_successful_pin', description: 'A successful pinned allocation is logged', values: [true, false] },
    { name: 'logs_errors', description: 'An error is logged', values: [true, false] },
  ],
  metrics: [
    { name: 'runtime_version', unit: 'count', description: 'cudaRuntimeGetVersion', tolerance: { relative: 0 } },
    { name: 'lines_pin_only', unit: 'count', description: 'Lines logged by the subject that only pinned', tolerance: { relative: 0 } },
    {
      name: 'lines_with_error',
      unit: 'count',
      description: 'Lines logged by the subject that also made an error',
      tolerance: { relative: 0 },
    },
  ],
  typicalMs: 550,
  summary: (records) => {
    const [pin, err] = ['lines_pin_only', 'lines_with_error'].map((name) => metricsOf(records, name)[0]);
    if (!pin && !err) return [];
    return [['lines logged', `${pin?.value ?? '—'} by a successful pin, ${err?.value ?? '—'} with a deliberate error`]];
  },
};
