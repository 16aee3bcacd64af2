// The instances of Windows' GPU performance counters, told apart by process and adapter.
// \GPU Process Memory(*) names its instances "pid_1234_luid_0x00000000_0x0000D3E5_phys_0",
// \GPU Adapter Memory(*) "luid_0x00000000_0x0000D3E5_phys_0": the LUID's HighPart, then its
// LowPart, then the physical adapter of a linked group. Pure functions, so that they can be
// tested anywhere (`cudaprobe selftest pdh-select`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "process.hpp"

namespace cp {

struct AdapterLuid {
  uint32_t low = 0;
  int32_t high = 0;
};
// "luid_0xHHHHHHHH_0xLLLLLLLL", as the counters name it.
std::string luidName(const AdapterLuid& l);
// The LUID in cuDeviceGetLuid's 8 bytes (a Windows LUID struct: LowPart, then HighPart).
AdapterLuid luidFromBytes(const char bytes[8]);

struct GpuInstance {
  bool ok = false;      // the name has the documented shape
  bool hasPid = false;  // a per-process instance
  uint64_t pid = 0;
  AdapterLuid luid;
  int phys = 0;
};
GpuInstance parseGpuInstance(const std::string& name);

struct CounterItem {
  std::string name;
  double value = 0;
};

// The sum of the instances of process `pid` (0: the adapter instances) on adapter `luid`;
// unavailable, with the reason, when there is no such instance. `luid` null: the adapter is not
// known (its reason in `noLuidReason`), and nothing is summed.
Reading selectInstances(const std::vector<CounterItem>& items, uint64_t pid, const AdapterLuid* luid, const std::string& noLuidReason);

}  // namespace cp
