// sysmem-fallback (C21): whether device allocations past free VRAM succeed by spilling into
// system memory (Windows driver 536.40+, unless the per-application policy says otherwise), or
// fail with out-of-memory at VRAM (Linux). A subject allocates chunks up to VRAM + past_vram_gib
// (or max_gib, lower), holding them; the sampler reads every source before and after, so that on
// Windows the growth of PDH Shared Usage shows where the spill went. The write bandwidth of the
// last chunk against the first shows what a spilled chunk costs. Opt-in: it fills the card.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../probe.hpp"
#include "../sampler.hpp"

namespace cp {

namespace {

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);
  return buf;
}

}  // namespace

int sysmemFallback(ProbeContext& ctx) {
  std::string api = ctx.params.get("api");
  double chunk = ctx.params.number("chunk_mib") * kMiB;
  double past = ctx.params.number("past_vram_gib") * kGiB;
  double maxBytes = ctx.params.number("max_gib") * kGiB;
  if (api != "driver" && api != "runtime") throw UsageError{"parameter api takes driver or runtime, got " + api};
  if (!(chunk > 0)) throw UsageError{"parameter chunk_mib must be positive"};
  if (past < 0 || past > 4 * kGiB) throw UsageError{"parameter past_vram_gib takes 0 to 4 GiB (the bound past the device's memory)"};
  if (maxBytes < 0) throw UsageError{"parameter max_gib must be 0 (VRAM + past_vram_gib) or positive"};
  Sampler sampler(ctx);
  SubjectProc p(ctx);
  if (!p.started) {
    emitError(ctx.probe, p.startError);
    return kExitProbeFailure;
  }
  uint64_t pid = p.pid();
  Obj attrs = Obj().str("api", api);
  if (!p.hasDriver) {
    // The baseline is still recorded: every source, null with its reason where it is missing.
    sampler.emit("baseline", sampler.take(&p, pid), attrs);
    p.finish();
    if (requireDevice(ctx)) emitSkip(ctx.probe, "the subject could not create a CUDA context: " + p.startError);
    return kExitNoDriver;
  }
  if (api == "runtime" && !cudart().ok()) {
    emitSkip(ctx.probe, "no CUDA runtime library on this target: cudaMalloc is a runtime call (api=driver uses cuMemAlloc)");
    p.finish();
    return kExitNoDriver;
  }
  Json a;
  std::string error;
  if (!p.ask("meminfo", a, error) || a.num("cu_free", -1) < 0) {
    emitError(ctx.probe, "cuMemGetInfo in the subject failed: " + (error.empty() ? a.str("cu_reason") : error));
    p.finish();
    return kExitProbeFailure;
  }
  double freeVram = a.num("cu_free"), total = a.num("cu_total");
  // Bounded: VRAM + past_vram_gib, or max_gib when lower; and what spills past free VRAM must fit
  // in half of the system memory available now.
  double target = total + past;
  if (maxBytes > 0) target = std::min(target, maxBytes);
  Reading avail = systemAvailable();
  if (avail.ok()) target = std::min(target, freeVram + 0.5 * avail.value);
  target = std::floor(target / chunk) * chunk;
  emitMetric(ctx.probe, "free_vram_bytes", freeVram, "bytes", attrs);
  emitMetric(ctx.probe, "total_vram_bytes", total, "bytes", attrs);
  Snapshot base = sampler.take(&p, pid);
  sampler.emit("baseline", base, attrs);
  char cmd[160];
  std::snprintf(cmd, sizeof cmd, "fill %s %.0f %.0f", api.c_str(), chunk, target);
  bool asked = p.ask(cmd, a, error);
  Snapshot filled = sampler.take(&p, pid);
  sampler.emit("after-fill", filled, Obj().str("api", api).num("target_bytes", target));
  if (!asked) {
    emitMetricNull(ctx.probe, "allocated_bytes", "bytes", error, attrs);
    emitFact(ctx.probe, "allocates_past_vram", "null", Obj(), "the subject failed: " + error);
    p.finish();
    return kExitProbeFailure;
  }
  bool failed = a.flag("failed");
  double allocated = a.num("bytes");
  Obj full = Obj().str("api", api).num("target_bytes", target).str("stopped_by", failed ? "allocation-failure" : "bound");
  if (failed) full.str("failure", a.str("error"));
  emitMetric(ctx.probe, "allocated_bytes", allocated, "bytes", full);
  emitMetric(ctx.probe, "past_free_vram_bytes", allocated - freeVram, "bytes", attrs);
  double first = a.num("first_write_gbps", -1), last = a.num("last_write_gbps", -1);
  if (first > 0) emitMetric(ctx.probe, "first_chunk_write_gbps", first, "GB/s", attrs);
  if (last > 0) emitMetric(ctx.probe, "last_chunk_write_gbps", last, "GB/s", attrs);
  if (first > 0 && last > 0) emitMetric(ctx.probe, "last_first_write_ratio", last / first, "ratio", attrs);
  Delta shared = growth(base, filled, "pdh_process_shared_bytes");
  Delta dedicated = growth(base, filled, "pdh_process_dedicated_bytes");
  if (shared.ok) emitMetric(ctx.probe, "shared_usage_growth_bytes", shared.value, "bytes", attrs);
  else emitMetricNull(ctx.probe, "shared_usage_growth_bytes", "bytes", shared.reason, attrs);
  if (dedicated.ok) emitMetric(ctx.probe, "dedicated_usage_growth_bytes", dedicated.value, "bytes", attrs);

  // Past free VRAM by more than a chunk: it spilled. Stopped by a failure before: no fallback.
  // Stopped by the bound before free VRAM: the question was not reached.
  Obj ev = Obj().num("allocated_bytes", allocated).num("free_vram_bytes", freeVram).num("target_bytes", target);
  if (allocated > freeVram + chunk) {
    emitFact(ctx.probe, "allocates_past_vram", "true", ev);
  } else if (failed) {
    emitFact(ctx.probe, "allocates_past_vram", "false", ev.str("failure", a.str("error")));
  } else {
    emitFact(ctx.probe, "allocates_past_vram", "null", ev,
             "the bound (" + gib(target) + ") stopped it before free VRAM (" + gib(freeVram) + "); raise max_gib (0: VRAM + past_vram_gib) to reach it");
  }
  if (allocated > freeVram + chunk && first > 0 && last > 0) {
    emitFact(ctx.probe, "spill_slower", last < 0.5 * first ? "true" : "false", Obj().num("first_chunk_write_gbps", first).num("last_chunk_write_gbps", last));
  } else {
    emitFact(ctx.probe, "spill_slower", "null", Obj(), "nothing was allocated past free VRAM");
  }
  if (allocated > freeVram + chunk && shared.ok) {
    double spilled = allocated - freeVram;
    emitFact(ctx.probe, "spill_in_shared_usage", shared.value >= 0.5 * spilled ? "true" : "false",
             Obj().num("shared_usage_growth_bytes", shared.value).num("past_free_vram_bytes", spilled));
  } else {
    emitFact(ctx.probe, "spill_in_shared_usage", "null", Obj(), shared.ok ? "nothing was allocated past free VRAM" : shared.reason);
  }
  p.ask("free", a, error);
  sampler.emit("after-free", sampler.take(&p, pid), attrs);
  bool clean = p.finish();
  sampler.emit("after-exit", sampler.take(nullptr, pid), attrs);
  if (!clean) {
    emitError(ctx.probe, "the subject did not exit cleanly");
    return kExitProbeFailure;
  }
  return kExitRan;
}

}  // namespace cp
