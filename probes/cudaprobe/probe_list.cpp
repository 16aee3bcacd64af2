// The probe list: every probe of cudaprobe, in the catalogue's order (probes/catalogue.ts; the
// tests check that both name the same probes with the same defaults). A probe is its function,
// in the file named beside its declaration, and its entry here: name, description with its
// claim ids, platforms, default parameters ("name=value;name=v1,v2"), the function.
#include "probe.hpp"

namespace cp {

int sysinfo(ProbeContext& ctx);             // sysinfo.cpp
int pinnedVram(ProbeContext& ctx);          // memory_probes.cpp
int pinnedRelease(ProbeContext& ctx);       // memory_probes.cpp
int multiProcessPinned(ProbeContext& ctx);  // memory_probes.cpp
int pinnedCeiling(ProbeContext& ctx);       // memory_probes.cpp
int transferBandwidth(ProbeContext& ctx);   // timing_probes.cpp
int eventTiming(ProbeContext& ctx);         // timing_probes.cpp
int eventHostGap(ProbeContext& ctx);        // timing_probes.cpp
int syncLatency(ProbeContext& ctx);         // timing_probes.cpp
int streamPriority(ProbeContext& ctx);      // timing_probes.cpp
int cudaGraph(ProbeContext& ctx);           // timing_probes.cpp
int managedMemory(ProbeContext& ctx);       // managed_memory.cpp
int cudaLog(ProbeContext& ctx);             // settings_probes.cpp
int windowsRegistry(ProbeContext& ctx);     // settings_probes.cpp
int p2p(ProbeContext& ctx);                 // p2p.cpp
int allocCeiling(ProbeContext& ctx);        // alloc_ceiling_probe.cpp
int sysmemFallback(ProbeContext& ctx);      // sysmem_fallback_probe.cpp
int watchdog(ProbeContext& ctx);            // settings_probes.cpp
int runtimeInit(ProbeContext& ctx);         // init_probe.cpp

const std::vector<ProbeInfo>& probes() {
  static const std::vector<ProbeInfo> all = {
      {"sysinfo", "OS, driver, GPU, PCIe link, driver model and the detected environment", "linux,windows", "", sysinfo},
      {"pinned-vram", "whether pinned host memory counts against VRAM (C1, C3, C4)", "linux,windows",
       "sizes_gib=1,2,4;apis=driver,runtime;register_size_gib=1;wait_s=0.1", pinnedVram},
      {"pinned-release", "when memory freed with cuMemFreeHost/cudaFreeHost is returned (C2)", "linux,windows",
       "size_gib=1;wait_s=0,1,5;apis=driver,runtime", pinnedRelease},
      {"multi-process-pinned", "whether several processes pinning at once add up (C14)", "linux,windows", "processes=2;size_gib=1",
       multiProcessPinned},
      {"pinned-ceiling", "how much can be pinned, against free VRAM and with cudaDeviceReset first (C11, C12)", "linux,windows",
       "chunk_mib=256;max_gib=16;max_fraction=0.5;prefill_percent=0,50,90;reset_rounds=2;registered_rounds=1", pinnedCeiling},
      {"transfer-bandwidth", "H2D and D2H bandwidth from pageable and pinned memory, idle and with VRAM filled (C8, C28)", "linux,windows",
       "sizes_mib=1,16,256,1024;repetitions=20;warmup=2;fill_percent=0,90;fill_reserve_gib=8", transferBandwidth},
      {"event-timing", "the resolution of cuEventElapsedTime (C7)", "linux,windows", "targets_us=1,2,5,10,20;repetitions=50", eventTiming},
      {"event-host-gap", "whether an event pair brackets host time without GPU work, with and without a flush (C24)", "linux,windows",
       "sleep_ms=20;repetitions=10", eventHostGap},
      {"sync-latency", "no-op kernel + stream synchronize latency (C5)", "linux,windows", "iterations=10000", syncLatency},
      {"stream-priority", "whether stream priorities are honoured (C6)", "linux,windows", "repetitions=5;block_us=1000;waves=10;delay_ms=1",
       streamPriority},
      {"cuda-graph", "CUDA Graphs support and launch cost (C5)", "linux,windows", "kernels=1000;repetitions=20", cudaGraph},
      {"managed-memory", "managed memory and concurrent CPU/GPU access (C13); opt-in: a managed allocation of percent_of_free (C23)",
       "linux,windows", "size_mib=64;percent_of_free=0", managedMemory},
      {"cuda-log", "what CUDA_LOG_FILE logs (C9)", "linux,windows", "log_level=", cudaLog},
      {"windows-registry", "GraphicsDrivers registry values (C10)", "windows", "", windowsRegistry},
      {"p2p", "peer access between every pair of GPUs, and MIG slices (C15, C16, C17, C18, C19)", "linux,windows",
       "size_mib=256;repetitions=10;map_mib=256;mig_pin_mib=256", p2p},
      {"watchdog", "the kernel watchdog: KERNEL_EXEC_TIMEOUT and Windows' TdrDelay/TdrLevel; facts only (C25)", "linux,windows", "", watchdog},
      {"runtime-init", "result and time of cuInit and of each CUDA runtime's first call, each in a fresh process (C26)", "linux,windows",
       "dirs=;timeout_s=60", runtimeInit},
      // Opt-in (they fill the card), bounded, and last.
      {"alloc-ceiling", "how much device memory can be allocated against the free VRAM reported (C20); opt-in", "linux,windows",
       "apis=driver,runtime,async;chunk_mib=256;max_gib=0;granularity_mib=64", allocCeiling},
      {"sysmem-fallback", "whether allocations past VRAM spill into system memory, and what a spilled chunk costs (C21); opt-in",
       "linux,windows", "api=runtime;chunk_mib=256;past_vram_gib=2;max_gib=0", sysmemFallback},
  };
  return all;
}

}  // namespace cp
