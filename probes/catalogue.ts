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
  /**
   * How far the metric moves between two runs of one driver on one machine with nothing changed:
   * `cudamatrix diff` flags a move beyond it (results/record/diff.ts). One rule, or several of
   * which the first whose `where` matches the series' attrs applies.
   */
  tolerance?: MetricTolerance | MetricTolerance[];
}

/**
 * A metric's noise. A change is |a - b| / max(|a|, |b|) (so that a -> b and b -> a are judged
 * alike); it is noise when at most `relative`, or when |a - b| is at most `absolute` (in the
 * metric's unit: for values near zero, where any fraction is large). Calibrated on the H200
 * (driver 580.159.04): the four committed default-suite runs (2026-11-29, 2026-11-30, and two
 * back to back on 2026-12-01), with margin over the largest change between any two of them;
 * docs/records.md gives the figures.
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
  /**
   * Set for a probe that can exhaust memory or hang a desktop: why. It is left out of `probes:
   * all` and runs only where a matrix names it (or --probe names it exactly); bounded by its
   * parameters, and last on its target (it is at the end of the catalogue).
   */
  optIn?: string;
}

const MiB = 1024 * 1024;
const environments = ['linux', 'wsl2', 'wsl2-docker', 'wddm', 'tcc', 'mcdm'] as const;
const vramValues = [true, false, 'partial'] as const;

// Parameter helpers: every parameter has a default (the same as cudaprobe's, checked in tests).
const numbers = (def: number[], what: string) => z.array(z.number().positive()).min(1).default(def).describe(what);
const nonNegNumbers = (def: number[], what: string) => z.array(z.number().nonnegative()).min(1).default(def).describe(what);
const positive = (def: number, what: string) => z.number().positive().default(def).describe(what);
const count = (def: number, min: number, what: string) => z.number().int().min(min).default(def).describe(what);
const apis = z.array(z.enum(['driver', 'runtime'])).min(1).default(['driver', 'runtime']).describe('API series: driver (cuMemHostAlloc...) and/or runtime (cudaMallocHost...)');

/** Readings a memory probe's samples carry (each null with a reason where a platform lacks it). */
export const sampleReadings: Record<string, string> = {
  subject_cu_used_bytes: 'Device memory in use, from cuMemGetInfo in the subject (device-wide)',
  nvml_device_used_bytes: 'Device memory in use, from NVML in the sampler (device-wide)',
  nvml_process_used_bytes: "The subject's device memory, from NVML's compute-process list (null under WDDM and WSL2)",
  pdh_process_dedicated_bytes: 'Windows PDH \\GPU Process Memory(pid_N*)\\Dedicated Usage of the subject',
  pdh_process_shared_bytes: 'Windows PDH \\GPU Process Memory(pid_N*)\\Shared Usage of the subject',
  pdh_adapter_dedicated_bytes: 'Windows PDH \\GPU Adapter Memory(*)\\Dedicated Usage',
  pdh_adapter_shared_bytes: 'Windows PDH \\GPU Adapter Memory(*)\\Shared Usage',
  dxgi_local_bytes: "DXGI QueryVideoMemoryInfo LOCAL segment usage of the subject (Windows)",
  dxgi_nonlocal_bytes: 'DXGI QueryVideoMemoryInfo NON_LOCAL segment usage of the subject (Windows)',
  subject_rss_bytes: "The subject's resident set (Linux VmRSS, Windows working set)",
  subject_private_bytes: "The subject's private memory (Linux RssAnon, Windows private bytes)",
  system_available_bytes: 'System memory available (Linux MemAvailable, Windows available physical)',
};

