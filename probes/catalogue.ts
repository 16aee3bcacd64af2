/**
 * The catalogue of probes and of the facts and metrics each one produces: names, units and
 * descriptions. The matrix is validated against it, and the reports use it to explain results.
 * It must match what the cudaprobe binary lists (checked in the tests).
 */
import { z } from 'zod';
import { formatValue, type Unit } from '../core/units.ts';
import type { Platform } from '../transports/transport.ts';
import type { MetricRecord, ProbeRecord, Scalar } from './protocol.ts';
import { factEvidence, fmt, largest, mean, metricsOf, num, signed, type SummaryLine } from './summary-lines.ts';

export interface FactSpec {
  name: string;
  description: string;
  /** The values a classification can take, where it is one. */
  values?: readonly (string | boolean | number)[];
  /**
   * The platforms where the fact can have a value (default: every platform of its probe).
   * Elsewhere it is null by design, and the console says so once rather than list the nulls.
   */
  platforms?: readonly Platform[];
}

export interface MetricSpec {
  name: string;
  unit: Unit;
  description: string;
  /**
   * The minimum effect: a smaller move is never a change, however significant. A larger one is a
   * change only beyond the noise measured from the key's runs (behaviour/noise.ts). One
   * rule, or several of which the first whose `where` matches the series' attrs applies.
   */
  tolerance?: MetricTolerance | MetricTolerance[];
}

/**
 * A metric's minimum effect. A move is |a - b| / max(|a|, |b|) (so that a -> b and b -> a are
 * judged alike); it is no change when at most `relative`, or when |a - b| is at most `absolute`
 * (in the metric's unit: for values near zero, where any fraction is large). First calibrated
 * as the noise of the four H200 runs of driver 580.159.04 (2026-11-29 to 12-01); since issue 32
 * the noise is measured, and these are the floor under it (docs/records.md, "Noise").
 */
export interface MetricTolerance {
  relative: number;
  absolute?: number;
  /** Only for series whose attrs have these values ({below: N}: a number under N). */
  where?: Record<string, string | number | boolean | { below: number }>;
}

export interface ProbeSpec {
  name: string;
  title: string;
  /** Claim ids (docs/claims.md) that this probe decides. */
  claims: string[];
  description: string;
  platforms: Platform[];
  /** Parameters, as the matrix writes them (validated there, passed as --param NAME=VALUE). */
  params: z.ZodObject;
  facts: FactSpec[];
  metrics: MetricSpec[];
  /** The --quick profile: parameters that keep it small, for CI-sized runs (the matrix's own still win). */
  quick?: Record<string, unknown>;
  /**
   * How long it takes with its default parameters in the committed H200 run
   * (records/driver-580.159.04/h200-linux-2026-12-02-issue24/events.jsonl, rounded): shards are balanced by it
   * (without it, 1 s).
   */
  typicalMs?: number;
  /** The numbers behind its claims: rows of the report's metric table (BEHAVIOUR.md, behaviour.html). */
  keyMetrics?: KeyMetric[];
  /**
   * The console's lines for a cell that passed, under "what the driver does" (helpers in
   * ./summary-lines.ts). Without it the console lists its key metrics' values.
   */
  summary?: (records: readonly ProbeRecord[]) => SummaryLine[];
  /**
   * Set for a probe that can exhaust memory or hang a desktop: why. It is left out of `probes:
   * all` and runs only where a matrix names it (or --probe names it exactly); bounded by its
   * parameters, and last on its target (it is at the end of the catalogue).
   */
  optIn?: string;
  /**
   * Sampled from outside too: on a WSL 2 target reached from its Windows host, that host's PDH
   * GPU Process Memory counters of the VM process while it runs (probes/host-vm-memory.ts, C27);
   * its metrics then include hostVmMetrics.
   */
  hostVmMemory?: true;
}

/** A key metric: one number per record, picked from the probe's metrics. */
export interface KeyMetric {
  /** A metric of the probe (its name without the probe's). */
  metric: string;
  label: string;
  /** Attributes the metric must have. */
  where?: Record<string, Scalar>;
  /** Of several matches, the one of the largest attrs.size_bytes (the steady-state transfer). */
  largestSize?: boolean;
  /**
   * How a negative value reads where its sign turns the label's meaning ({} its magnitude,
   * formatted): a negative "allocated past free VRAM" is an allocation that stopped under it.
   */
  negative?: string;
}

const MiB = 1024 * 1024;
const environments = ['linux', 'wsl2', 'wsl2-docker', 'wddm', 'tcc', 'mcdm'] as const;
const vramValues = [true, false, 'partial'] as const;

// Parameter helpers: every parameter has a default (the same as cudaprobe's, checked in tests).
const numbers = (def: number[], what: string) => z.array(z.number().positive()).min(1).default(def).describe(what);
const nonNegNumbers = (def: number[], what: string) => z.array(z.number().nonnegative()).min(1).default(def).describe(what);
const positive = (def: number, what: string) => z.number().positive().default(def).describe(what);
const count = (def: number, min: number, what: string) => z.number().int().min(min).default(def).describe(what);
const apis = z
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

const memoryMetrics: MetricSpec[] = [
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
    {
      name: 'environment',
      description:
        'Environment detected from evidence: WSL markers on Linux (wsl2-docker: inside a container as well), the driver model on Windows',
      values: environments,
    },
    { name: 'os_family', description: 'Operating system family', values: ['linux', 'windows'] },
    { name: 'os_name', description: 'Operating system name and version' },
    { name: 'os_build', description: 'Windows build number (RtlGetVersion)' },
    { name: 'kernel', description: 'Kernel release (uname -r) or Windows version' },
    { name: 'arch', description: 'CPU architecture' },
    { name: 'wine_version', description: 'Wine version, when the Windows build runs under Wine' },
    { name: 'wsl', description: 'Running under WSL (a Microsoft kernel or /dev/dxg)', values: [true, false] },
    { name: 'wsl_version', description: 'WSL version (1 or 2)', values: [1, 2] },
    { name: 'container', description: 'Container kind the probe ran in (docker, podman, kubernetes, containerd)' },
    {
      name: 'container_runtime',
      description: 'Container runtime that provided the GPU ("nvidia" when the NVIDIA runtime injected the driver)',
    },
    {
      name: 'hags_setting',
      description:
        'Hardware-accelerated GPU scheduling is set on in the registry (HwSchMode = 2; 1 = off): the setting, which takes effect at the next boot and only where the driver supports it; null when the value is absent (the driver default applies)',
      values: [true, false],
    },
    {
      name: 'hags_enabled',
      description:
        "The hardware GPU scheduler runs now on the device's adapter (D3DKMTQueryAdapterInfo, KMTQAITYPE_WDDM_2_7_CAPS: HwSchEnabled)",
      values: [true, false],
    },
    {
      name: 'hags',
      description: 'The name hags_setting had in records before it was renamed (the registry setting, not whether the scheduler runs)',
      values: [true, false],
    },
    { name: 'tool_version', description: 'cudaprobe version' },
    { name: 'driver_found', description: 'The CUDA driver library (libcuda / nvcuda.dll) could be loaded', values: [true, false] },
    { name: 'driver_library', description: 'Which CUDA driver library was loaded' },
    {
      name: 'driver_library_ignored',
      description:
        "Inside WSL2: other libcuda.so.1 files in the distribution (a Linux driver installed there), passed over for WSL's /usr/lib/wsl/lib/libcuda.so.1",
    },
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
    {
      name: 'display_attached',
      description:
        'A display (monitor) is connected to the GPU (nvmlDeviceGetDisplayMode): its copies and kernels share it with the desktop (C28)',
      values: [true, false],
    },
    {
      name: 'display_active',
      description: 'A display is initialised on the GPU, e.g. an X server or the Windows desktop (nvmlDeviceGetDisplayActive)',
      values: [true, false],
    },
  ],
  metrics: [],
  typicalMs: 280,
};

