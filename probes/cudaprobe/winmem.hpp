// Windows' own views of GPU memory: the PDH counters (read by the sampler, which never creates
// a CUDA context) and DXGI's or DXCore's segment usage (read by the subject about itself), each
// for the CUDA device's adapter only, matched by its LUID. Elsewhere they are unavailable, with
// that reason.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cuda.hpp"
#include "pdh_instances.hpp"
#include "process.hpp"

namespace cp {

// A wildcard GPU counter's instances with their values ("\\GPU Process Memory(*)\\Shared Usage");
// false, with `reason`, when it cannot be read (no such counter set: Wine, Windows before 1709).
bool readGpuCounter(const wchar_t* path, std::vector<CounterItem>& items, std::string& reason);

// The CUDA device's WDDM adapter: its LUID, or why it has none (TCC, no driver, not Windows).
struct DeviceAdapter {
  bool known = false;
  AdapterLuid luid;
  std::string reason;
};
DeviceAdapter deviceAdapter(CUdevice dev, bool haveDevice);

struct PdhReadings {
  Reading processDedicated;  // \GPU Process Memory(pid_N_luid_L_phys_*)\Dedicated Usage
  Reading processShared;     // \GPU Process Memory(pid_N_luid_L_phys_*)\Shared Usage
  Reading adapterDedicated;  // \GPU Adapter Memory(luid_L_phys_*)\Dedicated Usage
  Reading adapterShared;
};
// The counters of process `pid` (0: the adapter's only) on the device's adapter.
PdhReadings pdhReadings(uint64_t pid, const DeviceAdapter& adapter);

struct DxgiReadings {
  Reading local;     // QueryVideoMemoryInfo / AdapterMemoryBudget, local segment group, CurrentUsage
  Reading nonLocal;  // ... non-local
};
// This process's usage on the adapter of CUDA device `dev` (matched by LUID): DXGI, or DXCore
// where DXGI lists no such adapter (compute-only MCDM adapters).
DxgiReadings dxgiReadings(CUdevice dev, bool haveDevice);
// The same for the adapter of `luid`.
DxgiReadings adapterMemory(const AdapterLuid& luid);

// Whether the hardware scheduler runs on the adapter now (D3DKMT WDDM 2.7 caps): 1 on, 0 off,
// -1 unknown with `reason`.
int hwSchedulerEnabled(const DeviceAdapter& adapter, std::string& reason);

}  // namespace cp