const memoryMetrics: MetricSpec[] = [
  { name: 'alloc_ms', unit: 'ms', description: 'Time of the allocation call', tolerance: { relative: 0.7 } },
  { name: 'touch_ms', unit: 'ms', description: 'Time to touch every page (memset from the host; cuMemsetD32 for device memory)', tolerance: { relative: 0.45 } },
  { name: 'free_ms', unit: 'ms', description: 'Time of the free call', tolerance: { relative: 0.7 } },
  { name: 'device_growth_bytes', unit: 'bytes', description: 'Growth of a device-memory source from baseline to after-touch (attrs.source names it)', tolerance: { relative: 0.05, absolute: 4 * MiB } },
  { name: 'host_growth_bytes', unit: 'bytes', description: "Growth of the subject's resident set from baseline to after-touch", tolerance: { relative: 0.05, absolute: 16 * MiB } },
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
    { name: 'environment', description: 'Environment detected from evidence: WSL markers on Linux (wsl2-docker: inside a container as well), the driver model on Windows', values: environments },
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
    {
      name: 'hags_setting',
      description: 'Hardware-accelerated GPU scheduling is set on in the registry (HwSchMode = 2; 1 = off): the setting, which takes effect at the next boot and only where the driver supports it; null when the value is absent (the driver default applies)',
      values: [true, false],
    },
    { name: 'hags_enabled', description: 'The hardware GPU scheduler runs now on the device\'s adapter (D3DKMTQueryAdapterInfo, KMTQAITYPE_WDDM_2_7_CAPS: HwSchEnabled)', values: [true, false] },
    { name: 'hags', description: 'The name hags_setting had in records before it was renamed (the registry setting, not whether the scheduler runs)', values: [true, false] },
    { name: 'tool_version', description: 'cudaprobe version' },
    { name: 'driver_found', description: 'The CUDA driver library (libcuda / nvcuda.dll) could be loaded', values: [true, false] },
    { name: 'driver_library', description: 'Which CUDA driver library was loaded' },
    { name: 'driver_library_ignored', description: "Inside WSL2: other libcuda.so.1 files in the distribution (a Linux driver installed there), passed over for WSL's /usr/lib/wsl/lib/libcuda.so.1" },
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

const pinnedVram: ProbeSpec = {
  name: 'pinned-vram',
  title: 'Does pinned host memory count against VRAM?',
  claims: ['C1', 'C3', 'C4'],
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
    { name: 'counts_as_vram_runtime', description: 'cudaMallocHost memory counts against device memory (largest size)', values: vramValues },
    { name: 'registered_counts_as_vram', description: 'cuMemHostRegister-ed memory counts against device memory', values: vramValues },
    { name: 'control_counts_as_vram', description: 'The cuMemAlloc control counts against device memory (checks the method: expected true)', values: vramValues },
  ],
  metrics: [
    ...memoryMetrics,
    { name: 'device_growth_per_gib_bytes', unit: 'bytes', description: 'Device growth per GiB pinned on the deciding source (a few MiB: page tables; a GiB: charged to the GPU)', tolerance: { relative: 0.05, absolute: MiB } },
  ],
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
    { name: 'retained_after_free_bytes', unit: 'bytes', description: 'Still held on the charged source at a wait after free', tolerance: { relative: 0.05, absolute: 16 * MiB } },
    { name: 'release_delay_s', unit: 's', description: 'First wait after free at which it was seen returned', tolerance: { relative: 0 } },
    { name: 'exit_release_delay_s', unit: 's', description: 'Time after the subject exited until the readings settled', tolerance: { relative: 0.5, absolute: 0.5 } },
  ],
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
  facts: [{ name: 'vram_growth', description: 'Device growth with all pinned: none, sum-of-processes (within 25 % of K x N), or partial', values: ['none', 'sum-of-processes', 'partial'] }],
  metrics: [
    { name: 'device_growth_bytes', unit: 'bytes', description: 'Growth of a device source with all subjects pinned (attrs.source)', tolerance: { relative: 0.05, absolute: 4 * MiB } },
    { name: 'system_growth_bytes', unit: 'bytes', description: 'Drop of available system memory with all subjects pinned', tolerance: { relative: 0.05, absolute: 64 * MiB } },
  ],
};