const pinnedVram: ProbeSpec = {
  name: 'pinned-vram',
  title: 'Does pinned host memory count against VRAM?',
  claims: ['C1', 'C3', 'C4', 'C27'],
  description:
    'Pins N GiB (one fresh subject process per size and API), touches every page, and compares the growth of every ' +
    'device-memory source with a device-memory (cuMemAlloc) control of the same size and with registered memory. ' +
    '"true" when the device source grew by at least half of N, "false" by at most 5 %, else "partial".',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    sizes_gib: numbers([1, 2, 4], 'Sizes to pin, GiB (one subject each)'),
    apis,
    register_size_gib: z.number().nonnegative().default(1).describe('Size of the registered-memory series, GiB (0: off)'),
    wait_s: z.number().nonnegative().max(60).default(0.1).describe('Wait after free before the after-wait reading, s'),
  }),
  facts: [
    { name: 'counts_as_vram', description: 'cuMemHostAlloc memory counts against device memory (largest size)', values: vramValues },
    {
      name: 'counts_as_vram_runtime',
      description: 'cudaMallocHost memory counts against device memory (largest size)',
      values: vramValues,
    },
    { name: 'registered_counts_as_vram', description: 'cuMemHostRegister-ed memory counts against device memory', values: vramValues },
    {
      name: 'control_counts_as_vram',
      description: 'The cuMemAlloc control counts against device memory (checks the method: expected true)',
      values: vramValues,
    },
  ],
  metrics: [
    ...memoryMetrics,
    {
      name: 'device_growth_per_gib_bytes',
      unit: 'bytes',
      description: 'Device growth per GiB pinned on the deciding source (a few MiB: page tables; a GiB: charged to the GPU)',
      tolerance: { relative: 0.05, absolute: MiB },
    },
    ...hostVmMetrics,
  ],
  hostVmMemory: true,
  quick: { sizes_gib: [0.25], register_size_gib: 0.25, wait_s: 0.1 },
  typicalMs: 18_300,
  keyMetrics: [
    {
      metric: 'device_growth_per_gib_bytes',
      label: 'device growth per GiB pinned, cuMemHostAlloc (deciding source)',
      where: { api: 'driver', kind: 'pinned' },
    },
    {
      metric: 'device_growth_per_gib_bytes',
      label: 'device growth per GiB pinned, cudaMallocHost (deciding source)',
      where: { api: 'runtime', kind: 'pinned' },
    },
  ],
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const perGib = metricsOf(records, 'device_growth_per_gib_bytes');
    if (perGib.length) {
      const sources = [...new Set(perGib.map((m) => m.attrs?.source))];
      const one = sources.length === 1 && sources[0];
      const part = (m: MetricRecord) =>
        `${fmt(m)} ${m.attrs?.kind === 'pinned' || m.attrs?.kind === undefined ? (m.attrs?.api ?? '') : `${m.attrs.kind}${m.attrs?.api === 'driver' ? '' : ` (${m.attrs?.api})`}`}${one ? '' : ` on ${m.attrs?.source}`}`.trim();
      lines.push(['device growth per GiB pinned', `${perGib.map(part).join(', ')}${one ? ` (on ${one}, the deciding source)` : ''}`]);
    }
    // The largest size, driver API: what pinning did to the deciding source and to the host,
    // beside the cuMemAlloc control of the same size.
    const pinned = metricsOf(records, 'device_growth_bytes', { kind: 'pinned', api: 'driver' });
    const size = largest(pinned, 'size_bytes');
    const source = perGib.find((m) => m.attrs?.api === 'driver')?.attrs?.source ?? factEvidence(records, 'counts_as_vram')?.source;
    if (size !== undefined && typeof source === 'string') {
      const at = { size_bytes: size, source };
      const dev = metricsOf(records, 'device_growth_bytes', { ...at, kind: 'pinned', api: 'driver' })[0];
      const host = metricsOf(records, 'host_growth_bytes', { size_bytes: size, kind: 'pinned', api: 'driver' })[0];
      const control = metricsOf(records, 'device_growth_bytes', { ...at, kind: 'device' })[0];
      lines.push([
        `${formatValue(size, 'bytes')} pinned (driver API)`,
        `device ${signed(dev)}, host ${signed(host)}${control ? `; ${formatValue(size, 'bytes')} of cuMemAlloc: device ${signed(control)}` : ''} (${source})`,
      ]);
    }
    return lines;
  },
};

const pinnedRelease: ProbeSpec = {
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
    const byApi = (ms: MetricRecord[], f: (m: MetricRecord) => string) =>
      ms.map((m) => `${f(m)}${m.attrs?.api ? ` ${m.attrs.api}` : ''}`).join(', ');
    const delay = metricsOf(records, 'release_delay_s');
    if (delay.length)
      lines.push([
        'returned after free',
        byApi(delay, (m) => (m.value === null ? `not within the waits${m.reason ? ` (${m.reason})` : ''}` : `in ${fmt(m)}`)),
      ]);
    const exit = metricsOf(records, 'exit_release_delay_s');
    if (exit.length) lines.push(['settled after exit', byApi(exit, (m) => `in ${fmt(m)}`)]);
    // The last reading after free, per API.
    const retained = metricsOf(records, 'retained_after_free_bytes');
    const last = [...new Set(retained.map((m) => m.attrs?.api))].map(
      (api) => retained.filter((m) => m.attrs?.api === api).sort((a, b) => num(b.attrs?.wait_s) - num(a.attrs?.wait_s))[0]!,
    );
    if (last.length)
      lines.push([
        'still held after free',
        byApi(last, (m) => `${fmt(m)}${typeof m.attrs?.wait_s === 'number' ? ` at ${m.attrs.wait_s} s` : ''}`),
      ]);
    return lines;
  },
};

