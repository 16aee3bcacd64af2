#include "p2p_topology.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "../emit.hpp"
#include "../probe.hpp"

namespace cp {

namespace {

std::string pairKey(const P2pPair& p) { return std::to_string(p.a) + "-" + std::to_string(p.b); }

// The JSON of a per-pair value: "true"/"false"/"null" stay as they are, text is quoted.
std::string valueJson(const std::string& v) {
  if (v == "true" || v == "false" || v == "null") return v;
  return jsonString(v);
}

// One text value over every pair: the common one, "mixed" when they differ, null when none is known.
std::string sameOf(const std::vector<std::string>& values) {
  std::string common;
  for (const auto& v : values) {
    if (v.empty()) return "null";
    if (common.empty()) common = v;
    else if (v != common) return jsonString("mixed");
  }
  return common.empty() ? "null" : jsonString(common);
}

std::string boolOf(int v) { return v < 0 ? "null" : v ? "true" : "false"; }

// A fact over every pair, with each pair's value as evidence.
void emitPairFact(const std::string& probe, const char* name, const std::vector<P2pPair>& pairs, const std::vector<std::string>& values,
                  const std::string& summaryJson, const std::string& nullReason) {
  Obj evidence;
  for (size_t i = 0; i < pairs.size(); ++i) {
    evidence.raw(pairKey(pairs[i]).c_str(), values[i].empty() ? "null" : valueJson(values[i]));
  }
  emitFact(probe, name, summaryJson, evidence, summaryJson == "null" ? nullReason : "");
}

std::string unknownReason(const std::vector<P2pPair>& pairs, const char* what) {
  for (const auto& p : pairs) {
    if (!p.unknownWhy.empty()) return std::string(what) + " is not known for pair " + pairKey(p) + ": " + p.unknownWhy;
  }
  return std::string(what) + " is not known for every pair";
}

}  // namespace

std::vector<P2pPair> pairsOf(const std::vector<P2pDevice>& devices) {
  std::vector<P2pPair> pairs;
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = i + 1; j < devices.size(); ++j) {
      if (devices[i].mig || devices[j].mig) continue;
      P2pPair p;
      p.a = devices[i].index;
      p.b = devices[j].index;
      pairs.push_back(p);
    }
  }
  return pairs;
}

std::string noPairsReason(int count, int mig) {
  return "p2p needs two or more GPUs outside MIG: " + std::to_string(count) + " device" + (count == 1 ? "" : "s") + " present" +
         (mig > 0 ? ", " + std::to_string(mig) + " in MIG mode" : "");
}

std::string linkClass(const P2pPair& p) {
  if (p.nvlinks > 0) return "NV" + std::to_string(p.nvlinks);
  if (p.nvmlNvlink == 0) return "NV";  // NVML says NVLink, the links could not be counted
  switch (p.ancestor) {
    case 0: return "internal";
    case 10: return "PIX";
    case 20: return "PXB";
    case 30: return "PHB";
    case 40: return "NODE";
    case 50: return "SYS";
    default: return "";
  }
}

std::string p2pStatusName(int status) {
  static const char* names[] = {"OK", "CHIPSET_NOT_SUPPORTED", "GPU_NOT_SUPPORTED", "IOH_TOPOLOGY_NOT_SUPPORTED", "DISABLED_BY_REGKEY", "NOT_SUPPORTED", "UNKNOWN"};
  return status >= 0 && status <= 6 ? names[status] : "";
}

std::string allOf(const std::vector<std::string>& values) {
  if (values.empty()) return "null";
  bool allTrue = true;
  for (const auto& v : values) {
    if (v == "false") return "false";
    if (v != "true") allTrue = false;
  }
  return allTrue ? "true" : "null";
}

std::string anyOf(const std::vector<std::string>& values) {
  if (values.empty()) return "null";
  bool allFalse = true;
  for (const auto& v : values) {
    if (v == "true") return "true";
    if (v != "false") allFalse = false;
  }
  return allFalse ? "false" : "null";
}