const pinnedCeiling: ProbeSpec = {
  name: 'pinned-ceiling',
  title: 'How much can be pinned?',
  claims: ['C12', 'C11', 'C17'],
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
    registered_rounds: z.number().int().min(0).max(10).default(1).describe('Rounds of malloc + cuMemHostRegister chunks to the same cap, no pre-fill (0: off)'),
  }),
  facts: [
    { name: 'limited_by', description: 'What stopped the first level: allocation-failure (a real ceiling) or safety-cap', values: ['allocation-failure', 'safety-cap'] },
    { name: 'tracks_free_vram', description: 'The ceiling falls as VRAM fills; false also when a level pinned more than the VRAM left free (null when every level hit the safety cap below it)', values: [true, false] },
    { name: 'reset_helps', description: 'cudaDeviceReset first gives a higher ceiling or clearly faster pinning (C11)', values: [true, false] },
    { name: 'registered_limited_by', description: 'What stopped registering malloc memory (cuMemHostRegister chunks): allocation-failure or safety-cap (C17)', values: ['allocation-failure', 'safety-cap'] },
    { name: 'host_register_supported', description: 'CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: cudaHostRegister works on this device (C17)', values: [true, false] },
    { name: 'host_pointer_for_registered_mem', description: 'CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: the GPU reaches registered memory at the CPU\'s address (C17)', values: [true, false] },
    { name: 'pageable_memory_access', description: 'CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: the GPU reaches pageable memory without registering it (C17)', values: [true, false] },
  ],
  metrics: [
    { name: 'ceiling_bytes', unit: 'bytes', description: 'Bytes pinned before failure or the cap (attrs: prefill_percent or variant: reset, no-reset, registered; stopped_by)', tolerance: { relative: 0.05 } },
    { name: 'free_vram_bytes', unit: 'bytes', description: 'Free VRAM after the pre-fill', tolerance: { relative: 0.02 } },
    { name: 'chunk_alloc_ms', unit: 'ms', description: 'Median time to pin one chunk', tolerance: { relative: 0.7 } },
  ],
};

const transferBandwidth: ProbeSpec = {
  name: 'transfer-bandwidth',
  title: 'Pageable versus pinned copy bandwidth',
  claims: ['C8'],
  description: 'H2D and D2H from pre-touched pageable and from pinned memory, median of the timed copies after warm-up, timed with events.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    sizes_mib: numbers([1, 16, 256, 1024], 'Copy sizes, MiB'),
    repetitions: count(20, 20, 'Timed copies per size (at least 20)'),
    warmup: count(2, 0, 'Untimed copies first'),
  }),
  facts: [],
  metrics: [
    { name: 'bandwidth_gbps', unit: 'GB/s', description: 'Copy bandwidth (attrs: direction h2d|d2h, memory pageable|pinned, size_bytes)', tolerance: [
        { where: { memory: 'pinned', size_bytes: { below: 16 * MiB } }, relative: 0.1 },
        { where: { memory: 'pinned' }, relative: 0.03 },
        { relative: 0.45 },
      ] },
    { name: 'pageable_pinned_ratio', unit: 'ratio', description: 'Pageable bandwidth over pinned bandwidth (attrs: direction, size_bytes)', tolerance: { relative: 0.45 } },
    { name: 'pcie_theoretical_gbps', unit: 'GB/s', description: "The link's payload rate from its maximum generation and width", tolerance: { relative: 0 } },
    { name: 'pinned_fraction_of_link', unit: 'ratio', description: 'Best pinned bandwidth over the theoretical link rate', tolerance: { relative: 0.03 } },
  ],
};

const eventTiming: ProbeSpec = {
  name: 'event-timing',
  title: 'Resolution of cuEventElapsedTime',
  claims: ['C7'],
  description: 'Spin kernels of 1-20 us (cycles calibrated against events) timed with events; the smallest step between distinct elapsed times, against the host clock.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    targets_us: numbers([1, 2, 5, 10, 20], 'Spin durations, us'),
    repetitions: count(50, 5, 'Timings per duration'),
  }),
  facts: [{ name: 'resolution_class', description: 'Event resolution: sub-microsecond (< 1 us), microsecond, or millisecond', values: ['sub-microsecond', 'microsecond', 'millisecond'] }],
  metrics: [
    { name: 'resolution_us', unit: 'us', description: 'Smallest step between distinct event-timed values', tolerance: { relative: 0.1 } },
    { name: 'distinct_values', unit: 'count', description: 'Distinct elapsed times seen', tolerance: { relative: 0.5 } },
    { name: 'elapsed_us', unit: 'us', description: 'Median event-timed duration (attrs.target_us)', tolerance: { relative: 0.1 } },
    { name: 'host_elapsed_us', unit: 'us', description: 'Median host-timed launch-to-completion (attrs.target_us)', tolerance: { relative: 0.35 } },
    { name: 'host_clock_resolution_us', unit: 'us', description: "The host clock's smallest step", tolerance: { relative: 0.5 } },
    { name: 'spin_cycles_per_us', unit: 'cycles', description: 'SM clock cycles per microsecond (spin calibration)', tolerance: { relative: 0.05 } },
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
    { name: 'priority_least', unit: 'count', description: 'Least stream priority (cuCtxGetStreamPriorityRange)', tolerance: { relative: 0 } },
    { name: 'priority_greatest', unit: 'count', description: 'Greatest stream priority', tolerance: { relative: 0 } },
    { name: 'high_done_ms', unit: 'ms', description: 'Short kernel completion after the long one started (attrs.mode)', tolerance: { relative: 0.1 } },
    { name: 'long_done_ms', unit: 'ms', description: 'Long kernel completion (attrs.mode)', tolerance: { relative: 0.1 } },
    { name: 'high_done_ratio', unit: 'ratio', description: 'high_done_ms / long_done_ms (attrs.mode)', tolerance: { relative: 0.1 } },
  ],
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
};