const multiProcessPinned: ProbeSpec = {
  name: 'multi-process-pinned',
  title: 'Do several processes pinning at once add up?',
  claims: ['C14'],
  description: 'K subjects each pin N; readings after all have pinned, after each frees and after each exits.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    processes: z.number().int().min(1).max(16).default(2).describe('Subjects pinning at once'),
    size_gib: positive(1, 'Size each subject pins, GiB'),
  }),
  facts: [
    {
      name: 'vram_growth',
      description: 'Device growth with all pinned: none, sum-of-processes (within 25 % of K x N), or partial',
      values: ['none', 'sum-of-processes', 'partial'],
    },
  ],
  metrics: [
    {
      name: 'device_growth_bytes',
      unit: 'bytes',
      description: 'Growth of a device source with all subjects pinned (attrs.source)',
      tolerance: { relative: 0.05, absolute: 4 * MiB },
    },
    {
      name: 'system_growth_bytes',
      unit: 'bytes',
      description: 'Drop of available system memory with all subjects pinned',
      tolerance: { relative: 0.05, absolute: 64 * MiB },
    },
  ],
  quick: { size_gib: 0.25 },
  typicalMs: 1_800,
  summary: (records) => {
    const growth = metricsOf(records, 'device_growth_bytes');
    if (!growth.length) return [];
    const source = factEvidence(records, 'vram_growth')?.source;
    const dev = growth.find((m) => m.attrs?.source === source) ?? growth[0]!;
    const system = metricsOf(records, 'system_growth_bytes')[0];
    const processes = dev.attrs?.processes;
    return [[`${processes ?? 'all'} processes pinned`, `device ${signed(dev)} (${dev.attrs?.source}), system memory ${signed(system)}`]];
  },
};

const pinnedCeiling: ProbeSpec = {
  name: 'pinned-ceiling',
  title: 'How much can be pinned?',
  claims: ['C12', 'C11', 'C22', 'C27'],
  description:
    'Pre-fills VRAM with cuMemAlloc to each level, then pins chunks until a pin fails or the safety cap is reached: ' +
    'the lower of max_gib (16 GiB) and max_fraction (0.5) of the available system memory. A level that pins more ' +
    'than the VRAM left free decides that the ceiling does not track free VRAM; then, with the runtime API, the same ' +
    'with and without cudaDeviceReset first, alternated.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    chunk_mib: positive(256, 'Size of each pinned chunk, MiB'),
    // 16 GiB: above the VRAM a 90 % pre-fill leaves free on common GPUs (on the H200: 13.9 GiB), so
    // the question is decided. The committed H200 runs pinned 7 x 1 GiB in 5.9-7.2 s (at most 1.02 s
    // per GiB, start-up included): 7 x 16 GiB, extrapolated, at most about 2 min of the 10 min timeout.
    max_gib: positive(16, 'Safety cap: never pin more than this, GiB (nor more than max_fraction of the available memory)'),
    max_fraction: z.number().positive().max(0.9).default(0.5).describe('Safety cap: never pin more than this fraction of available memory'),
    prefill_percent: z.array(z.number().min(0).max(95)).min(1).default([0, 50, 90]).describe('VRAM pre-fill levels, % of free'),
    reset_rounds: z.number().int().min(0).max(10).default(2).describe('Rounds of the with/without cudaDeviceReset comparison (0: off)'),
    registered_rounds: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(1)
      .describe('Rounds of malloc + cuMemHostRegister chunks to the same cap, no pre-fill (0: off)'),
  }),
  facts: [
    {
      name: 'limited_by',
      description: 'What stopped the first level: allocation-failure (a real ceiling) or safety-cap',
      values: ['allocation-failure', 'safety-cap'],
    },
    {
      name: 'tracks_free_vram',
      description:
        'The ceiling falls as VRAM fills; false also when a level pinned more than the VRAM left free (null when every level hit the safety cap below it)',
      values: [true, false],
    },
    {
      name: 'reset_helps',
      description: 'cudaDeviceReset first gives a higher ceiling or clearly faster pinning (C11)',
      values: [true, false],
    },
    {
      name: 'registered_limited_by',
      description: 'What stopped registering malloc memory (cuMemHostRegister chunks): allocation-failure or safety-cap (C22)',
      values: ['allocation-failure', 'safety-cap'],
    },
    {
      name: 'host_register_supported',
      description: 'CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: cudaHostRegister works on this device (C22)',
      values: [true, false],
    },
    {
      name: 'host_pointer_for_registered_mem',
      description:
        "CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: the GPU reaches registered memory at the CPU's address (C22)",
      values: [true, false],
    },
    {
      name: 'pageable_memory_access',
      description: 'CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: the GPU reaches pageable memory without registering it (C22)',
      values: [true, false],
    },
  ],
  metrics: [
    {
      name: 'ceiling_bytes',
      unit: 'bytes',
      description: 'Bytes pinned before failure or the cap (attrs: prefill_percent or variant: reset, no-reset, registered; stopped_by)',
      tolerance: { relative: 0.05 },
    },
    { name: 'free_vram_bytes', unit: 'bytes', description: 'Free VRAM after the pre-fill', tolerance: { relative: 0.02 } },
    { name: 'chunk_alloc_ms', unit: 'ms', description: 'Median time to pin one chunk', tolerance: { relative: 0.7 } },
    ...hostVmMetrics,
  ],
  hostVmMemory: true,
  quick: { max_gib: 0.5, prefill_percent: [0, 90], reset_rounds: 1 },
  typicalMs: 88_500,
  keyMetrics: [
    { metric: 'ceiling_bytes', label: 'pinned ceiling, VRAM not pre-filled', where: { prefill_percent: 0 } },
    { metric: 'ceiling_bytes', label: 'registered ceiling (malloc + cuMemHostRegister)', where: { variant: 'registered' } },
  ],
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const levels = metricsOf(records, 'ceiling_bytes').filter((m) => typeof m.attrs?.prefill_percent === 'number');
    if (levels.length) {
      const stops = [...new Set(levels.map((m) => m.attrs?.stopped_by))];
      const part = (m: MetricRecord) => `${fmt(m)} at ${m.attrs?.prefill_percent} %${stops.length > 1 ? ` (${m.attrs?.stopped_by})` : ''}`;
      lines.push([
        'ceiling by VRAM pre-fill',
        `${levels.map(part).join(', ')}${stops.length === 1 && stops[0] ? ` (stopped by ${stops[0]})` : ''}`,
      ]);
    }
    const variant = (v: string) => metricsOf(records, 'chunk_alloc_ms', { variant: v });
    const [reset, noReset] = [variant('reset'), variant('no-reset')];
    if (reset.length && noReset.length) {
      const ceiling = (v: string) => formatValue(mean(metricsOf(records, 'ceiling_bytes', { variant: v }).map((m) => m.value)), 'bytes');
      lines.push([
        'with / without cudaDeviceReset',
        `${ceiling('reset')} / ${ceiling('no-reset')} pinned, ${formatValue(mean(reset.map((m) => m.value)), 'ms')} / ${formatValue(mean(noReset.map((m) => m.value)), 'ms')} per chunk`,
      ]);
    }
    return lines;
  },
};