void emitTopologyFacts(const std::string& probe, const std::vector<P2pPair>& pairs) {
  std::vector<std::string> link, can, read, agree;
  for (const auto& p : pairs) {
    link.push_back(linkClass(p));
    int both = p.canAB < 0 || p.canBA < 0 ? -1 : (p.canAB && p.canBA);
    can.push_back(boolOf(both));
    read.push_back(p2pStatusName(p.nvmlRead));
    // CUDA and NVML agree when both say yes or both say no (NVML: read and write OK).
    int nvmlYes = p.nvmlRead < 0 || p.nvmlWrite < 0 ? -1 : (p.nvmlRead == 0 && p.nvmlWrite == 0);
    agree.push_back(both < 0 || nvmlYes < 0 ? "null" : boolOf(both == nvmlYes));
  }
  emitPairFact(probe, "link_class", pairs, link, sameOf(link), unknownReason(pairs, "the link class"));
  emitPairFact(probe, "can_access_peer", pairs, can, allOf(can), unknownReason(pairs, "cuDeviceCanAccessPeer"));
  emitPairFact(probe, "nvml_p2p_read", pairs, read, sameOf(read), unknownReason(pairs, "NVML's P2P read status"));
  emitPairFact(probe, "capability_agrees", pairs, agree, allOf(agree), unknownReason(pairs, "CUDA's or NVML's answer"));
}

std::string stagedThroughHost(bool peerPossible, double offGbps, double onGbps, double hostGbps, std::string& reason) {
  if (!peerPossible) return "true";  // no peer path: the driver can only copy through the host
  if (!(offGbps > 0) || !(hostGbps > 0)) {
    reason = "the copy without peer access or the host path was not measured";
    return "null";
  }
  if (!(onGbps > 0)) {
    reason = "the copy with peer access was not measured";
    return "null";
  }
  // Staged: no faster than the host path, and clearly slower than the peer path.
  if (offGbps <= 1.1 * hostGbps && onGbps >= 1.5 * offGbps) return "true";
  // Direct: as fast as the peer path, and faster than the host path allows.
  if (offGbps >= 0.8 * onGbps && offGbps > 1.1 * hostGbps) return "false";
  reason = "the peer and host paths are about as fast here: bandwidth cannot tell";
  return "null";
}

void emitMigFacts(const std::string& probe, const std::vector<MigSlice>& slices) {
  std::vector<std::string> matches, charged, peer;  // per slice: "true", "false", "partial", "null"
  Obj mEv, cEv, pEv;
  std::string why;
  for (const auto& s : slices) {
    const char* k = s.uuid.c_str();
    if (!s.error.empty()) {
      if (why.empty()) why = s.uuid + ": " + s.error;
      for (auto* v : {&matches, &charged, &peer}) v->push_back("null");
      for (auto* e : {&mEv, &cEv, &pEv}) e->null(k);
      continue;
    }
    // The slice's memory is its profile's (NVML's total of the MIG device), within 2 %.
    bool known = s.profileBytes > 0 && s.cuTotalBytes > 0;
    matches.push_back(!known ? "null" : std::fabs(s.cuTotalBytes - s.profileBytes) <= 0.02 * s.profileBytes ? "true" : "false");
    mEv.raw(k, Obj().num("profile_bytes", s.profileBytes).num("cu_total_bytes", s.cuTotalBytes).json());
    // Pinned memory charged to the slice: its free memory fell by half the pinned size or more
    // (the thresholds of pinned-vram).
    double drop = s.freeBeforePin - s.freeAfterPin;
    std::string c = "null";
    if (s.freeBeforePin >= 0 && s.freeAfterPin >= 0 && s.pinnedBytes > 0) {
      c = drop >= 0.5 * s.pinnedBytes ? "true" : drop <= 0.05 * s.pinnedBytes ? "false" : "partial";
    }
    charged.push_back(c);
    cEv.raw(k, Obj().num("pinned_bytes", s.pinnedBytes).num("free_drop_bytes", drop).json());
    // A process given two MIG UUIDs enumerates one device: no pair, no peer access.
    peer.push_back(s.visibleDevices < 0 ? "null" : s.visibleDevices >= 2 ? "true" : "false");
    pEv.raw(k, Obj().num("visible_devices", s.visibleDevices).json());
  }
  if (why.empty()) why = "not known for every slice";
  std::string m = allOf(matches);
  emitFact(probe, "mig_memory_matches_profile", m, mEv, m == "null" ? why : "");
  // Charged: true when any slice was, partial when any partly was, false when none was.
  bool partial = std::find(charged.begin(), charged.end(), "partial") != charged.end();
  std::string c = anyOf(charged) == "null" && partial ? "\"partial\"" : anyOf(charged);
  emitFact(probe, "mig_pinned_charged", c, cEv, c == "null" ? why : "");
  // Peer access between slices: true as soon as one process enumerated two of them.
  std::string p = anyOf(peer);
  emitFact(probe, "mig_peer_access", p, pEv, p == "null" ? why : "");
}

