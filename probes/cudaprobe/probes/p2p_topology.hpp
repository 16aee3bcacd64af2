// The p2p probe's decisions, apart from the driver calls that feed them, so that a recorded or
// handwritten topology can be judged without GPUs (`cudaprobe selftest p2p ...`): which pairs
// are measured, their link class as `nvidia-smi topo -m` names it, the facts over every pair,
// whether a copy without peer access went through the host, and the MIG slices' facts.
#pragma once
#include <string>
#include <vector>

#include "../json.hpp"

namespace cp {

struct P2pDevice {
  int index = 0;
  std::string uuid, busId;
  bool mig = false;  // MIG mode on: its slices are measured one process each, never paired
};

// What the driver and NVML say of one pair (a < b). -1: not known (the call is missing or failed).
struct P2pPair {
  int a = 0, b = 0;
  int canAB = -1, canBA = -1;  // cuDeviceCanAccessPeer(a, b), (b, a)
  int ancestor = -1;           // nvmlDeviceGetTopologyCommonAncestor: nvmlGpuTopologyLevel_t
  int nvmlRead = -1, nvmlWrite = -1, nvmlNvlink = -1;  // nvmlDeviceGetP2PStatus: nvmlGpuP2PStatus_t
  int nvlinks = 0;             // active NVLinks from a that end at b (or at an NVSwitch)
  std::string unknownWhy;      // why some of the above are unknown
};

// The pairs of the devices outside MIG, each once (a < b).
std::vector<P2pPair> pairsOf(const std::vector<P2pDevice>& devices);

// Why there is nothing to pair (the probe's skip): `count` devices, `mig` of them in MIG mode.
std::string noPairsReason(int count, int mig);

// "NV4" (NVLink, 4 links), "PIX", "PXB", "PHB", "NODE", "SYS", "internal" (one board); "" unknown.
std::string linkClass(const P2pPair& p);
// NVML_P2P_STATUS_* without the prefix ("OK", "CHIPSET_NOT_SUPPORTED", ...); "" unknown.
std::string p2pStatusName(int status);

// The topology facts over every pair (link_class, can_access_peer, nvml_p2p_read,
// capability_agrees), each with its per-pair values as evidence ("0-1": ...).
void emitTopologyFacts(const std::string& probe, const std::vector<P2pPair>& pairs);

// A copy without peer access went through the host: "true", "false" or "null" (with `reason`).
// Bandwidths in GB/s: without and with peer access (NaN when it could not be enabled), and of the
// host path (the slower of pinned D2H from the source and H2D to the destination).
std::string stagedThroughHost(bool peerPossible, double offGbps, double onGbps, double hostGbps, std::string& reason);

// One value over several ("true", "false" or "null" each). allOf: true when all are true, false
// when one is false, else null. anyOf: true when one is true, false when all are false, else null.
std::string allOf(const std::vector<std::string>& values);
std::string anyOf(const std::vector<std::string>& values);

// A MIG slice, as its own process saw it (CUDA_VISIBLE_DEVICES=MIG-...).
struct MigSlice {
  std::string uuid;
  double profileBytes = -1;  // NVML memory total of the MIG device
  double cuTotalBytes = -1;  // cuMemGetInfo total in the process
  double freeBeforePin = -1, freeAfterPin = -1, pinnedBytes = 0;
  int visibleDevices = -1;   // devices CUDA enumerates in a process given two MIG UUIDs
  std::string error;         // why the slice could not be measured
};

// mig_memory_matches_profile, mig_pinned_charged, mig_peer_access over the slices.
void emitMigFacts(const std::string& probe, const std::vector<MigSlice>& slices);

// `cudaprobe selftest p2p-topology|p2p-staged|p2p-mig < input.json`: the facts of an input
// (tests only: probes/p2p.test.ts writes the inputs' shapes).
int p2pSelftest(const std::string& mode, const std::string& input);

}  // namespace cp
