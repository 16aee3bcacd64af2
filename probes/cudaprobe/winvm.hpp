// cudaprobe vm-memory: a WSL 2 VM's GPU memory as its Windows host sees it (docs/claims.md C27).
#pragma once

namespace cp {

// Samples \GPU Process Memory(pid_N_*)\Dedicated Usage and Shared Usage of the VM process
// (vmmemWSL, vmmem) every --interval-ms (default 250) until --max-seconds (default 600) have
// passed, a sample line each, null with the reason where a counter cannot be read (no PDH GPU
// counter set: Wine, Windows before 1709). Where there is nothing to watch (not Windows, no VM
// process) one sample of nulls and exit status 3. Throws UsageError for a bad argument.
int runVmMemory(int argc, char** argv);

}  // namespace cp