const managedMemory: ProbeSpec = {
  name: 'managed-memory',
  title: 'Managed memory and concurrent access',
  claims: ['C13', 'C18'],
  description:
    'The managed-memory attributes, and a managed allocation written by the CPU, filled by a kernel and read back by the CPU ' +
    '(never concurrently: without concurrent access that is a fault).',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z.number().positive().max(1024).default(64).describe('Managed allocation, MiB (kept small: never more than free VRAM)'),
    // Opt-in: above 100 it oversubscribes, which can hang some GPUs (never on the lent H200).
    percent_of_free: z.number().min(0).max(150).default(0).describe('Opt-in large step: one managed allocation of this % of free VRAM, filled by a kernel and read back (0: off; above 100 oversubscribes, bounded by half the available RAM)'),
  }),
  facts: [
    { name: 'managed_supported', description: 'CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY', values: [true, false] },
    { name: 'concurrent_access', description: 'CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: CPU and GPU may touch managed memory at once', values: [true, false] },
    { name: 'pageable_access', description: 'CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: the GPU can access pageable memory', values: [true, false] },
    { name: 'roundtrip_ok', description: 'CPU write, GPU fill, CPU read back gave the right values', values: [true, false] },
    { name: 'large_roundtrip_ok', description: 'The percent_of_free step: the managed allocation, its GPU fill and CPU read back worked (C18)', values: [true, false] },
    { name: 'oversubscription_ok', description: 'The same, with percent_of_free above 100: managed memory past free VRAM works (C18; null when not asked for)', values: [true, false] },
  ],
  metrics: [
    { name: 'cpu_first_touch_ms', unit: 'ms', description: 'CPU writing the whole allocation first', tolerance: { relative: 0.5 } },
    { name: 'gpu_fill_ms', unit: 'ms', description: 'Kernel filling it (migration included)', tolerance: { relative: 0.5 } },
    { name: 'cpu_read_back_ms', unit: 'ms', description: 'CPU reading it back (migration included)', tolerance: { relative: 0.5 } },
    { name: 'free_vram_bytes', unit: 'bytes', description: 'Free VRAM before the percent_of_free step', tolerance: { relative: 0.02 } },
    { name: 'managed_bytes', unit: 'bytes', description: 'Size of the percent_of_free allocation', tolerance: { relative: 0.02 } },
    { name: 'large_gpu_fill_gbps', unit: 'GB/s', description: 'Kernel filling the percent_of_free allocation (first-touch migration or eviction included)', tolerance: { relative: 0.5 } },
    { name: 'large_cpu_read_back_ms', unit: 'ms', description: 'CPU reading it back at up to 4096 places, a page or more apart', tolerance: { relative: 0.5 } },
  ],
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
    { name: 'lines_with_error', unit: 'count', description: 'Lines logged by the subject that also made an error', tolerance: { relative: 0 } },
  ],
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
  facts: [{ name: 'gpu_memory_compression_value_exists', description: 'The EnableGpuMemoryCompression value exists', values: [true, false] }],
  metrics: ['EnableGpuMemoryCompression', 'HwSchMode', 'TdrDelay', 'TdrLevel'].map((v) => ({ name: `registry_${v}`, unit: 'count' as const, description: `DWORD value ${v}`, tolerance: { relative: 0 } })),
};

