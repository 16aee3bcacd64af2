// Neighbours on the GPU (issue 32): whether another process used the probe's device during its
// cell, so that a changed measurement can be put down to a neighbour rather than the driver.
// Two `neighbours` lines per probe that needs a device:
//
//   {"type":"neighbours","phase":"start"|"end","processes":N|null,"used_bytes":B|null,"pids":[...],"reason":"..."}
//
// processes: how many compute processes other than this one and the subjects it started NVML
// lists on the device (nvmlDeviceGetComputeRunningProcesses_v3); used_bytes: the sum of their
// usedGpuMemory; pids: theirs, at most 16; reason: why processes or used_bytes is null (NVML
// missing or unable to say; NOT_AVAILABLE per-process memory under WDDM; another PID namespace).
// Without a usable driver or device there is no line: the probe's skip says why.
#pragma once
#include "cuda.hpp"
#include "probe.hpp"

namespace cp {

// The start check, once per run: right before the probe's own work makes a CUDA context (from
// requireDevice, and before a memory probe's first subject). Makes no context itself (cuInit and
// the device's UUID need none). Nothing is emitted without a usable driver and device.
void neighboursStart(const ProbeContext& ctx);
// This process has just made a context on `dev` (Gpu::Gpu): on the probe's device, NVML should
// list this process now; if it does not, its pids are not ours (another PID namespace).
void neighboursOwnContext(CUdevice dev);
// The end check, right after the probe's work returned (or threw), when the start was taken.
void neighboursEnd(const ProbeContext& ctx);

}  // namespace cp
