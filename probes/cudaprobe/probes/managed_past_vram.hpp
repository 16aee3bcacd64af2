// managed-memory's opt-in large step (C23): one managed allocation of a percentage of free VRAM.
#pragma once
#include "../gpu.hpp"
#include "../probe.hpp"

namespace cp {

// percent <= 100 stays within free VRAM (what the H200 run uses); above 100 it oversubscribes.
void managedPastFreeVram(ProbeContext& ctx, Gpu& gpu, double percent);

}  // namespace cp
