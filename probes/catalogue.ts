/**
 * The catalogue of probes and of the facts and metrics each one produces: names, units and
 * descriptions. The matrix is validated against it, and the reports use it to explain results.
 * It must match what the cudaprobe binary lists (checked in the tests).
 */
import { z } from 'zod';
import type { Unit } from '../core/units.ts';
import type { Platform } from '../runners/transport.ts';

export interface FactSpec {
  name: string;
  description: string;
  /** The values a classification can take, where it is one. */
  values?: readonly (string | boolean | number)[];
}

export interface MetricSpec {
  name: string;
  unit: Unit;
  description: string;
}

export interface ProbeSpec {
  name: string;
  title: string;
  /** Claim ids from CLAIMS.md that this probe decides. */
  claims: string[];
  description: string;
  platforms: Platform[];
  /** Parameters, as the matrix writes them (validated there, passed as --param NAME=VALUE). */
  params: z.ZodObject;
  facts: FactSpec[];
  metrics: MetricSpec[];
}

const environments = ['linux', 'wsl2', 'wddm', 'tcc', 'mcdm'] as const;

const sysinfo: ProbeSpec = {
  name: 'sysinfo',
  title: 'System information',
  claims: ['C4'],
  description:
    'What a result belongs to: OS and build, driver and CUDA versions, GPU, memory, PCIe link, driver model, ' +
    'the CUDA runtime library, and the environment detected from evidence (never from a label).',
  platforms: ['linux', 'windows'],
  params: z.strictObject({}),
  facts: [
    { name: 'environment', description: 'Environment detected from evidence: WSL markers on Linux, the driver model on Windows', values: environments },
    { name: 'os_family', description: 'Operating system family', values: ['linux', 'windows'] },
    { name: 'os_name', description: 'Operating system name and version' },
    { name: 'os_build', description: 'Windows build number (RtlGetVersion)' },
    { name: 'kernel', description: 'Kernel release (uname -r) or Windows version' },
    { name: 'arch', description: 'CPU architecture' },
    { name: 'wine_version', description: 'Wine version, when the Windows build runs under Wine' },
    { name: 'wsl', description: 'Running under WSL (a Microsoft kernel or /dev/dxg)', values: [true, false] },
    { name: 'wsl_version', description: 'WSL version (1 or 2)', values: [1, 2] },
    { name: 'container', description: 'Container kind the probe ran in (docker, podman, kubernetes, containerd)' },
    { name: 'container_runtime', description: 'Container runtime that provided the GPU ("nvidia" when the NVIDIA runtime injected the driver)' },
    { name: 'hags', description: 'Hardware-accelerated GPU scheduling is on (Windows registry HwSchMode = 2)', values: [true, false] },
    { name: 'tool_version', description: 'cudaprobe version' },
    { name: 'driver_found', description: 'The CUDA driver library (libcuda / nvcuda.dll) could be loaded', values: [true, false] },
    { name: 'driver_library', description: 'Which CUDA driver library was loaded' },
    { name: 'driver_version', description: 'Driver version string (NVML)' },
    { name: 'cuda_driver_version', description: 'CUDA version the driver supports (cuDriverGetVersion)' },
    { name: 'nvml_found', description: 'NVML could be loaded and initialised', values: [true, false] },
    { name: 'cudart_found', description: 'A CUDA runtime library (libcudart / cudart64_*.dll) was found', values: [true, false] },
    { name: 'cudart_library', description: 'Which CUDA runtime library was loaded' },
    { name: 'cudart_version', description: 'CUDA runtime version (cudaRuntimeGetVersion)' },
    { name: 'device_count', description: 'CUDA devices the driver reports' },
    { name: 'gpu_index', description: 'CUDA device index the probes used' },
    { name: 'gpu_name', description: 'GPU name' },
    { name: 'gpu_uuid', description: 'GPU UUID' },
    { name: 'compute_capability', description: 'Compute capability (major.minor)' },
    { name: 'memory_total_bytes', description: 'Device memory (cuDeviceTotalMem)' },
    { name: 'nvml_memory_total_bytes', description: 'Device memory as NVML reports it' },
    { name: 'multiprocessors', description: 'Streaming multiprocessors' },
    { name: 'pci_bus_id', description: 'PCI bus id' },
    { name: 'pcie_gen_current', description: 'Current PCIe link generation (may drop at idle)' },
    { name: 'pcie_width_current', description: 'Current PCIe link width' },
    { name: 'pcie_gen_max', description: 'Maximum PCIe link generation of the device and slot' },
    { name: 'pcie_width_max', description: 'Maximum PCIe link width' },
    { name: 'tcc_driver', description: 'CU_DEVICE_ATTRIBUTE_TCC_DRIVER (true only under TCC)', values: [true, false] },
    { name: 'driver_model', description: 'Driver model from NVML (Windows only: wddm, tcc, mcdm)', values: ['wddm', 'tcc', 'mcdm'] },
    { name: 'driver_model_pending', description: 'Driver model after the next reboot (NVML)', values: ['wddm', 'tcc', 'mcdm'] },
  ],
  metrics: [],
};

export const catalogue: readonly ProbeSpec[] = [sysinfo];

export function probeSpec(name: string): ProbeSpec | undefined {
  return catalogue.find((p) => p.name === name);
}

export function probeNames(): string[] {
  return catalogue.map((p) => p.name);
}

/** The spec of "probe.fact" / "probe.metric" names used by expectations. */
export function resolveResultName(
  qualified: string,
  kind: 'fact' | 'metric',
): { probe: ProbeSpec; fact?: FactSpec; metric?: MetricSpec } | undefined {
  const dot = qualified.indexOf('.');
  if (dot <= 0) return undefined;
  const probe = probeSpec(qualified.slice(0, dot));
  const name = qualified.slice(dot + 1);
  if (!probe) return undefined;
  if (kind === 'fact') {
    const fact = probe.facts.find((f) => f.name === name);
    return fact ? { probe, fact } : undefined;
  }
  const metric = probe.metrics.find((m) => m.name === name);
  return metric ? { probe, metric } : undefined;
}

/** Every "probe.name" of a kind, for "did you mean" suggestions. */
export function allResultNames(kind: 'fact' | 'metric'): string[] {
  return catalogue.flatMap((p) => (kind === 'fact' ? p.facts : p.metrics).map((x) => `${p.name}.${x.name}`));
}

/** Parameters as cudaprobe takes them: --param NAME=VALUE, lists joined by commas. */
export function paramArgs(params: Record<string, unknown>): string[] {
  const args: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(',') : String(value);
    args.push('--param', `${name}=${text}`);
  }
  return args;
}