const transferBandwidth: ProbeSpec = {
  name: 'transfer-bandwidth',
  title: 'Pageable versus pinned copy bandwidth',
  claims: ['C8', 'C28'],
  description:
    'H2D and D2H from pre-touched pageable and from pinned memory, median of the timed copies after warm-up, timed with events; ' +
    'then again with fill_percent of the free VRAM allocated and written (a busy card), never leaving less than fill_reserve_gib free.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    sizes_mib: numbers([1, 16, 256, 1024], 'Copy sizes, MiB'),
    repetitions: count(20, 20, 'Timed copies per size (at least 20)'),
    warmup: count(2, 0, 'Untimed copies first'),
    fill_percent: z
      .array(z.number().min(0).max(90))
      .min(1)
      .default([0, 90])
      .describe('Rounds with this percentage of the free VRAM held while copying (0: the idle card; at most 90)'),
    fill_reserve_gib: z
      .number()
      .nonnegative()
      .default(8)
      .describe('The fill never leaves less free VRAM than this, GiB (a shared card keeps room for others)'),
  }),
  facts: [],
  metrics: [
    {
      name: 'bandwidth_gbps',
      unit: 'GB/s',
      description: 'Copy bandwidth (attrs: direction h2d|d2h, memory pageable|pinned, size_bytes)',
      tolerance: [
        // 1 MiB copies are latency-bound: 6.7 % apart between the first four H200 runs, 10.7 %
        // (with 90 % of VRAM filled) between runs of 2026-12-02 and 2026-12-04.
        { where: { memory: 'pinned', size_bytes: { below: 16 * MiB } }, relative: 0.15 },
        { where: { memory: 'pinned' }, relative: 0.03 },
        { relative: 0.45 },
      ],
    },
    {
      name: 'pageable_pinned_ratio',
      unit: 'ratio',
      description: 'Pageable bandwidth over pinned bandwidth (attrs: direction, size_bytes)',
      tolerance: { relative: 0.45 },
    },
    {
      name: 'host_memcpy_gbps',
      unit: 'GB/s',
      description:
        'Host memcpy bandwidth of the same size between two pageable buffers: the control for pageable copies (a slower host slows both)',
      tolerance: { relative: 0.45 },
    },
    {
      name: 'pcie_theoretical_gbps',
      unit: 'GB/s',
      description: "The link's payload rate from its maximum generation and width",
      tolerance: { relative: 0 },
    },
    {
      name: 'pinned_fraction_of_link',
      unit: 'ratio',
      description: 'Best pinned bandwidth over the theoretical link rate (idle card)',
      tolerance: { relative: 0.03 },
    },
    {
      name: 'fill_bytes',
      unit: 'bytes',
      description: 'Device memory held during a filled round (attrs.fill_percent; the copies of that round carry it too)',
      tolerance: { relative: 0.1 },
    },
    {
      name: 'vram_used_fraction',
      unit: 'ratio',
      description: 'Share of VRAM in use once filled (1 - free / total; attrs.fill_percent)',
      tolerance: { relative: 0.1 },
    },
    {
      name: 'filled_idle_ratio',
      unit: 'ratio',
      description: "Pinned bandwidth of the largest copy with VRAM filled over the idle card's (attrs: direction, fill_percent)",
      tolerance: { relative: 0.05 },
    },
  ],
  quick: { sizes_mib: [1, 64] },
  typicalMs: 18_800,
  keyMetrics: [
    { metric: 'bandwidth_gbps', label: 'H2D pinned', where: { direction: 'h2d', memory: 'pinned' }, largestSize: true },
    { metric: 'bandwidth_gbps', label: 'D2H pinned', where: { direction: 'd2h', memory: 'pinned' }, largestSize: true },
    { metric: 'bandwidth_gbps', label: 'H2D pageable', where: { direction: 'h2d', memory: 'pageable' }, largestSize: true },
    { metric: 'pageable_pinned_ratio', label: 'H2D pageable / pinned', where: { direction: 'h2d' }, largestSize: true },
    { metric: 'filled_idle_ratio', label: 'H2D pinned, VRAM filled / idle', where: { direction: 'h2d' } },
    { metric: 'filled_idle_ratio', label: 'D2H pinned, VRAM filled / idle', where: { direction: 'd2h' } },
  ],
  summary: (all) => {
    const lines: SummaryLine[] = [];
    // The idle card's series; the filled rounds' (attrs.fill_percent) have a line of their own.
    const records = all.filter((r) => r.type !== 'metric' || r.attrs?.fill_percent === undefined);
    const bw = metricsOf(records, 'bandwidth_gbps');
    const size = largest(bw, 'size_bytes');
    if (size !== undefined) {
      const at = formatValue(size, 'bytes');
      const dirs = (name: string, where: Record<string, Scalar>) =>
        ['h2d', 'd2h']
          .flatMap((d) => metricsOf(records, name, { ...where, direction: d, size_bytes: size }).map((m) => `${fmt(m)} ${d}`))
          .join(', ');
      lines.push([`pinned at ${at}`, dirs('bandwidth_gbps', { memory: 'pinned' })]);
      lines.push([`pageable at ${at}`, dirs('bandwidth_gbps', { memory: 'pageable' })]);
      const ratio = dirs('pageable_pinned_ratio', {});
      if (ratio) lines.push([`pageable/pinned at ${at}`, ratio]);
    }
    const link = metricsOf(records, 'pcie_theoretical_gbps')[0];
    if (link) {
      const fractions = ['h2d', 'd2h'].flatMap((d) =>
        metricsOf(records, 'pinned_fraction_of_link', { direction: d }).map(
          (m) => `${m.value === null ? '—' : formatValue(m.value * 100, 'percent')} ${d}`,
        ),
      );
      const what = typeof link.attrs?.gen === 'number' ? `gen${link.attrs.gen} x${link.attrs.width}, ` : '';
      lines.push(['PCIe link', `${what}${fmt(link)}${fractions.length ? `; best pinned reaches ${fractions.join(', ')}` : ''}`]);
    }
    for (const used of metricsOf(all, 'vram_used_fraction')) {
      const fill = used.attrs?.fill_percent as number;
      const ratios = ['h2d', 'd2h'].flatMap((d) =>
        metricsOf(all, 'filled_idle_ratio', { direction: d, fill_percent: fill }).map((m) => `${fmt(m)} ${d}`),
      );
      lines.push([
        `VRAM ${used.value === null ? '—' : formatValue(used.value * 100, 'percent')} in use`,
        `pinned bandwidth ${ratios.join(', ') || '—'} of the idle card's`,
      ]);
    }
    return lines;
  },
};

