/** The sysinfo probe's spec (cudaprobe run sysinfo) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { environments } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';

export const sysinfo: ProbeSpec = {
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
    {
      name: 'host_memory_total_bytes',
      description:
        "The host's physical memory (Linux /proc/meminfo MemTotal, in a WSL2 distribution the VM's; Windows GlobalMemoryStatusEx)",
    },
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
