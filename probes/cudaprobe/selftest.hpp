// `cudaprobe selftest ...`: the Windows adapter code on inputs the tests choose, for machines
// without the GPU it needs (never used by a real run).
//
//   cudaprobe selftest pdh-select PID LUID|-   "NAME<TAB>VALUE" lines of a counter's instance list on
//                                              stdin: what the sampler makes of them, for process
//                                              PID (0: the adapter instances) on adapter LUID
//                                              (0xHIGH_0xLOW; - for none)
//   cudaprobe selftest vm-select [NAME...]     "process PID NAME" and "NAME<TAB>VALUE" (an instance of a
//                                              counter) lines on stdin: the VM processes vm-memory
//                                              finds among them (named NAME..., default vmmemWSL,
//                                              vmmem) and the sum of their instances
//   cudaprobe selftest adapter LUID            the adapter's PDH, DXGI/DXCore and scheduler
//                                              readings, each a value or null with its reason
//   cudaprobe selftest p2p-topology|p2p-staged|p2p-mig < input.json
//                                              the p2p probe's facts of a recorded or handwritten
//                                              topology, bandwidths or MIG slices (probes/p2p_topology.hpp)
//   cudaprobe selftest tdr-reason linux|wsl    the watchdog's reason for a null TdrDelay there
#pragma once

namespace cp {

int runSelftest(int argc, char** argv);

}  // namespace cp
