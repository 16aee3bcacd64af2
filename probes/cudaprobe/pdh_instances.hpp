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

// A process of the host, as a process snapshot lists it ("vmmemWSL", or "vmmem.exe").
struct ProcessEntry {
  uint64_t pid = 0;
  std::string name;
};
// The VM processes among `processes`: those named one of `names`, case-insensitively, with or
// without ".exe" (the WSL 2 VM's is vmmemWSL since WSL 1.0, vmmem before and for other VMs).
std::vector<uint64_t> vmProcesses(const std::vector<ProcessEntry>& processes, const std::vector<std::string>& names);
// The sum of the per-process instances of any of `pids`, on every adapter (the host side does
// not know which adapter the distribution's CUDA device is); unavailable when there is none.
Reading selectProcesses(const std::vector<CounterItem>& items, const std::vector<uint64_t>& pids);

}  // namespace cp
