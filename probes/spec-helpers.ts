/**
 * What several probe specs share (./specs/): parameter helpers (zod, each with its default), the
 * value sets of common facts, and the metrics of the memory probes and of a WSL 2 VM's host.
 */
import { z } from 'zod';
import type { Platform } from '../transports/transport.ts';
import type { FactSpec, MetricSpec } from './spec-types.ts';

export const MiB = 1024 * 1024;
export const environments = ['linux', 'wsl2', 'wsl2-docker', 'wddm', 'tcc', 'mcdm'] as const;
export const vramValues = [true, false, 'partial'] as const;

/**
 * A capability fact (issue 36): whether a feature works, against what the device attribute that
 * advertises it claims. `works`: claimed and working; `claimed-but-fails`: claimed, a call refused
 * it; `works-unclaimed`: not claimed, yet it works; `unsupported`: not claimed and refused. Null,
 * with a reason, where it cannot be decided (another platform's handle type, no driver).
 */
export const CAPABILITY_VALUES = ['works', 'claimed-but-fails', 'works-unclaimed', 'unsupported'] as const;

export function capabilityFact(name: string, description: string, platforms?: Platform[]): FactSpec {
  return { name, description, values: CAPABILITY_VALUES, ...(platforms ? { platforms } : {}) };
}

/** Whether a fact of the catalogue is a capability fact (made by capabilityFact): what `cudamatrix export` exports. */
export function isCapabilityFact(fact: FactSpec): boolean {
  return fact.values === CAPABILITY_VALUES;
}

// Parameter helpers: every parameter has a default, which cudaprobe's probe table is generated from.
export const numbers = (def: number[], what: string) => z.array(z.number().positive()).min(1).default(def).describe(what);
export const nonNegNumbers = (def: number[], what: string) => z.array(z.number().nonnegative()).min(1).default(def).describe(what);
export const positive = (def: number, what: string) => z.number().positive().default(def).describe(what);
export const count = (def: number, min: number, what: string) => z.number().int().min(min).default(def).describe(what);
export const apis = z
  .array(z.enum(['driver', 'runtime']))
  .min(1)
  .default(['driver', 'runtime'])
  .describe('API series: driver (cuMemHostAlloc...) and/or runtime (cudaMallocHost...)');

/** Readings a memory probe's samples carry (each null with a reason where a platform lacks it). */
export const sampleReadings: Record<string, string> = {
  subject_cu_used_bytes: 'Device memory in use, from cuMemGetInfo in the subject (device-wide)',
  nvml_device_used_bytes: 'Device memory in use, from NVML in the sampler (device-wide)',
  nvml_process_used_bytes: "The subject's device memory, from NVML's compute-process list (null under WDDM and WSL2)",
  pdh_process_dedicated_bytes: 'Windows PDH \\GPU Process Memory(pid_N*)\\Dedicated Usage of the subject',
  pdh_process_shared_bytes: 'Windows PDH \\GPU Process Memory(pid_N*)\\Shared Usage of the subject',
  pdh_adapter_dedicated_bytes: 'Windows PDH \\GPU Adapter Memory(*)\\Dedicated Usage',
  pdh_adapter_shared_bytes: 'Windows PDH \\GPU Adapter Memory(*)\\Shared Usage',
  dxgi_local_bytes: 'DXGI QueryVideoMemoryInfo LOCAL segment usage of the subject (Windows)',
  dxgi_nonlocal_bytes: 'DXGI QueryVideoMemoryInfo NON_LOCAL segment usage of the subject (Windows)',
  subject_rss_bytes: "The subject's resident set (Linux VmRSS, Windows working set)",
  subject_private_bytes: "The subject's private memory (Linux RssAnon, Windows private bytes)",
  system_available_bytes: 'System memory available (Linux MemAvailable, Windows available physical)',
};

/**
 * A WSL 2 VM's GPU memory on its Windows host (C27), added to a cell by probes/host-vm-memory.ts:
 * attrs.counter is shared or dedicated, attrs.vm_pids the VM processes, attrs.samples how many.
 */
// Tolerances as the memory probes' own readings have (no Windows run has measured these yet); the
// baseline is whatever else the VM holds, so it is given more room.
export const hostVmMetrics: MetricSpec[] = [
  {
    name: 'host_vm_baseline_bytes',
    unit: 'bytes',
    description: "The WSL 2 VM process's (vmmemWSL) PDH GPU Process Memory on its Windows host before the probe ran",
    tolerance: { relative: 0.25, absolute: 64 * MiB },
  },
  {
    name: 'host_vm_peak_bytes',
    unit: 'bytes',
    description: 'The same counter: its highest reading while the probe ran',
    tolerance: { relative: 0.05, absolute: 16 * MiB },
  },
  {
    name: 'host_vm_growth_bytes',
    unit: 'bytes',
    description: 'The same counter: peak minus baseline (pinned memory shows in Shared Usage)',
    tolerance: { relative: 0.05, absolute: 16 * MiB },
  },
];

export const memoryMetrics: MetricSpec[] = [
  { name: 'alloc_ms', unit: 'ms', description: 'Time of the allocation call', tolerance: { relative: 0.7 } },
  {
    name: 'touch_ms',
    unit: 'ms',
    description: 'Time to touch every page (memset from the host; cuMemsetD32 for device memory)',
    tolerance: { relative: 0.45 },
  },
  { name: 'free_ms', unit: 'ms', description: 'Time of the free call', tolerance: { relative: 0.7 } },
  {
    name: 'device_growth_bytes',
    unit: 'bytes',
    description: 'Growth of a device-memory source from baseline to after-touch (attrs.source names it)',
    tolerance: { relative: 0.05, absolute: 4 * MiB },
  },
  {
    name: 'host_growth_bytes',
    unit: 'bytes',
    description: "Growth of the subject's resident set from baseline to after-touch",
    tolerance: { relative: 0.05, absolute: 16 * MiB },
  },
];