int p2pSelftest(const std::string& mode, const std::string& input) {
  Json in = Json::parse(input);
  if (in.kind != Json::Object) {
    std::fprintf(stderr, "cudaprobe: selftest %s: stdin is not a JSON object\n", mode.c_str());
    return kExitUsage;
  }
  if (mode == "p2p-topology") {
    std::vector<P2pDevice> devices;
    for (const auto& d : in.at("devices").items) {
      P2pDevice x;
      x.index = static_cast<int>(d.num("index", 0));
      x.uuid = d.str("uuid");
      x.busId = d.str("bus_id");
      x.mig = d.flag("mig");
      devices.push_back(x);
    }
    std::vector<P2pPair> pairs = pairsOf(devices);
    for (auto& p : pairs) {
      for (const auto& r : in.at("pairs").items) {
        if (static_cast<int>(r.num("a")) != p.a || static_cast<int>(r.num("b")) != p.b) continue;
        p.canAB = static_cast<int>(r.num("can_ab"));
        p.canBA = static_cast<int>(r.num("can_ba"));
        p.ancestor = static_cast<int>(r.num("ancestor"));
        p.nvmlRead = static_cast<int>(r.num("nvml_read"));
        p.nvmlWrite = static_cast<int>(r.num("nvml_write"));
        p.nvmlNvlink = static_cast<int>(r.num("nvml_nvlink"));
        p.nvlinks = static_cast<int>(r.num("nvlinks", 0));
        p.unknownWhy = r.str("unknown_why");
      }
    }
    emitFact("p2p", "pair_count", std::to_string(pairs.size()));
    if (pairs.empty()) {
      int mig = 0;
      for (const auto& d : devices) mig += d.mig;
      emitSkip("p2p", noPairsReason(static_cast<int>(devices.size()), mig));
      return kExitNoDriver;
    }
    emitTopologyFacts("p2p", pairs);
    return kExitRan;
  }
  if (mode == "p2p-staged") {
    std::string reason;
    double on = in.at("on_gbps").isNull() ? NAN : in.num("on_gbps");
    std::string v = stagedThroughHost(in.flag("peer_possible"), in.num("off_gbps"), on, in.num("host_gbps"), reason);
    emitFact("p2p", "staged_through_host", v, Obj(), reason);
    return kExitRan;
  }
  if (mode == "p2p-mig") {
    std::vector<MigSlice> slices;
    for (const auto& s : in.at("slices").items) {
      MigSlice x;
      x.uuid = s.str("uuid");
      x.profileBytes = s.num("profile_bytes");
      x.cuTotalBytes = s.num("cu_total_bytes");
      x.freeBeforePin = s.num("free_before_pin");
      x.freeAfterPin = s.num("free_after_pin");
      x.pinnedBytes = s.num("pinned_bytes", 0);
      x.visibleDevices = static_cast<int>(s.num("visible_devices"));
      x.error = s.str("error");
      slices.push_back(x);
    }
    emitMigFacts("p2p", slices);
    return kExitRan;
  }
  std::fprintf(stderr, "cudaprobe: selftest takes p2p-topology, p2p-staged or p2p-mig\n");
  return kExitUsage;
}

}  // namespace cp
