// The p2p probe (C15-C18): every pair of the machine's GPUs. What the driver and NVML say of
// the pair (p2p_topology.cpp decides the facts), then copies both ways without and with peer
// access, each verified word by word, the cost of enabling in time and in free VRAM, and the
// same for MIG slices, one process each. A failed call is a fact's reason, never a crash.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "p2p_iommu.hpp"
#include "p2p_topology.hpp"
#include "../probe.hpp"
#include "../process.hpp"
#include "../sampler.hpp"

namespace cp {

namespace {

constexpr unsigned kNvlinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr unsigned kDstFill = 0xA5A5A5A5u;

// The words a copy must deliver: different at every offset and for every direction, so that a
// misplaced, stale or zeroed block shows.
uint32_t pattern(size_t i, uint32_t seed) {
  uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  return x == kDstFill ? x + 1 : x;
}

std::string busIdOf(CUdevice dev) {
  int domain = 0, bus = 0, slot = 0;
  cuda().cuDeviceGetAttribute(&domain, CU_ATTR_PCI_DOMAIN_ID, dev);
  cuda().cuDeviceGetAttribute(&bus, CU_ATTR_PCI_BUS_ID, dev);
  cuda().cuDeviceGetAttribute(&slot, CU_ATTR_PCI_DEVICE_ID, dev);
  char id[32];
  std::snprintf(id, sizeof id, "%08x:%02x:%02x.0", domain, bus, slot);  // NVML's form
  return id;
}

bool sameBus(const char* nvml, const std::string& ours) {
  std::string a(nvml), b(ours);
  for (auto* s : {&a, &b}) {
    for (auto& ch : *s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return a == b;
}

// What NVML says of a pair; unknowns stay -1 with the reason.
void readNvmlPair(P2pPair& p, nvmlDevice_t a, nvmlDevice_t b, const std::string& busB) {
  Nvml& n = nvml();
  if (!a || !b) {
    p.unknownWhy = "no NVML handle for the pair";
    return;
  }
  int v = 0;
  if (n.nvmlDeviceGetTopologyCommonAncestor && n.nvmlDeviceGetTopologyCommonAncestor(a, b, &v) == 0) p.ancestor = v;
  else p.unknownWhy = "nvmlDeviceGetTopologyCommonAncestor failed or is missing";
  if (n.nvmlDeviceGetP2PStatus) {
    if (n.nvmlDeviceGetP2PStatus(a, b, 0 /* READ */, &v) == 0) p.nvmlRead = v;
    if (n.nvmlDeviceGetP2PStatus(a, b, 1 /* WRITE */, &v) == 0) p.nvmlWrite = v;
    if (n.nvmlDeviceGetP2PStatus(a, b, 2 /* NVLINK */, &v) == 0) p.nvmlNvlink = v;
  } else {
    p.unknownWhy = "the NVML library lacks nvmlDeviceGetP2PStatus";
  }
  if (!n.nvmlDeviceGetNvLinkState) return;
  for (unsigned l = 0; l < kNvlinkMaxLinks; ++l) {
    int active = 0;
    if (n.nvmlDeviceGetNvLinkState(a, l, &active) != 0 || !active) continue;
    int type = 0;
    nvmlPciInfo_t remote{};
    // Through an NVSwitch every active link reaches every GPU behind it, as nvidia-smi counts.
    if (n.nvmlDeviceGetNvLinkRemoteDeviceType && n.nvmlDeviceGetNvLinkRemoteDeviceType(a, l, &type) == 0 && type == 2 /* SWITCH */) {
      ++p.nvlinks;
    } else if (n.nvmlDeviceGetNvLinkRemotePciInfo_v2 && n.nvmlDeviceGetNvLinkRemotePciInfo_v2(a, l, &remote) == 0 && sameBus(remote.busId, busB)) {
      ++p.nvlinks;
    }
  }
}

struct Buffer {
  CUcontext ctx = nullptr;
  CUdeviceptr ptr = 0;
  ~Buffer() {
    if (ptr) {
      cuda().cuCtxSetCurrent(ctx);
      cuda().cuMemFree_v2(ptr);
    }
  }
};

struct Pinned {
  void* p = nullptr;
  ~Pinned() {
    if (p) cuda().cuMemFreeHost(p);
  }
};

double freeBytes(CUcontext ctx) {
  size_t f = 0, t = 0;
  CU(cuda().cuCtxSetCurrent(ctx));
  CU(cuda().cuMemGetInfo_v2(&f, &t));
  return static_cast<double>(f);
}

// NVML's PCIe transmit counter of a device (KB/s over its last 20 ms), in GB/s; NaN when unread.
double pcieTxGbps(nvmlDevice_t h) {
  unsigned kbps = 0;
  if (!h || !nvml().nvmlDeviceGetPcieThroughput || nvml().nvmlDeviceGetPcieThroughput(h, 0 /* TX_BYTES */, &kbps) != 0) return NAN;
  return kbps * 1024.0 / 1e9;
}

class PairRun {
 public:
  PairRun(Gpu& a, Gpu& b, nvmlDevice_t ha, nvmlDevice_t hb, size_t bytes, int reps)
      : a_(a), b_(b), ha_(ha), hb_(hb), bytes_(bytes), reps_(reps) {}

  Gpu& gpu(int which) { return which == 0 ? a_ : b_; }
  nvmlDevice_t nvmlOf(int which) { return which == 0 ? ha_ : hb_; }
  CUdeviceptr buf(int which) { return which == 0 ? bufA_.ptr : bufB_.ptr; }
  Obj dir(int src) { return Obj().integer("src", gpu(src).dev).integer("dst", gpu(1 - src).dev); }

  void allocate() {
    Cuda& c = cuda();
    bufA_.ctx = a_.ctx;
    bufB_.ctx = b_.ctx;
    CU(c.cuCtxSetCurrent(a_.ctx));
    CU(c.cuMemAlloc_v2(&bufA_.ptr, bytes_));
    CU(c.cuCtxSetCurrent(b_.ctx));
    CU(c.cuMemAlloc_v2(&bufB_.ptr, bytes_));
    CU(c.cuMemHostAlloc(&host_.p, bytes_, 1 /* CU_MEMHOSTALLOC_PORTABLE: pinned for both contexts */));
  }

  // Copies src -> dst `reps` times on a stream of the source; the median GB/s, and NVML's PCIe
  // transmit rate of the source read while they run.
  double bandwidth(int src, double& pcieTx) {
    Cuda& c = cuda();
    Gpu& s = gpu(src);
    CU(c.cuCtxSetCurrent(s.ctx));
    Stream st;
    std::vector<std::unique_ptr<Event>> marks;
    for (int i = 0; i <= reps_; ++i) marks.emplace_back(new Event());
    CU(c.cuMemcpyPeerAsync(buf(1 - src), gpu(1 - src).ctx, buf(src), s.ctx, bytes_, st.s));  // warm-up
    CU(c.cuStreamSynchronize(st.s));
    marks[0]->record(st.s);
    for (int i = 0; i < reps_; ++i) {
      CU(c.cuMemcpyPeerAsync(buf(1 - src), gpu(1 - src).ctx, buf(src), s.ctx, bytes_, st.s));
      marks[static_cast<size_t>(i) + 1]->record(st.s);
    }
    sleepSeconds(0.03);  // the counter covers the last 20 ms
    pcieTx = pcieTxGbps(nvmlOf(src));
    std::vector<double> ms;
    for (int i = 0; i < reps_; ++i) ms.push_back(elapsedMs(*marks[static_cast<size_t>(i)], *marks[static_cast<size_t>(i) + 1]));
    return static_cast<double>(bytes_) / (median(ms) / 1000.0) / 1e9;
  }

  // The slower of pinned D2H from the source and H2D to the destination: the host path.
  double hostPath(int src) {
    Cuda& c = cuda();
    auto timed = [&](int which, bool toHost) {
      CU(c.cuCtxSetCurrent(gpu(which).ctx));
      Stream st;
      Event e0, e1;
      std::vector<double> ms;
      for (int i = 0; i < reps_ + 1; ++i) {
        e0.record(st.s);
        if (toHost) CU(c.cuMemcpyDtoHAsync_v2(host_.p, buf(which), bytes_, st.s));
        else CU(c.cuMemcpyHtoDAsync_v2(buf(which), host_.p, bytes_, st.s));
        e1.record(st.s);
        double t = elapsedMs(e0, e1);
        if (i > 0) ms.push_back(t);
      }
      return static_cast<double>(bytes_) / (median(ms) / 1000.0) / 1e9;
    };
    return std::min(timed(src, true), timed(1 - src, false));
  }

  // One copy src -> dst of a known pattern, read back and compared word by word. Returns the
  // wrong bytes (counted a word at a time), or -1 with `error` when a call failed.
  double verify(int src, uint32_t seed, std::string& error) {
    Cuda& c = cuda();
    size_t words = bytes_ / 4;
    auto* h = static_cast<uint32_t*>(host_.p);
    for (size_t i = 0; i < words; ++i) h[i] = pattern(i, seed);
    CUresult rc = 0;
    auto step = [&](CUresult r, const char* what) {
      if (rc == 0 && r != 0) {
        rc = r;
        error = std::string(what) + " failed: " + c.err(r);
      }
    };
    step(c.cuCtxSetCurrent(gpu(src).ctx), "cuCtxSetCurrent");
    step(c.cuMemcpyHtoDAsync_v2(buf(src), h, bytes_, nullptr), "cuMemcpyHtoD");
    step(c.cuCtxSynchronize(), "cuCtxSynchronize");
    step(c.cuCtxSetCurrent(gpu(1 - src).ctx), "cuCtxSetCurrent");
    step(c.cuMemsetD32_v2(buf(1 - src), kDstFill, words), "cuMemsetD32");
    step(c.cuCtxSynchronize(), "cuCtxSynchronize");
    step(c.cuCtxSetCurrent(gpu(src).ctx), "cuCtxSetCurrent");
    step(c.cuMemcpyPeerAsync(buf(1 - src), gpu(1 - src).ctx, buf(src), gpu(src).ctx, bytes_, nullptr), "cuMemcpyPeerAsync");
    step(c.cuCtxSynchronize(), "cuCtxSynchronize");
    std::memset(h, 0, bytes_);
    step(c.cuCtxSetCurrent(gpu(1 - src).ctx), "cuCtxSetCurrent");
    step(c.cuMemcpyDtoHAsync_v2(h, buf(1 - src), bytes_, nullptr), "cuMemcpyDtoH");
    step(c.cuCtxSynchronize(), "cuCtxSynchronize");
    if (rc != 0) return -1;
    size_t wrong = 0;
    for (size_t i = 0; i < words; ++i) wrong += h[i] != pattern(i, seed);
    return static_cast<double>(wrong) * 4;
  }

 private:
  Gpu &a_, &b_;
  nvmlDevice_t ha_, hb_;
  size_t bytes_;
  int reps_;
  Buffer bufA_, bufB_;
  Pinned host_;
};

struct PairVerdict {
  std::string copyOff = "null", copyOn = "null", staged = "null", enabled = "null", vram = "null";
  std::string why;
};

void note(PairVerdict& v, const std::string& why) {
  if (v.why.empty()) v.why = why;
}

// Everything measured of one pair; the facts' per-pair values come back.
PairVerdict measurePair(ProbeContext& ctx, const P2pPair& topo, Gpu& a, Gpu& b, nvmlDevice_t ha, nvmlDevice_t hb, size_t bytes, int reps, size_t mapBytes) {
  Cuda& c = cuda();
  PairVerdict v;
  const std::string pair = std::to_string(topo.a) + "-" + std::to_string(topo.b);
  PairRun run(a, b, ha, hb, bytes, reps);
  run.allocate();
  bool peerPossible = topo.canAB == 1 && topo.canBA == 1;
  const char* stage[] = {"before-enable", "after-enable", "after-mapping"};
  double freeAt[3][2] = {{NAN, NAN}, {NAN, NAN}, {NAN, NAN}};
  for (int d = 0; d < 2; ++d) freeAt[0][d] = freeBytes(run.gpu(d).ctx);

  // Without peer access: bandwidth, the host path, and a verified copy, both ways.
  double off[2], host[2], tx[2];
  std::vector<std::string> intactOff;
  for (int src = 0; src < 2; ++src) {
    off[src] = run.bandwidth(src, tx[src]);
    host[src] = run.hostPath(src);
    Obj at = run.dir(src).boolean("peer", false).num("size_bytes", static_cast<double>(bytes));
    emitMetric(ctx.probe, "bandwidth_gbps", off[src], "GB/s", at);
    emitMetric(ctx.probe, "host_path_gbps", host[src], "GB/s", run.dir(src));
    if (std::isnan(tx[src])) emitMetricNull(ctx.probe, "pcie_tx_gbps", "GB/s", "NVML's PCIe throughput counter could not be read", run.dir(src).boolean("peer", false));
    else emitMetric(ctx.probe, "pcie_tx_gbps", tx[src], "GB/s", run.dir(src).boolean("peer", false));
    std::string error;
    double wrong = run.verify(src, 0x1000u + static_cast<uint32_t>(src), error);
    if (wrong < 0) {
      emitMetricNull(ctx.probe, "wrong_bytes", "bytes", error, run.dir(src).boolean("peer", false));
      note(v, pair + " without peer access: " + error);
      intactOff.push_back("null");
    } else {
      emitMetric(ctx.probe, "wrong_bytes", wrong, "bytes", run.dir(src).boolean("peer", false).num("size_bytes", static_cast<double>(bytes)));
      intactOff.push_back(wrong == 0 ? "true" : "false");
    }
  }
  v.copyOff = allOf(intactOff);
  if (!peerPossible) {
    std::string r;
    v.staged = stagedThroughHost(false, off[0], NAN, host[0], r);
    note(v, pair + ": cuDeviceCanAccessPeer says no, so peer access was not enabled");
    return v;
  }

  // Enabling, each context to the other's memory, timed; then the first copy and the steady ones.
  std::vector<std::string> enabledBoth;
  for (int src = 0; src < 2; ++src) {
    CU(c.cuCtxSetCurrent(run.gpu(src).ctx));
    double t0 = nowSeconds();
    CUresult rc = c.cuCtxEnablePeerAccess(run.gpu(1 - src).ctx, 0);
    double ms = (nowSeconds() - t0) * 1000;
    if (rc == 0 || rc == 704 /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */) {
      emitMetric(ctx.probe, "enable_ms", ms, "ms", run.dir(src));
      enabledBoth.push_back("true");
    } else {
      emitMetricNull(ctx.probe, "enable_ms", "ms", "cuCtxEnablePeerAccess failed: " + c.err(rc), run.dir(src));
      note(v, pair + ": cuCtxEnablePeerAccess failed: " + c.err(rc));
      enabledBoth.push_back("false");
    }
  }
  v.enabled = allOf(enabledBoth);
  if (v.enabled != "true") return v;
  for (int d = 0; d < 2; ++d) freeAt[1][d] = freeBytes(run.gpu(d).ctx);

  std::vector<std::string> intactOn, staged;
  for (int src = 0; src < 2; ++src) {
    // The first copy after enabling, against a steady one (the cost of first use).
    CU(c.cuCtxSetCurrent(run.gpu(src).ctx));
    double t0 = nowSeconds();
    CU(c.cuMemcpyPeerAsync(run.buf(1 - src), run.gpu(1 - src).ctx, run.buf(src), run.gpu(src).ctx, bytes, nullptr));
    CU(c.cuCtxSynchronize());
    double first = (nowSeconds() - t0) * 1000;
    t0 = nowSeconds();
    CU(c.cuMemcpyPeerAsync(run.buf(1 - src), run.gpu(1 - src).ctx, run.buf(src), run.gpu(src).ctx, bytes, nullptr));
    CU(c.cuCtxSynchronize());
    double second = (nowSeconds() - t0) * 1000;
    emitMetric(ctx.probe, "first_copy_ms", first, "ms", run.dir(src).num("size_bytes", static_cast<double>(bytes)));
    emitMetric(ctx.probe, "steady_copy_ms", second, "ms", run.dir(src).num("size_bytes", static_cast<double>(bytes)));
    double txOn = NAN;
    double on = run.bandwidth(src, txOn);
    emitMetric(ctx.probe, "bandwidth_gbps", on, "GB/s", run.dir(src).boolean("peer", true).num("size_bytes", static_cast<double>(bytes)));
    if (std::isnan(txOn)) emitMetricNull(ctx.probe, "pcie_tx_gbps", "GB/s", "NVML's PCIe throughput counter could not be read", run.dir(src).boolean("peer", true));
    else emitMetric(ctx.probe, "pcie_tx_gbps", txOn, "GB/s", run.dir(src).boolean("peer", true));
    std::string error;
    double wrong = run.verify(src, 0x2000u + static_cast<uint32_t>(src), error);
    if (wrong < 0) {
      emitMetricNull(ctx.probe, "wrong_bytes", "bytes", error, run.dir(src).boolean("peer", true));
      note(v, pair + " with peer access: " + error);
      intactOn.push_back("null");
    } else {
      emitMetric(ctx.probe, "wrong_bytes", wrong, "bytes", run.dir(src).boolean("peer", true).num("size_bytes", static_cast<double>(bytes)));
      intactOn.push_back(wrong == 0 ? "true" : "false");
    }
    std::string reason;
    staged.push_back(stagedThroughHost(true, off[src], on, host[src], reason));
    if (!reason.empty()) note(v, pair + ": " + reason);
  }
  v.copyOn = allOf(intactOn);
  v.staged = anyOf(staged);  // either direction

  // A peer mapping: with peer access on, a new allocation on b is mapped into a's context too.
  {
    Buffer extra;
    extra.ctx = b.ctx;
    CU(c.cuCtxSetCurrent(b.ctx));
    CU(c.cuMemAlloc_v2(&extra.ptr, mapBytes));
    CU(c.cuMemsetD32_v2(extra.ptr, 0, mapBytes / 4));
    CU(c.cuCtxSetCurrent(a.ctx));
    CU(c.cuMemcpyPeerAsync(run.buf(0), a.ctx, extra.ptr, b.ctx, std::min(mapBytes, bytes), nullptr));  // a touches it
    CU(c.cuCtxSynchronize());
    for (int d = 0; d < 2; ++d) freeAt[2][d] = freeBytes(run.gpu(d).ctx);
  }
  std::vector<std::string> costs;
  for (int d = 0; d < 2; ++d) {
    Obj dev = Obj().integer("device", run.gpu(d).dev).str("pair", pair);
    for (int s = 0; s < 3; ++s) emitMetric(ctx.probe, "free_bytes", freeAt[s][d], "bytes", Obj().integer("device", run.gpu(d).dev).str("pair", pair).str("stage", stage[s]));
    double enableCost = freeAt[0][d] - freeAt[1][d];
    // b's own allocation is not a cost of the mapping.
    double mapCost = freeAt[1][d] - freeAt[2][d] - (d == 1 ? static_cast<double>(mapBytes) : 0);
    emitMetric(ctx.probe, "enable_vram_cost_bytes", enableCost, "bytes", dev);
    emitMetric(ctx.probe, "mapping_vram_cost_bytes", mapCost, "bytes", Obj().integer("device", run.gpu(d).dev).str("pair", pair).num("mapped_bytes", static_cast<double>(mapBytes)));
    // cuMemGetInfo moves in 2 MiB steps: more than one step is a cost.
    costs.push_back(enableCost > 2 * kMiB || mapCost > 2 * kMiB ? "true" : "false");
  }
  v.vram = costs[0] == "true" || costs[1] == "true" ? "true" : "false";
  for (int src = 0; src < 2; ++src) {
    CU(c.cuCtxSetCurrent(run.gpu(src).ctx));
    c.cuCtxDisablePeerAccess(run.gpu(1 - src).ctx);
  }
  return v;
}

// One process per MIG device UUID (the only way CUDA sees a slice): its memory against the
// profile, pinning in it, and how many devices a process given two slices enumerates.
std::vector<MigSlice> measureMig(ProbeContext& ctx, const std::vector<nvmlDevice_t>& parents, double pinBytes) {
  Nvml& n = nvml();
  std::vector<std::pair<std::string, double>> uuids;  // MIG UUID, NVML's memory total
  for (nvmlDevice_t parent : parents) {
    unsigned max = 0;
    if (!n.nvmlDeviceGetMaxMigDeviceCount || n.nvmlDeviceGetMaxMigDeviceCount(parent, &max) != 0) continue;
    for (unsigned i = 0; i < max; ++i) {
      nvmlDevice_t mig = nullptr;
      if (!n.nvmlDeviceGetMigDeviceHandleByIndex || n.nvmlDeviceGetMigDeviceHandleByIndex(parent, i, &mig) != 0) continue;
      char uuid[96] = {0};
      nvmlMemory_t mem{};
      if (n.nvmlDeviceGetUUID(mig, uuid, sizeof uuid) != 0) continue;
      uuids.emplace_back(uuid, n.nvmlDeviceGetMemoryInfo(mig, &mem) == 0 ? static_cast<double>(mem.total) : -1);
    }
  }
  std::vector<MigSlice> slices;
  ProbeContext sub = ctx;
  sub.device = 0;  // the slice is the process's only device
  for (size_t i = 0; i < uuids.size(); ++i) {
    MigSlice s;
    s.uuid = uuids[i].first;
    s.profileBytes = uuids[i].second;
    s.pinnedBytes = pinBytes;
    // Two slices in one CUDA_VISIBLE_DEVICES: how many a process sees.
    std::string visible = s.uuid + (uuids.size() > 1 ? "," + uuids[(i + 1) % uuids.size()].first : "");
    SubjectProc p(sub, {{"CUDA_VISIBLE_DEVICES", visible}});
    Json a;
    std::string error;
    if (!p.hasDriver) s.error = p.startError;
    else if (!p.ask("meminfo", a, error)) s.error = error;
    else {
      s.cuTotalBytes = a.num("cu_total");
      s.freeBeforePin = a.num("cu_free");
      if (!p.ask("alloc driver pinned " + std::to_string(static_cast<long long>(pinBytes)), a, error) || !p.ask("touch", a, error) || !p.ask("meminfo", a, error)) s.error = error;
      else s.freeAfterPin = a.num("cu_free");
      if (p.ask("devices", a, error)) s.visibleDevices = static_cast<int>(a.num("count"));
      p.ask("free", a, error);
    }
    p.finish();
    Obj at = Obj().str("uuid", s.uuid);
    emitMetric(ctx.probe, "mig_profile_bytes", s.profileBytes, "bytes", at);
    emitMetric(ctx.probe, "mig_total_bytes", s.cuTotalBytes, "bytes", at);
    emitMetric(ctx.probe, "mig_pinned_free_drop_bytes", s.freeBeforePin - s.freeAfterPin, "bytes", Obj().str("uuid", s.uuid).num("pinned_bytes", pinBytes));
    slices.push_back(s);
  }
  return slices;
}

}  // namespace

int p2p(ProbeContext& ctx) {
  double sizeMib = ctx.params.number("size_mib");
  int reps = static_cast<int>(ctx.params.number("repetitions"));
  double mapMib = ctx.params.number("map_mib");
  double migPinMib = ctx.params.number("mig_pin_mib");
  if (!(sizeMib >= 1) || sizeMib > 4096) throw UsageError{"parameter size_mib takes 1 to 4096 MiB"};
  if (reps < 3) throw UsageError{"parameter repetitions must be at least 3"};
  if (!(mapMib >= 2) || mapMib > 4096 || !(migPinMib >= 1)) throw UsageError{"parameters map_mib (2 to 4096) and mig_pin_mib (1 or more) are MiB"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Cuda& c = cuda();
  Nvml& n = nvml();
  int count = 0;
  CU(c.cuDeviceGetCount(&count));
  emitFact(ctx.probe, "device_count", std::to_string(count), Obj().str("source", "cuDeviceGetCount"));
  bool topoCalls = n.ok() && n.nvmlDeviceGetTopologyCommonAncestor && n.nvmlDeviceGetP2PStatus;
  emitFact(ctx.probe, "nvml_topology_available", n.ok() ? (topoCalls ? "true" : "false") : "null",
           Obj().boolean("nvmlDeviceGetTopologyCommonAncestor", n.nvmlDeviceGetTopologyCommonAncestor != nullptr).boolean("nvmlDeviceGetP2PStatus", n.nvmlDeviceGetP2PStatus != nullptr),
           n.ok() ? "" : n.whyNot());

  // MIG mode from NVML's own list of GPUs (CUDA may list a slice, never its parent); read, never changed.
  std::vector<nvmlDevice_t> migParents;
  std::vector<std::string> migBusIds;
  std::string mig = "null", migWhy = n.ok() ? "" : n.whyNot();
  unsigned nvmlCount = 0;
  if (n.ok() && !n.nvmlDeviceGetMigMode) migWhy = "the NVML library lacks nvmlDeviceGetMigMode";
  else if (n.ok() && n.nvmlDeviceGetCount_v2(&nvmlCount) == 0) {
    int on = 0, off = 0, unsupported = 0;
    for (unsigned i = 0; i < nvmlCount; ++i) {
      nvmlDevice_t h = nullptr;
      unsigned cur = 0, pending = 0;
      if (n.nvmlDeviceGetHandleByIndex_v2(i, &h) != 0) continue;
      nvmlReturn_t rc = n.nvmlDeviceGetMigMode(h, &cur, &pending);
      if (rc == NVML_ERROR_NOT_SUPPORTED) ++unsupported;
      else if (rc != 0) migWhy = "nvmlDeviceGetMigMode: " + n.err(rc);
      else if (cur != 1) ++off;
      else {
        ++on;
        migParents.push_back(h);
        nvmlPciInfo_t pci{};
        if (n.nvmlDeviceGetPciInfo_v3 && n.nvmlDeviceGetPciInfo_v3(h, &pci) == 0) migBusIds.push_back(pci.busId);
      }
    }
    if (on) mig = "\"enabled\"";
    else if (migWhy.empty()) mig = off ? "\"disabled\"" : unsupported ? "\"unsupported\"" : "null";
    if (mig == "null" && migWhy.empty()) migWhy = "NVML lists no GPU";
  } else if (n.ok()) {
    migWhy = "nvmlDeviceGetCount failed";
  }
  emitFact(ctx.probe, "mig_mode", mig, Obj(), mig == "null" ? migWhy : "");
  if (!migParents.empty()) emitMigFacts(ctx.probe, measureMig(ctx, migParents, migPinMib * kMiB));

  std::vector<P2pDevice> devices;
  std::vector<nvmlDevice_t> handles;
  for (int i = 0; i < count; ++i) {
    P2pDevice d;
    d.index = i;
    CUdevice dev = 0;
    CU(c.cuDeviceGet(&dev, i));
    d.busId = busIdOf(dev);
    for (const auto& b : migBusIds) d.mig = d.mig || sameBus(b.c_str(), d.busId);
    std::string why;
    handles.push_back(d.mig ? nullptr : nvmlDeviceFor(dev, why));
    devices.push_back(d);
  }

  // The IOMMU and ACS state is worth knowing with one GPU too: it decides a second one's fate (C34).
  std::vector<std::string> busIds;
  for (const auto& d : devices) busIds.push_back(d.busId);
  emitIommuFacts(ctx.probe, busIds);

  std::vector<P2pPair> pairs = pairsOf(devices);
  emitFact(ctx.probe, "pair_count", std::to_string(pairs.size()));
  if (pairs.empty()) {
    emitSkip(ctx.probe, noPairsReason(count, static_cast<int>(migParents.size())));
    return kExitNoDriver;
  }
  for (auto& p : pairs) {
    CUdevice da = 0, db = 0;
    CU(c.cuDeviceGet(&da, p.a));
    CU(c.cuDeviceGet(&db, p.b));
    if (c.cuDeviceCanAccessPeer) {
      c.cuDeviceCanAccessPeer(&p.canAB, da, db);
      c.cuDeviceCanAccessPeer(&p.canBA, db, da);
    }
    if (n.ok()) readNvmlPair(p, handles[static_cast<size_t>(p.a)], handles[static_cast<size_t>(p.b)], devices[static_cast<size_t>(p.b)].busId);
    else p.unknownWhy = n.whyNot();
  }
  emitTopologyFacts(ctx.probe, pairs);
  if (!c.cuMemcpyPeerAsync || !c.cuCtxEnablePeerAccess) {
    emitSkip(ctx.probe, "the CUDA driver lacks cuMemcpyPeerAsync or cuCtxEnablePeerAccess: the copies were not measured");
    return kExitNoDriver;
  }

  size_t bytes = static_cast<size_t>(sizeMib * kMiB) / 4 * 4;
  std::vector<std::string> off, on, staged, enabled, vram;
  std::string why;
  for (const auto& p : pairs) {
    PairVerdict v;
    try {
      Gpu a(p.a), b(p.b);
      v = measurePair(ctx, p, a, b, handles[static_cast<size_t>(p.a)], handles[static_cast<size_t>(p.b)], bytes, reps, static_cast<size_t>(mapMib * kMiB));
    } catch (const ProbeFailure& e) {
      note(v, std::to_string(p.a) + "-" + std::to_string(p.b) + ": " + e.message);
    }
    off.push_back(v.copyOff);
    on.push_back(v.copyOn);
    staged.push_back(v.staged);
    enabled.push_back(v.enabled);
    vram.push_back(v.vram);
    if (why.empty()) why = v.why;
  }
  // Each fact over every pair, with each pair's value as evidence.
  auto fact = [&](const char* name, const std::vector<std::string>& values, bool any) {
    Obj ev;
    for (size_t i = 0; i < pairs.size(); ++i) ev.raw((std::to_string(pairs[i].a) + "-" + std::to_string(pairs[i].b)).c_str(), values[i]);
    std::string v = any ? anyOf(values) : allOf(values);
    emitFact(ctx.probe, name, v, ev, v == "null" ? (why.empty() ? "not known for every pair" : why) : "");
  };
  fact("copy_intact_without_peer", off, false);
  fact("enable_ok", enabled, false);
  fact("copy_intact_with_peer", on, false);
  fact("staged_through_host", staged, true);
  fact("enable_uses_vram", vram, true);
  return kExitRan;
}

}  // namespace cp