// alloc-ceiling, sysmem-fallback and the new metrics of pinned-ceiling and managed-memory (issue
// 24): their tolerances are provisional, not yet calibrated by repeated GPU runs.
const allocCeiling: ProbeSpec = {
  name: 'alloc-ceiling',
  title: 'How much device memory can really be allocated?',
  claims: ['C15'],
  description:
    'Per API (cuMemAlloc, cudaMalloc, cudaMallocAsync), in a fresh subject: the free VRAM cuMemGetInfo reports at the start, ' +
    'the largest single allocation (bisection to granularity_mib) and the total of chunk_mib chunks held at once, both bounded ' +
    "by max_gib (0: the device's total memory). reaches_free_vram: the chunks stopped by a failure came within one chunk and max(512 MiB, 3 %) of the free VRAM.",
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    apis: z.array(z.enum(['driver', 'runtime', 'async'])).min(1).default(['driver', 'runtime', 'async']).describe('API series: driver (cuMemAlloc), runtime (cudaMalloc), async (cudaMallocAsync)'),
    chunk_mib: positive(256, 'Size of each chunk, MiB'),
    max_gib: z.number().nonnegative().default(0).describe("Cap, GiB: 0 is the device's total memory (never past it); on a shared card give one below its free VRAM"),
    granularity_mib: positive(64, 'Bisection step of the largest single allocation, MiB'),
  }),
  facts: [
    { name: 'memory_pools_supported', description: 'CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: the stream-ordered allocator (cudaMallocAsync) is there', values: [true, false] },
    { name: 'reaches_free_vram', description: 'cuMemAlloc chunks reach the free VRAM reported at the start (null when the cap stopped them first)', values: [true, false] },
    { name: 'reaches_free_vram_runtime', description: 'The same with cudaMalloc', values: [true, false] },
    { name: 'reaches_free_vram_async', description: 'The same with cudaMallocAsync', values: [true, false] },
  ],
  metrics: [
    { name: 'free_vram_bytes', unit: 'bytes', description: 'Free VRAM at the start, cuMemGetInfo in the subject (attrs.api)', tolerance: { relative: 0.02 } },
    { name: 'total_vram_bytes', unit: 'bytes', description: 'Total VRAM, cuMemGetInfo', tolerance: { relative: 0 } },
    { name: 'largest_single_bytes', unit: 'bytes', description: 'Largest single allocation that succeeded (attrs: api, stopped_by, cap_bytes)', tolerance: { relative: 0.02 } },
    { name: 'cumulative_bytes', unit: 'bytes', description: 'Chunks held at once before a failure or the cap (attrs: api, stopped_by, cap_bytes)', tolerance: { relative: 0.02 } },
    { name: 'shortfall_bytes', unit: 'bytes', description: 'Free VRAM at the start less the chunks held when one failed', tolerance: { relative: 0.2, absolute: 512 * MiB } },
    { name: 'free_after_fill_bytes', unit: 'bytes', description: 'Free VRAM with the chunks held', tolerance: { relative: 0.2, absolute: 512 * MiB } },
  ],
  optIn: 'it allocates up to max_gib of device memory (all of it on a smaller card)',
};

