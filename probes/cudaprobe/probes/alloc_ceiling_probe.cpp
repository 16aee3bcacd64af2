// alloc-ceiling (C20): how much device memory can really be allocated, against the free VRAM
// the driver reports at the start. Per API (cuMemAlloc, cudaMalloc, cudaMallocAsync), in a fresh
// subject: the largest single allocation (bisection) and the total of chunks held at once, both
// bounded by max_gib (0: the device's total memory, never past it). Opt-in: it fills the card.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../probe.hpp"
#include "../sampler.hpp"

namespace cp {

namespace {

std::vector<std::string> ceilingApis(const Params& params) {
  std::string list = params.get("apis");
  std::vector<std::string> apis;
  for (const char* a : {"driver", "runtime", "async"}) {
    if (list.find(a) != std::string::npos) apis.push_back(a);
  }
  if (apis.empty()) throw UsageError{"parameter apis must name driver, runtime and/or async, got " + list};
  return apis;
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);
  return buf;
}

// The fact of one API: whether the chunks held at once reached the free VRAM reported at the
// start, less one chunk and a margin for the context's own growth and fragmentation.
void emitReaches(const std::string& probe, const std::string& api, double freeVram, double cumulative, bool failed, double chunk,
                 double cap) {
  std::string name = api == "driver" ? "reaches_free_vram" : "reaches_free_vram_" + api;
  Obj ev = Obj().num("cumulative_bytes", cumulative).num("free_vram_bytes", freeVram).num("cap_bytes", cap);
  if (!failed) {
    emitFact(probe, name.c_str(), "null", ev,
             "the safety cap (" + gib(cap) + ") stopped it before an allocation failed; raise max_gib to find the ceiling");
    return;
  }
  double slack = chunk + std::max(512 * kMiB, 0.03 * freeVram);
  emitFact(probe, name.c_str(), cumulative + slack >= freeVram ? "true" : "false", ev.num("shortfall_bytes", freeVram - cumulative));
}

bool measureApi(ProbeContext& ctx, const std::string& api, double chunk, double maxBytes, double granularity, bool& failedRun) {
  Obj attrs = Obj().str("api", api);
  SubjectProc p(ctx);
  if (!p.started || !p.hasDriver) {
    emitError(ctx.probe, api + " series: " + p.startError);
    failedRun = true;
    return false;
  }
  Json a;
  std::string error;
  if (!p.ask("meminfo", a, error) || a.num("cu_free", -1) < 0) {
    emitMetricNull(ctx.probe, "free_vram_bytes", "bytes", error.empty() ? a.str("cu_reason") : error, attrs);
    p.finish();
    return true;
  }
  double freeVram = a.num("cu_free"), total = a.num("cu_total");
  double cap = std::floor((maxBytes > 0 ? std::min(maxBytes, total) : total) / granularity) * granularity;
  emitMetric(ctx.probe, "free_vram_bytes", freeVram, "bytes", attrs);
  emitMetric(ctx.probe, "total_vram_bytes", total, "bytes", attrs);
  char cmd[160];
  std::snprintf(cmd, sizeof cmd, "largest %s %.0f %.0f", api.c_str(), cap, granularity);
  if (p.ask(cmd, a, error)) {
    Obj full = Obj().str("api", api).num("cap_bytes", cap).str("stopped_by", a.flag("capped") ? "safety-cap" : "allocation-failure");
    if (!a.str("error").empty()) full.str("failure", a.str("error"));
    emitMetric(ctx.probe, "largest_single_bytes", a.num("bytes"), "bytes", full);
  } else {
    emitMetricNull(ctx.probe, "largest_single_bytes", "bytes", error, attrs);
  }
  std::snprintf(cmd, sizeof cmd, "fill %s %.0f %.0f", api.c_str(), chunk, cap);
  if (p.ask(cmd, a, error)) {
    bool failed = a.flag("failed");
    Obj full = Obj().str("api", api).num("cap_bytes", cap).num("chunk_bytes", chunk).str("stopped_by", failed ? "allocation-failure" : "safety-cap");
    if (failed) full.str("failure", a.str("error"));
    double cumulative = a.num("bytes");
    emitMetric(ctx.probe, "cumulative_bytes", cumulative, "bytes", full);
    if (failed) emitMetric(ctx.probe, "shortfall_bytes", freeVram - cumulative, "bytes", attrs);
    if (p.ask("meminfo", a, error) && a.num("cu_free", -1) >= 0) emitMetric(ctx.probe, "free_after_fill_bytes", a.num("cu_free"), "bytes", attrs);
    emitReaches(ctx.probe, api, freeVram, cumulative, failed, chunk, cap);
  } else {
    emitMetricNull(ctx.probe, "cumulative_bytes", "bytes", error, attrs);
  }
  p.ask("free", a, error);
  if (!p.finish()) {
    emitError(ctx.probe, api + " series: the subject did not exit cleanly");
    failedRun = true;
  }
  return true;
}

}  // namespace

int allocCeiling(ProbeContext& ctx) {
  std::vector<std::string> apis = ceilingApis(ctx.params);
  double chunk = ctx.params.number("chunk_mib") * kMiB;
  double maxBytes = ctx.params.number("max_gib") * kGiB;
  double granularity = ctx.params.number("granularity_mib") * kMiB;
  if (!(chunk > 0) || !(granularity > 0) || maxBytes < 0 || (maxBytes > 0 && (maxBytes < chunk || maxBytes < granularity))) {
    throw UsageError{"parameters chunk_mib and granularity_mib must be positive, and max_gib 0 (the device's memory) or at least one chunk and one granule"};
  }
  if (!requireDevice(ctx)) return kExitNoDriver;
  Cuda& c = cuda();
  CUdevice dev = 0;
  c.cuDeviceGet(&dev, ctx.device);
  int pools = 0;
  if (c.cuDeviceGetAttribute(&pools, CU_ATTR_MEMORY_POOLS_SUPPORTED, dev) == 0) {
    emitFact(ctx.probe, "memory_pools_supported", pools ? "true" : "false", Obj().integer("CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED", pools));
  } else {
    emitFact(ctx.probe, "memory_pools_supported", "null", Obj(), "the driver does not know CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED");
  }
  bool failedRun = false;
  for (const auto& api : apis) {
    Cudart& r = cudart();
    if (api != "driver" && !r.ok()) {
      emitSkip(ctx.probe, "no CUDA runtime library on this target: the " + api + " series is not run", (api + " series").c_str());
      continue;
    }
    if (api == "async" && (!r.cudaMallocAsync || !pools)) {
      emitSkip(ctx.probe, pools ? "the CUDA runtime library lacks cudaMallocAsync (CUDA 11.2+)" : "the device has no memory pools (cudaMallocAsync)",
               "async series");
      continue;
    }
    measureApi(ctx, api, chunk, maxBytes, granularity, failedRun);
  }
  return failedRun ? kExitProbeFailure : kExitRan;
}

}  // namespace cp