const eventTiming: ProbeSpec = {
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
    const elapsed = metricsOf(records, 'elapsed_us').sort((a, b) => num(a.attrs?.target_us) - num(b.attrs?.target_us))[0];
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

const eventHostGap: ProbeSpec = {
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

const syncLatency: ProbeSpec = {
  name: 'sync-latency',
  title: 'Launch + stream synchronize latency',
  claims: ['C5'],
  description: 'N x (no-op kernel + cuStreamSynchronize), each timed with the host clock after warm-up.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({ iterations: count(10000, 100, 'Timed iterations') }),
  facts: [],
  metrics: [
    { name: 'p50_us', unit: 'us', description: 'Median latency', tolerance: { relative: 0.15 } },
    { name: 'p99_us', unit: 'us', description: '99th percentile latency', tolerance: { relative: 0.3 } },
    { name: 'mean_us', unit: 'us', description: 'Mean latency', tolerance: { relative: 0.15 } },
    { name: 'min_us', unit: 'us', description: 'Smallest latency', tolerance: { relative: 0.15 } },
  ],
  quick: { iterations: 1000 },
  typicalMs: 450,
  keyMetrics: [
    { metric: 'p50_us', label: 'launch + synchronize, median' },
    { metric: 'p99_us', label: 'launch + synchronize, 99th percentile' },
  ],
  summary: (records) => {
    const [p50, p99, avg, min] = ['p50_us', 'p99_us', 'mean_us', 'min_us'].map((n) => metricsOf(records, n)[0]);
    if (!p50 && !p99) return [];
    const iterations = p50?.attrs?.iterations;
    return [
      [
        'launch + synchronize',
        `p50 ${fmt(p50)}, p99 ${fmt(p99)} (mean ${fmt(avg)}, min ${fmt(min)}${iterations ? `; ${iterations} iterations` : ''})`,
      ],
    ];
  },
};

const streamPriority: ProbeSpec = {
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
    const [least, greatest] = ['priority_least', 'priority_greatest'].map((n) => metricsOf(records, n)[0]);
    if (least && greatest) lines.push(['priority range', `${least.value} (least) to ${greatest.value} (greatest)`]);
    return lines;
  },
};

const cudaGraph: ProbeSpec = {
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
    const [graph, plain, speedup] = ['graph_per_kernel_us', 'plain_per_kernel_us', 'graph_speedup'].map((n) => metricsOf(records, n)[0]);
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

const managedMemory: ProbeSpec = {
  name: 'managed-memory',
  title: 'Managed memory and concurrent access',
  claims: ['C13', 'C23'],
  description:
    'The managed-memory attributes, and a managed allocation written by the CPU, filled by a kernel and read back by the CPU ' +
    '(never concurrently: without concurrent access that is a fault).',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z.number().positive().max(1024).default(64).describe('Managed allocation, MiB (kept small: never more than free VRAM)'),
    // Opt-in: above 100 it oversubscribes, which can hang some GPUs (never on the lent H200).
    percent_of_free: z
      .number()
      .min(0)
      .max(150)
      .default(0)
      .describe(
        'Opt-in large step: one managed allocation of this % of free VRAM, filled by a kernel and read back (0: off; above 100 oversubscribes, bounded by half the available RAM)',
      ),
  }),
  facts: [
    { name: 'managed_supported', description: 'CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY', values: [true, false] },
    {
      name: 'concurrent_access',
      description: 'CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: CPU and GPU may touch managed memory at once',
      values: [true, false],
    },
    {
      name: 'pageable_access',
      description: 'CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: the GPU can access pageable memory',
      values: [true, false],
    },
    { name: 'roundtrip_ok', description: 'CPU write, GPU fill, CPU read back gave the right values', values: [true, false] },
    {
      name: 'large_roundtrip_ok',
      description: 'The percent_of_free step: the managed allocation, its GPU fill and CPU read back worked (C23)',
      values: [true, false],
    },
    {
      name: 'oversubscription_ok',
      description: 'The same, with percent_of_free above 100: managed memory past free VRAM works (C23; null when not asked for)',
      values: [true, false],
    },
  ],
  metrics: [
    { name: 'cpu_first_touch_ms', unit: 'ms', description: 'CPU writing the whole allocation first', tolerance: { relative: 0.5 } },
    { name: 'gpu_fill_ms', unit: 'ms', description: 'Kernel filling it (migration included)', tolerance: { relative: 0.5 } },
    { name: 'cpu_read_back_ms', unit: 'ms', description: 'CPU reading it back (migration included)', tolerance: { relative: 0.5 } },
    { name: 'free_vram_bytes', unit: 'bytes', description: 'Free VRAM before the percent_of_free step', tolerance: { relative: 0.02 } },
    { name: 'managed_bytes', unit: 'bytes', description: 'Size of the percent_of_free allocation', tolerance: { relative: 0.02 } },
    {
      name: 'large_gpu_fill_gbps',
      unit: 'GB/s',
      description: 'Kernel filling the percent_of_free allocation (first-touch migration or eviction included)',
      tolerance: { relative: 0.5 },
    },
    {
      name: 'large_cpu_read_back_ms',
      unit: 'ms',
      description: 'CPU reading it back at up to 4096 places, a page or more apart',
      tolerance: { relative: 0.5 },
    },
  ],
  quick: { size_mib: 16 },
  typicalMs: 400,
  summary: (records) => {
    const [touch, fill, back] = ['cpu_first_touch_ms', 'gpu_fill_ms', 'cpu_read_back_ms'].map((n) => metricsOf(records, n)[0]);
    if (!touch && !fill && !back) return [];
    const size = [touch, fill, back].find((m) => typeof m?.attrs?.size_bytes === 'number')?.attrs?.size_bytes as number | undefined;
    return [
      [
        `round trip${size ? ` of ${formatValue(size, 'bytes')}` : ''}`,
        `CPU first touch ${fmt(touch)}, GPU fill ${fmt(fill)}, CPU read back ${fmt(back)}`,
      ],
    ];
  },
};

const cudaLog: ProbeSpec = {
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
    const [pin, err] = ['lines_pin_only', 'lines_with_error'].map((n) => metricsOf(records, n)[0]);
    if (!pin && !err) return [];
    return [['lines logged', `${pin?.value ?? '—'} by a successful pin, ${err?.value ?? '—'} with a deliberate error`]];
  },
};

const windowsRegistry: ProbeSpec = {
  name: 'windows-registry',
  title: 'GraphicsDrivers registry values',
  claims: ['C10'],
  description:
    'Reads HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers (EnableGpuMemoryCompression, HwSchMode, TdrDelay, TdrLevel). ' +
    'Read only; the Win+Ctrl+Shift+B hot-key is never sent (a driver reset can break live work). Skipped off Windows.',
  platforms: ['windows'],
  params: z.strictObject({}),
  facts: [
    { name: 'gpu_memory_compression_value_exists', description: 'The EnableGpuMemoryCompression value exists', values: [true, false] },
  ],
  metrics: ['EnableGpuMemoryCompression', 'HwSchMode', 'TdrDelay', 'TdrLevel'].map((v) => ({
    name: `registry_${v}`,
    unit: 'count' as const,
    description: `DWORD value ${v}`,
    tolerance: { relative: 0 },
  })),
  typicalMs: 10,
  summary: (records) => {
    const values = records.filter((r): r is MetricRecord => r.type === 'metric' && r.name.startsWith('registry_') && r.value !== null);
    return values.length
      ? [['GraphicsDrivers values', values.map((m) => `${m.name.slice('registry_'.length)} ${m.value}`).join(', ')]]
      : [];
  },
};