const sysmemFallback: ProbeSpec = {
  name: 'sysmem-fallback',
  title: 'Do allocations past VRAM spill into system memory?',
  claims: ['C16'],
  description:
    'A subject allocates chunk_mib chunks, held, up to VRAM + past_vram_gib (at most 4) or max_gib when lower, and never more past ' +
    'free VRAM than half the available system memory; every source is read before and after (on Windows, PDH Shared Usage ' +
    'shows the spill). allocates_past_vram: more than a chunk past free VRAM succeeded; the write bandwidth of the last chunk ' +
    'against the first shows what a spilled chunk costs.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    api: z.enum(['driver', 'runtime']).default('runtime').describe('runtime (cudaMalloc, what the fallback policy names) or driver (cuMemAlloc)'),
    chunk_mib: positive(256, 'Size of each chunk, MiB'),
    past_vram_gib: z.number().min(0).max(4).default(2).describe('Bound past the total VRAM, GiB'),
    max_gib: z.number().nonnegative().default(0).describe('A lower bound in GiB (0: VRAM + past_vram_gib); on a shared card keep it below the free VRAM'),
  }),
  facts: [
    { name: 'allocates_past_vram', description: 'Allocations succeeded past the free VRAM (false: one failed before it; null: the bound came first)', values: [true, false] },
    { name: 'spill_slower', description: 'The last chunk writes at under half the first chunk\'s bandwidth', values: [true, false] },
    { name: 'spill_in_shared_usage', description: 'Windows PDH Shared Usage of the subject grew by at least half of what went past free VRAM', values: [true, false] },
  ],
  metrics: [
    { name: 'free_vram_bytes', unit: 'bytes', description: 'Free VRAM at the start (cuMemGetInfo in the subject)', tolerance: { relative: 0.02 } },
    { name: 'total_vram_bytes', unit: 'bytes', description: 'Total VRAM', tolerance: { relative: 0 } },
    { name: 'allocated_bytes', unit: 'bytes', description: 'Chunks held before a failure or the bound (attrs: stopped_by, target_bytes)', tolerance: { relative: 0.02 } },
    { name: 'past_free_vram_bytes', unit: 'bytes', description: 'allocated_bytes less the free VRAM at the start (negative: it stopped before)', tolerance: { relative: 0.1, absolute: 512 * MiB } },
    { name: 'first_chunk_write_gbps', unit: 'GB/s', description: 'cuMemsetD32 bandwidth of the first chunk (4 memsets + 1 synchronize, host-timed), median of 3', tolerance: { relative: 0.2 } },
    { name: 'last_chunk_write_gbps', unit: 'GB/s', description: 'The same for the last chunk', tolerance: { relative: 0.2 } },
    { name: 'last_first_write_ratio', unit: 'ratio', description: 'last_chunk_write_gbps / first_chunk_write_gbps', tolerance: { relative: 0.2 } },
    { name: 'shared_usage_growth_bytes', unit: 'bytes', description: 'Growth of the subject\'s PDH Shared Usage (Windows; null elsewhere)', tolerance: { relative: 0.1, absolute: 64 * MiB } },
    { name: 'dedicated_usage_growth_bytes', unit: 'bytes', description: 'Growth of the subject\'s PDH Dedicated Usage (Windows)', tolerance: { relative: 0.1, absolute: 64 * MiB } },
  ],
  optIn: 'it fills the device memory and goes past it (bounded at VRAM + past_vram_gib)',
};

export const catalogue: readonly ProbeSpec[] = [
  sysinfo,
  pinnedVram,
  pinnedRelease,
  multiProcessPinned,
  pinnedCeiling,
  transferBandwidth,
  eventTiming,
  syncLatency,
  streamPriority,
  cudaGraph,
  managedMemory,
  cudaLog,
  windowsRegistry,
  // Opt-in ones last: they run after everything else on a target.
  allocCeiling,
  sysmemFallback,
];

/**
 * The --quick profile: parameters that keep every probe small, for CI-sized runs. Explicit
 * parameters in the matrix still win.
 */
export const quickParams: Record<string, Record<string, unknown>> = {
  'pinned-vram': { sizes_gib: [0.25], register_size_gib: 0.25, wait_s: 0.1 },
  'pinned-release': { size_gib: 0.25, wait_s: [0, 1] },
  'multi-process-pinned': { size_gib: 0.25 },
  'pinned-ceiling': { max_gib: 0.5, prefill_percent: [0, 90], reset_rounds: 1 },
  'transfer-bandwidth': { sizes_mib: [1, 64] },
  'event-timing': { repetitions: 20 },
  'sync-latency': { iterations: 1000 },
  'stream-priority': { repetitions: 2 },
  'cuda-graph': { repetitions: 5 },
  'managed-memory': { size_mib: 16 },
  'alloc-ceiling': { max_gib: 1, granularity_mib: 128 },
  'sysmem-fallback': { max_gib: 1 },
};

/** The parameters a probe runs with: its defaults, then the --quick profile, then the matrix's. */
export function effectiveParams(probe: string, explicit: Record<string, unknown> = {}, quick = false): Record<string, unknown> {
  const spec = probeSpec(probe);
  if (!spec) throw new Error(`unknown probe ${probe}`);
  return spec.params.parse({ ...(quick ? quickParams[probe] : {}), ...explicit }) as Record<string, unknown>;
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

/**
 * How long each probe took with its default parameters in the committed H200 run
 * (results/records/driver-580.159.04/h200-linux/events.jsonl, rounded). Shards are balanced by
 * these; a probe missing here counts as one second.
 */
export const typicalMs: Record<string, number> = {
  sysinfo: 330,
  'pinned-vram': 17_300,
  'pinned-release': 2_100,
  'multi-process-pinned': 1_900,
  'pinned-ceiling': 7_100,
  'transfer-bandwidth': 10_300,
  'event-timing': 420,
  'sync-latency': 390,
  'stream-priority': 500,
  'cuda-graph': 430,
  'managed-memory': 370,
  'cuda-log': 510,
  'windows-registry': 10,
};
