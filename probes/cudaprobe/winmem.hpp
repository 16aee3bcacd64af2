// Windows' own views of GPU memory: the PDH counters (read by the sampler, which never creates
// a CUDA context) and DXGI's segment usage (read by the subject about itself). Elsewhere they
// are unavailable, with that reason.
#pragma once
#include <cstdint>

#include "cuda.hpp"
#include "process.hpp"

namespace cp {

struct PdhReadings {
  Reading processDedicated;  // \GPU Process Memory(pid_N*)\Dedicated Usage
  Reading processShared;     // \GPU Process Memory(pid_N*)\Shared Usage
  Reading adapterDedicated;  // \GPU Adapter Memory(*)\Dedicated Usage, summed over adapters
  Reading adapterShared;
};
PdhReadings pdhReadings(uint64_t pid);

struct DxgiReadings {
  Reading local;     // QueryVideoMemoryInfo, DXGI_MEMORY_SEGMENT_GROUP_LOCAL, CurrentUsage
  Reading nonLocal;  // ... NON_LOCAL
};
// This process's usage on the adapter of CUDA device `dev` (matched by LUID).
DxgiReadings dxgiReadings(CUdevice dev, bool haveDevice);

}  // namespace cp