const pairAttrs = 'attrs src and dst (CUDA device indices), peer (peer access enabled), size_bytes';
const p2p: ProbeSpec = {
  name: 'p2p',
  title: 'Peer access between GPUs, and MIG slices',
  claims: ['C15', 'C16', 'C17', 'C18', 'C19'],
  description:
    "Every pair of the GPUs outside MIG: cuDeviceCanAccessPeer, NVML's P2P status and link class (as nvidia-smi topo -m), " +
    "then copies both ways without and with peer access (bandwidth, and NVML's PCIe transmit rate during them), each " +
    'verified word by word, the host path beside them, the time of cuCtxEnablePeerAccess and of the first copy after it, and ' +
    'free VRAM on both devices before and after enabling and after a peer mapping. MIG slices: one process per MIG device ' +
    'UUID (MIG mode is read, never changed). Skipped, with its device facts, on a target with fewer than two GPUs.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z.number().min(1).max(4096).default(256).describe('Size of each copy, MiB'),
    repetitions: count(10, 3, 'Timed copies of each direction and mode (medians are reported)'),
    map_mib: z.number().min(2).max(4096).default(256).describe('The allocation whose peer mapping is measured, MiB'),
    mig_pin_mib: z.number().min(1).default(256).describe("Pinned in each MIG slice's process, MiB"),
  }),
  facts: [
    { name: 'device_count', description: 'CUDA devices the driver reports (cuDeviceGetCount)' },
    {
      name: 'nvml_topology_available',
      description: 'NVML has the topology and P2P-status calls (nvmlDeviceGetTopologyCommonAncestor, nvmlDeviceGetP2PStatus)',
      values: [true, false],
    },
    {
      name: 'mig_mode',
      description: 'MIG mode of the devices: enabled on one, disabled on all, or unsupported (read, never changed)',
      values: ['enabled', 'disabled', 'unsupported'],
    },
    { name: 'pair_count', description: 'Pairs of GPUs outside MIG (each once)' },
    {
      name: 'link_class',
      description:
        'The link of every pair as nvidia-smi topo -m names it (NV# for # NVLinks, PIX, PXB, PHB, NODE, SYS, internal); "mixed" when pairs differ; evidence per pair',
    },
    { name: 'can_access_peer', description: 'cuDeviceCanAccessPeer says yes both ways, for every pair', values: [true, false] },
    {
      name: 'nvml_p2p_read',
      description:
        "NVML's P2P read status of every pair (OK, CHIPSET_NOT_SUPPORTED, GPU_NOT_SUPPORTED, IOH_TOPOLOGY_NOT_SUPPORTED, DISABLED_BY_REGKEY, NOT_SUPPORTED, UNKNOWN; mixed)",
    },
    {
      name: 'capability_agrees',
      description: 'cuDeviceCanAccessPeer and NVML (read and write OK) agree, for every pair',
      values: [true, false],
    },
    {
      name: 'copy_intact_without_peer',
      description: 'Copies without peer access delivered every word, both ways, every pair',
      values: [true, false],
    },
    {
      name: 'enable_ok',
      description: 'cuCtxEnablePeerAccess succeeded both ways on every pair that can access its peer',
      values: [true, false],
    },
    {
      name: 'copy_intact_with_peer',
      description: 'Copies with peer access delivered every word, both ways, every pair',
      values: [true, false],
    },
    {
      name: 'staged_through_host',
      description:
        'A copy without peer access went through host memory on some pair: no faster than the host path and clearly slower than with peer access (or no peer path at all)',
      values: [true, false],
    },
    {
      name: 'enable_uses_vram',
      description: 'Enabling peer access, or a peer mapping, lowered free VRAM by more than 2 MiB on some device',
      values: [true, false],
    },
    {
      name: 'mig_memory_matches_profile',
      description: "Each MIG slice's process sees its profile's memory (cuMemGetInfo total within 2 % of NVML's)",
      values: [true, false],
    },
    {
      name: 'mig_pinned_charged',
      description: "Pinned memory in a slice's process lowered the slice's free memory (the thresholds of pinned-vram)",
      values: vramValues,
    },
    {
      name: 'mig_peer_access',
      description: 'A process given two MIG slices enumerates both (peer access between slices possible)',
      values: [true, false],
    },
  ],
  metrics: [
    {
      name: 'bandwidth_gbps',
      unit: 'GB/s',
      description: `Device-to-device copy bandwidth, median (${pairAttrs})`,
      tolerance: { relative: 0.1 },
    },
    {
      name: 'host_path_gbps',
      unit: 'GB/s',
      description: 'The slower of pinned D2H from src and H2D to dst: what a copy through the host can reach',
      tolerance: { relative: 0.1 },
    },
    {
      name: 'pcie_tx_gbps',
      unit: 'GB/s',
      description: "NVML's PCIe transmit rate of src during the copies (attrs.peer): near zero when an NVLink copy bypasses PCIe",
      tolerance: { relative: 0.5, absolute: 1 },
    },
    {
      name: 'wrong_bytes',
      unit: 'bytes',
      description: 'Bytes of a verified copy that differ from what was sent (words compared; attrs.peer)',
      tolerance: { relative: 0 },
    },
    { name: 'enable_ms', unit: 'ms', description: "cuCtxEnablePeerAccess in src's context to dst's memory", tolerance: { relative: 0.7 } },
    { name: 'first_copy_ms', unit: 'ms', description: 'The first copy after enabling peer access', tolerance: { relative: 0.7 } },
    { name: 'steady_copy_ms', unit: 'ms', description: 'The copy after it', tolerance: { relative: 0.3 } },
    {
      name: 'free_bytes',
      unit: 'bytes',
      description: 'Free VRAM of a device (attrs.device, pair, stage: before-enable, after-enable, after-mapping)',
      tolerance: { relative: 0.01, absolute: 64 * MiB },
    },
    {
      name: 'enable_vram_cost_bytes',
      unit: 'bytes',
      description: 'Free VRAM lost on a device by enabling peer access',
      tolerance: { relative: 0.05, absolute: 4 * MiB },
    },
    {
      name: 'mapping_vram_cost_bytes',
      unit: 'bytes',
      description: 'Free VRAM lost on a device by a peer mapping of map_mib (the allocation itself not counted)',
      tolerance: { relative: 0.05, absolute: 4 * MiB },
    },
    {
      name: 'mig_profile_bytes',
      unit: 'bytes',
      description: "A MIG slice's memory as NVML reports it (attrs.uuid)",
      tolerance: { relative: 0 },
    },
    {
      name: 'mig_total_bytes',
      unit: 'bytes',
      description: "A MIG slice's memory as its process's cuMemGetInfo reports it",
      tolerance: { relative: 0 },
    },
    {
      name: 'mig_pinned_free_drop_bytes',
      unit: 'bytes',
      description: "The slice's free memory lost by pinning mig_pin_mib in its process",
      tolerance: { relative: 0.05, absolute: 4 * MiB },
    },
  ],
  quick: { size_mib: 64, repetitions: 5, map_mib: 64, mig_pin_mib: 64 },
  keyMetrics: [
    {
      metric: 'bandwidth_gbps',
      label: 'device-to-device bandwidth, peer access on (first pair, 0 to 1)',
      where: { src: 0, dst: 1, peer: true },
    },
    {
      metric: 'bandwidth_gbps',
      label: 'device-to-device bandwidth, peer access off (first pair, 0 to 1)',
      where: { src: 0, dst: 1, peer: false },
    },
    { metric: 'enable_ms', label: 'cuCtxEnablePeerAccess (0 to 1)', where: { src: 0, dst: 1 } },
  ],
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const pairs = new Map<string, { on?: MetricRecord; off?: MetricRecord }>();
    for (const m of metricsOf(records, 'bandwidth_gbps')) {
      const key = `${m.attrs?.src} to ${m.attrs?.dst}`;
      pairs.set(key, { ...pairs.get(key), [m.attrs?.peer ? 'on' : 'off']: m });
    }
    for (const [key, { on, off }] of pairs) lines.push([`copy ${key}`, `${fmt(on)} with peer access, ${fmt(off)} without`]);
    const enable = metricsOf(records, 'enable_ms');
    if (enable.length) lines.push(['enabling peer access', enable.map((m) => `${fmt(m)} (${m.attrs?.src} to ${m.attrs?.dst})`).join(', ')]);
    return lines;
  },
};

