/** The runtime-init probe's spec (cudaprobe run runtime-init) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import type { ProbeSpec } from '../spec-types.ts';

export const runtimeInit: ProbeSpec = {
  name: 'runtime-init',
  title: 'Initialisation of the driver and of each CUDA runtime',
  claims: ['C26'],
  description:
    "In a fresh process each: cuInit, and for every CUDA runtime found (libcudart.so.* in the loader's folders and beside cudaprobe, " +
    'cudart64_*.dll on PATH, in CUDA_PATH and beside it, and in dirs) cudaGetDeviceCount then cudaSetDevice + cudaFree(0); result and time of each. A crash is recorded as such.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    dirs: z
      .array(z.string().min(1))
      .default([])
      .describe("More folders to look for CUDA runtimes in (e.g. a Python environment's nvidia/cuda_runtime/lib)"),
    timeout_s: z.number().min(1).max(600).default(60).describe('How long one initialisation may take before it counts as hung, s'),
  }),
  facts: [
    { name: 'driver_init', description: 'What cuInit returned in a fresh process (CUDA_SUCCESS, an error name, or how the process ended)' },
    {
      name: 'runtime_init',
      description: 'Each runtime found with its version and what its first call returned ("libcudart.so.13.0.48 (13.0): cudaSuccess; ...")',
    },
    {
      name: 'supported_runtimes_init',
      description: 'Every runtime found whose CUDA version the driver supports initialised (newer ones may fail by design)',
      values: [true, false],
    },
  ],
  metrics: [
    { name: 'cuinit_ms', unit: 'ms', description: 'cuInit in a fresh process', tolerance: { relative: 0.5, absolute: 50 } },
    {
      name: 'driver_load_ms',
      unit: 'ms',
      description: 'Loading the driver library and its symbols',
      tolerance: { relative: 0.7, absolute: 10 },
    },
    { name: 'runtimes_found', unit: 'count', description: 'CUDA runtime libraries found (one per real file)', tolerance: { relative: 0 } },
    {
      name: 'runtime_load_ms',
      unit: 'ms',
      description: 'Loading the runtime library (attrs: library, version)',
      tolerance: { relative: 0.7, absolute: 10 },
    },
    {
      name: 'runtime_first_call_ms',
      unit: 'ms',
      description: 'cudaGetDeviceCount, the first call, which initialises the driver (attrs: library, version)',
      tolerance: { relative: 0.5, absolute: 50 },
    },
    {
      name: 'runtime_context_ms',
      unit: 'ms',
      description: 'cudaSetDevice + cudaFree(0): the primary context (attrs: library, version)',
      tolerance: { relative: 0.5, absolute: 50 },
    },
  ],
  typicalMs: 470,
  keyMetrics: [
    { metric: 'cuinit_ms', label: 'cuInit in a fresh process' },
    { metric: 'runtime_first_call_ms', label: "a runtime's first call" },
  ],
};