// alloc-ceiling, sysmem-fallback and the new metrics of pinned-ceiling and managed-memory (issue
// 24): their tolerances are provisional, not yet calibrated by repeated GPU runs.
const allocCeiling: ProbeSpec = {
  name: 'alloc-ceiling',
  title: 'How much device memory can really be allocated?',
  claims: ['C20'],
  description:
    'Per API (cuMemAlloc, cudaMalloc, cudaMallocAsync), in a fresh subject: the free VRAM cuMemGetInfo reports at the start, ' +
    'the largest single allocation (bisection to granularity_mib) and the total of chunk_mib chunks held at once, both bounded ' +
    "by max_gib (0: the device's total memory). reaches_free_vram: the chunks stopped by a failure came within one chunk and max(512 MiB, 3 %) of the free VRAM.",
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    apis: z
      .array(z.enum(['driver', 'runtime', 'async']))
      .min(1)
      .default(['driver', 'runtime', 'async'])
      .describe('API series: driver (cuMemAlloc), runtime (cudaMalloc), async (cudaMallocAsync)'),
    chunk_mib: positive(256, 'Size of each chunk, MiB'),
    max_gib: z
      .number()
      .nonnegative()
      .default(0)
      .describe("Cap, GiB: 0 is the device's total memory (never past it); on a shared card give one below its free VRAM"),
    granularity_mib: positive(64, 'Bisection step of the largest single allocation, MiB'),
  }),
  facts: [
    {
      name: 'memory_pools_supported',
      description: 'CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: the stream-ordered allocator (cudaMallocAsync) is there',
      values: [true, false],
    },
    {
      name: 'reaches_free_vram',
      description: 'cuMemAlloc chunks reach the free VRAM reported at the start (null when the cap stopped them first)',
      values: [true, false],
    },
    { name: 'reaches_free_vram_runtime', description: 'The same with cudaMalloc', values: [true, false] },
    { name: 'reaches_free_vram_async', description: 'The same with cudaMallocAsync', values: [true, false] },
  ],
  metrics: [
    {
      name: 'free_vram_bytes',
      unit: 'bytes',
      description: 'Free VRAM at the start, cuMemGetInfo in the subject (attrs.api)',
      tolerance: { relative: 0.02 },
    },
    { name: 'total_vram_bytes', unit: 'bytes', description: 'Total VRAM, cuMemGetInfo', tolerance: { relative: 0 } },
    {
      name: 'largest_single_bytes',
      unit: 'bytes',
      description: 'Largest single allocation that succeeded (attrs: api, stopped_by, cap_bytes)',
      tolerance: { relative: 0.02 },
    },
    {
      name: 'cumulative_bytes',
      unit: 'bytes',
      description: 'Chunks held at once before a failure or the cap (attrs: api, stopped_by, cap_bytes)',
      tolerance: { relative: 0.02 },
    },
    {
      name: 'shortfall_bytes',
      unit: 'bytes',
      description: 'Free VRAM at the start less the chunks held when one failed',
      tolerance: { relative: 0.2, absolute: 512 * MiB },
    },
    {
      name: 'free_after_fill_bytes',
      unit: 'bytes',
      description: 'Free VRAM with the chunks held',
      tolerance: { relative: 0.2, absolute: 512 * MiB },
    },
  ],
  quick: { max_gib: 1, granularity_mib: 128 },
  keyMetrics: [
    { metric: 'largest_single_bytes', label: 'largest single cuMemAlloc (to the cap)', where: { api: 'driver' } },
    { metric: 'cumulative_bytes', label: 'cuMemAlloc in 256 MiB chunks (to the cap)', where: { api: 'driver' } },
    { metric: 'shortfall_bytes', label: 'free VRAM that cuMemAlloc chunks could not get', where: { api: 'driver' } },
  ],
  summary: (records) =>
    ['driver', 'runtime', 'async'].flatMap((api): SummaryLine[] => {
      const [free, largest, held] = ['free_vram_bytes', 'largest_single_bytes', 'cumulative_bytes'].map(
        (n) => metricsOf(records, n, { api })[0],
      );
      if (!free && !largest && !held) return [];
      return [
        [
          `${api} API`,
          `free at start ${fmt(free)}, largest single ${fmt(largest)}, in chunks ${fmt(held)}${held?.attrs?.stopped_by ? ` (stopped by ${held.attrs.stopped_by})` : ''}`,
        ],
      ];
    }),
  optIn: 'it allocates up to max_gib of device memory (all of it on a smaller card)',
};

const sysmemFallback: ProbeSpec = {
  name: 'sysmem-fallback',
  title: 'Do allocations past VRAM spill into system memory?',
  claims: ['C21'],
  description:
    'A subject allocates chunk_mib chunks, held, up to VRAM + past_vram_gib (at most 4) or max_gib when lower, and never more past ' +
    'free VRAM than half the available system memory; every source is read before and after (on Windows, PDH Shared Usage ' +
    'shows the spill). allocates_past_vram: more than a chunk past free VRAM succeeded; the write bandwidth of the last chunk ' +
    'against the first shows what a spilled chunk costs.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    api: z
      .enum(['driver', 'runtime'])
      .default('runtime')
      .describe('runtime (cudaMalloc, what the fallback policy names) or driver (cuMemAlloc)'),
    chunk_mib: positive(256, 'Size of each chunk, MiB'),
    past_vram_gib: z.number().min(0).max(4).default(2).describe('Bound past the total VRAM, GiB'),
    max_gib: z
      .number()
      .nonnegative()
      .default(0)
      .describe('A lower bound in GiB (0: VRAM + past_vram_gib); on a shared card keep it below the free VRAM'),
  }),
  facts: [
    {
      name: 'allocates_past_vram',
      description: 'Allocations succeeded past the free VRAM (false: one failed before it; null: the bound came first)',
      values: [true, false],
    },
    { name: 'spill_slower', description: "The last chunk writes at under half the first chunk's bandwidth", values: [true, false] },
    {
      name: 'spill_in_shared_usage',
      description: 'Windows PDH Shared Usage of the subject grew by at least half of what went past free VRAM',
      values: [true, false],
    },
  ],
  metrics: [
    {
      name: 'free_vram_bytes',
      unit: 'bytes',
      description: 'Free VRAM at the start (cuMemGetInfo in the subject)',
      tolerance: { relative: 0.02 },
    },
    { name: 'total_vram_bytes', unit: 'bytes', description: 'Total VRAM', tolerance: { relative: 0 } },
    {
      name: 'allocated_bytes',
      unit: 'bytes',
      description: 'Chunks held before a failure or the bound (attrs: stopped_by, target_bytes)',
      tolerance: { relative: 0.02 },
    },
    {
      name: 'past_free_vram_bytes',
      unit: 'bytes',
      description: 'allocated_bytes less the free VRAM at the start (negative: it stopped before)',
      tolerance: { relative: 0.1, absolute: 512 * MiB },
    },
    {
      name: 'first_chunk_write_gbps',
      unit: 'GB/s',
      description: 'cuMemsetD32 bandwidth of the first chunk (4 memsets + 1 synchronize, host-timed), median of 3',
      tolerance: { relative: 0.2 },
    },
    { name: 'last_chunk_write_gbps', unit: 'GB/s', description: 'The same for the last chunk', tolerance: { relative: 0.2 } },
    {
      name: 'last_first_write_ratio',
      unit: 'ratio',
      description: 'last_chunk_write_gbps / first_chunk_write_gbps',
      tolerance: { relative: 0.2 },
    },
    {
      name: 'shared_usage_growth_bytes',
      unit: 'bytes',
      description: "Growth of the subject's PDH Shared Usage (Windows; null elsewhere)",
      tolerance: { relative: 0.1, absolute: 64 * MiB },
    },
    {
      name: 'dedicated_usage_growth_bytes',
      unit: 'bytes',
      description: "Growth of the subject's PDH Dedicated Usage (Windows)",
      tolerance: { relative: 0.1, absolute: 64 * MiB },
    },
  ],
  quick: { max_gib: 1 },
  keyMetrics: [
    {
      metric: 'past_free_vram_bytes',
      label: 'allocated past free VRAM (sysmem fallback)',
      // allocated_bytes less the free VRAM: negative when the bound or a failure stopped it first.
      negative: 'none: stopped {} under free VRAM',
    },
    { metric: 'last_first_write_ratio', label: 'last / first chunk write bandwidth (sysmem fallback)' },
  ],
  summary: (records) => {
    const [allocated, free, first, last, shared] = [
      'allocated_bytes',
      'free_vram_bytes',
      'first_chunk_write_gbps',
      'last_chunk_write_gbps',
      'shared_usage_growth_bytes',
    ].map((n) => metricsOf(records, n)[0]);
    if (!allocated) return [];
    return [
      [
        'allocated',
        `${fmt(allocated)} of ${fmt(free)} free${allocated.attrs?.stopped_by ? ` (stopped by ${allocated.attrs.stopped_by})` : ''}, Shared Usage ${signed(shared)}`,
      ],
      ['chunk write bandwidth', `first ${fmt(first)}, last ${fmt(last)}`],
    ];
  },
  optIn: 'it fills the device memory and goes past it (bounded at VRAM + past_vram_gib)',
};

const watchdog: ProbeSpec = {
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

const runtimeInit: ProbeSpec = {
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

export const catalogue: readonly ProbeSpec[] = [
  sysinfo,
  pinnedVram,
  pinnedRelease,
  multiProcessPinned,
  pinnedCeiling,
  transferBandwidth,
  eventTiming,
  eventHostGap,
  syncLatency,
  streamPriority,
  cudaGraph,
  managedMemory,
  cudaLog,
  windowsRegistry,
  p2p,
  watchdog,
  runtimeInit,
  // Opt-in ones last: they run after everything else on a target.
  allocCeiling,
  sysmemFallback,
];

/** Whether a metric has the attributes a key metric asks for. */
export function matchesKeyMetric(attrs: Record<string, Scalar> | undefined, k: KeyMetric): boolean {
  return !k.where || Object.keys(k.where).every((a) => attrs?.[a] === k.where![a]);
}

/** Whether a match replaces the one picked so far: only for largestSize, when its size is larger. */
export function replacesKeyMetric(m: { attrs?: Record<string, Scalar> }, best: { attrs?: Record<string, Scalar> }, k: KeyMetric): boolean {
  return Boolean(k.largestSize) && Number(m.attrs?.size_bytes ?? 0) > Number(best.attrs?.size_bytes ?? 0);
}

/** The metric a key metric picks from a cell's metrics (named without the probe), or undefined. */
export function pickKeyMetric<M extends { name: string; attrs?: Record<string, Scalar> }>(
  metrics: readonly M[],
  k: KeyMetric,
): M | undefined {
  let best: M | undefined;
  for (const m of metrics) {
    if (m.name !== k.metric || !matchesKeyMetric(m.attrs, k)) continue;
    if (!best || replacesKeyMetric(m, best, k)) best = m;
  }
  return best;
}

/** The parameters a probe runs with: its defaults, then the --quick profile, then the matrix's. */
export function effectiveParams(probe: string, explicit: Record<string, unknown> = {}, quick = false): Record<string, unknown> {
  const spec = probeSpec(probe);
  if (!spec) throw new Error(`unknown probe ${probe}`);
  return spec.params.parse({ ...(quick ? spec.quick : {}), ...explicit }) as Record<string, unknown>;
}

export function probeSpec(name: string): ProbeSpec | undefined {
  return catalogue.find((p) => p.name === name);
}

export function probeNames(): string[] {
  return catalogue.map((p) => p.name);
}

/** What `probes: all` selects: every probe but the opt-in ones. */
export function defaultProbeNames(): string[] {
  return catalogue.filter((p) => !p.optIn).map((p) => p.name);
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
