// The memory-accounting probes (C1-C4, C11, C12, C14): pinned-vram, pinned-release,
// multi-process-pinned and pinned-ceiling. Each allocation happens in a subject process; the
// sampler, which never creates a CUDA context, reads every source at every phase. The facts are
// decided at the end from the recorded samples and metrics (judge.cpp), with the raw readings
// kept beside them.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../judge.hpp"
#include "../probe.hpp"
#include "../sampler.hpp"

namespace cp {

namespace {

Obj seriesAttrs(const std::string& api, const std::string& kind, double bytes) {
  return Obj().str("api", api).str("kind", kind).num("size_bytes", bytes);
}

std::vector<std::string> apisFrom(const Params& params) {
  std::string list = params.get("apis");
  std::vector<std::string> apis;
  for (const char* a : {"driver", "runtime"}) {
    if (list.find(a) != std::string::npos) apis.push_back(a);
  }
  if (apis.empty()) throw UsageError{"parameter apis must name driver and/or runtime, got " + list};
  return apis;
}

// Refuses sizes that are not positive or larger than the device (no check without a driver).
void checkSize(const std::string& name, double bytes, int device) {
  if (!(bytes > 0)) throw UsageError{"parameter " + name + " must be positive"};
  Cuda& c = cuda();
  CUdevice dev = 0;
  size_t total = 0;
  if (!c.ok() || c.cuInit(0) != 0 || c.cuDeviceGet(&dev, device) != 0 || c.cuDeviceTotalMem_v2(&total, dev) != 0) return;
  if (bytes > static_cast<double>(total)) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "parameter %s asks for %.2f GiB, more than the device's %.2f GiB", name.c_str(), bytes / kGiB,
                  static_cast<double>(total) / kGiB);
    throw UsageError{msg};
  }
}

// A subject without a driver: the same skip as every other probe gives, when the sampler sees
// no driver either; otherwise the subject's own reason.
int skipNoDriver(ProbeContext& ctx, const std::string& subjectReason) {
  if (requireDevice(ctx)) emitSkip(ctx.probe, "the subject could not create a CUDA context: " + subjectReason);
  return kExitNoDriver;
}

// Samples after a subject exited until two readings of the device and system sources agree
// (a driver may release memory some time after the process is gone), within a bound.
Snapshot sampleAfterExit(Sampler& sampler, uint64_t pid, double tolerance, double boundSec, double& waited) {
  double t0 = nowSeconds();
  Snapshot prev = sampler.take(nullptr, pid);
  for (;;) {
    sleepSeconds(0.1);
    Snapshot cur = sampler.take(nullptr, pid);
    bool agree = true;
    for (const char* k : {"nvml_device_used_bytes", "pdh_adapter_dedicated_bytes", "system_available_bytes"}) {
      Delta d = growth(prev, cur, k);
      if (d.ok && std::fabs(d.value) > tolerance) agree = false;
    }
    waited = nowSeconds() - t0;
    if (agree || waited > boundSec) return cur;
    prev = cur;
  }
}

void emitAfterExit(Sampler& sampler, uint64_t pid, Obj attrs, double bytes, bool wait) {
  double settled = 0;
  Snapshot s = sampleAfterExit(sampler, pid, std::max(8 * kMiB, 0.01 * bytes), wait ? 10.0 : 0.0, settled);
  sampler.emit("after-exit", s, attrs.num("settle_s", settled));
}

// ---- pinned-vram (C1, C3, C4) -----------------------------------------------------------

// One fresh subject stepped through baseline -> alloc -> touch -> free -> wait -> exit.
// Returns false when the subject has no driver (the phases are still recorded).
bool runSeries(ProbeContext& ctx, Sampler& sampler, const std::string& api, const std::string& kind, double bytes, double waitSec,
               bool& failed) {
  SubjectProc p(ctx);
  if (!p.started) {
    emitError(ctx.probe, p.startError);
    failed = true;
    return true;
  }
  uint64_t pid = p.pid();
  Obj attrs = seriesAttrs(api, kind, bytes);
  Snapshot base = sampler.take(&p, pid);
  sampler.emit("baseline", base, attrs);
  Json a;
  std::string error;
  char cmd[128];
  std::snprintf(cmd, sizeof cmd, "alloc %s %s %.0f", api.c_str(), kind.c_str(), bytes);
  bool allocated = p.hasDriver && p.ask(cmd, a, error);
  if (!p.hasDriver) error = p.startError;
  Obj after = seriesAttrs(api, kind, bytes).boolean("allocated", allocated);
  if (allocated) emitMetric(ctx.probe, "alloc_ms", a.num("ms"), "ms", attrs);
  else emitMetricNull(ctx.probe, "alloc_ms", "ms", error, attrs);
  sampler.emit("after-alloc", sampler.take(&p, pid), after);
  if (allocated && p.ask("touch", a, error)) emitMetric(ctx.probe, "touch_ms", a.num("ms"), "ms", attrs);
  Snapshot touched = sampler.take(&p, pid);
  sampler.emit("after-touch", touched, after);
  if (allocated) {
    for (const char* src : kDeviceSources) {
      Delta d = growth(base, touched, src);
      if (d.ok) emitMetric(ctx.probe, "device_growth_bytes", d.value, "bytes", seriesAttrs(api, kind, bytes).str("source", src));
    }
    Delta host = growth(base, touched, "subject_rss_bytes");
    if (host.ok) emitMetric(ctx.probe, "host_growth_bytes", host.value, "bytes", attrs);
  }
  if (allocated && p.ask("free", a, error)) emitMetric(ctx.probe, "free_ms", a.num("ms"), "ms", attrs);
  sampler.emit("after-free", sampler.take(&p, pid), after);
  if (allocated) sleepSeconds(waitSec);
  sampler.emit("after-wait", sampler.take(&p, pid), after);
  if (!p.finish() && p.hasDriver) {
    emitError(ctx.probe, api + " " + kind + " series: the subject did not exit cleanly");
    failed = true;
  }
  emitAfterExit(sampler, pid, seriesAttrs(api, kind, bytes), bytes, allocated);
  if (p.hasDriver && !allocated) emitSkip(ctx.probe, error, (api + " " + kind).c_str());
  return p.hasDriver;
}

}  // namespace

int pinnedVram(ProbeContext& ctx) {
  std::vector<double> sizes = ctx.params.numbers("sizes_gib");
  std::vector<std::string> apis = apisFrom(ctx.params);
  double registerGib = ctx.params.number("register_size_gib");
  double waitSec = ctx.params.number("wait_s");
  for (double g : sizes) checkSize("sizes_gib", g * kGiB, ctx.device);
  if (registerGib < 0) throw UsageError{"parameter register_size_gib must be 0 (off) or positive"};
  if (registerGib > 0) checkSize("register_size_gib", registerGib * kGiB, ctx.device);
  if (waitSec < 0 || waitSec > 60) throw UsageError{"parameter wait_s takes 0 to 60 seconds"};

  Sampler sampler(ctx);
  bool runtime = cudart().ok();
  bool failed = false;
  if (!runtime && std::find(apis.begin(), apis.end(), "runtime") != apis.end()) {
    emitSkip(ctx.probe, "no CUDA runtime library on this target: the runtime-API series are not run", "runtime series");
  }
  // One fresh subject per series: pinned memory per API and size, the device-memory control at
  // each size, and registered (malloc + register) memory at one size.
  for (double g : sizes) {
    for (const auto& api : apis) {
      if (api == "runtime" && !runtime) continue;
      if (!runSeries(ctx, sampler, api, "pinned", g * kGiB, waitSec, failed)) return skipNoDriver(ctx, "no usable driver");
    }
    runSeries(ctx, sampler, "driver", "device", g * kGiB, waitSec, failed);
  }
  if (registerGib > 0) {
    for (const auto& api : apis) {
      if (api == "runtime" && !runtime) continue;
      runSeries(ctx, sampler, api, "registered", registerGib * kGiB, waitSec, failed);
    }
  }
  judgePinnedVram(ctx.probe, Recorded{sampler.samples(), {}});
  return failed ? kExitProbeFailure : kExitRan;
}

// ---- pinned-release (C2) -------------------------------------------------------------------

int pinnedRelease(ProbeContext& ctx) {
  double bytes = ctx.params.number("size_gib") * kGiB;
  std::vector<double> waits = ctx.params.numbers("wait_s");
  std::vector<std::string> apis = apisFrom(ctx.params);
  checkSize("size_gib", bytes, ctx.device);
  for (double w : waits) {
    if (w < 0 || w > 600) throw UsageError{"parameter wait_s takes seconds between 0 and 600"};
  }
  std::sort(waits.begin(), waits.end());
  Sampler sampler(ctx);
  bool failed = false;
  for (const auto& api : apis) {
    if (api == "runtime" && !cudart().ok()) {
      emitSkip(ctx.probe, "no CUDA runtime library on this target: the runtime-API series is not run", "runtime series");
      continue;
    }
    SubjectProc p(ctx);
    if (!p.started) {
      emitError(ctx.probe, p.startError);
      failed = true;
      continue;
    }
    uint64_t pid = p.pid();
    Obj attrs = seriesAttrs(api, "pinned", bytes);
    Snapshot base = sampler.take(&p, pid);
    sampler.emit("baseline", base, attrs);
    Json a;
    std::string error = p.startError;
    char cmd[128];
    std::snprintf(cmd, sizeof cmd, "alloc %s pinned %.0f", api.c_str(), bytes);
    bool allocated = p.hasDriver && p.ask(cmd, a, error) && p.ask("touch", a, error);
    Snapshot touched = sampler.take(&p, pid);
    sampler.emit("after-touch", touched, seriesAttrs(api, "pinned", bytes).boolean("allocated", allocated));
    if (!p.hasDriver) {
      // Step the rest through for the record, then report that nothing could be measured.
      sampler.emit("after-free+0s", sampler.take(&p, pid), seriesAttrs(api, "pinned", bytes).num("wait_s", 0));
      p.finish();
      emitAfterExit(sampler, pid, attrs, bytes, false);
      return skipNoDriver(ctx, p.startError);
    }
    if (!allocated) {
      emitSkip(ctx.probe, "the allocation failed: " + error, (api + " series").c_str());
      p.finish();
      continue;
    }
    Charge charge = chargeOf(base, touched, bytes);
    p.ask("free", a, error);
    double freedAt = nowSeconds();
    for (double w : waits) {
      sleepSeconds(w - (nowSeconds() - freedAt));
      Snapshot s = sampler.take(&p, pid);
      char phase[48];
      std::snprintf(phase, sizeof phase, "after-free+%gs", w);
      sampler.emit(phase, s, seriesAttrs(api, "pinned", bytes).num("wait_s", w));
      if (isReleased(charge, base, s)) break;  // released: later waits would show the same
    }
    p.finish();
    emitAfterExit(sampler, pid, attrs, bytes, true);
  }
  judgePinnedRelease(ctx.probe, Recorded{sampler.samples(), {}});
  return failed ? kExitProbeFailure : kExitRan;
}

// ---- multi-process-pinned (C14) ------------------------------------------------------------

int multiProcessPinned(ProbeContext& ctx) {
  int k = static_cast<int>(ctx.params.number("processes"));
  double bytes = ctx.params.number("size_gib") * kGiB;
  if (k < 1 || k > 16) throw UsageError{"parameter processes takes 1 to 16"};
  checkSize("size_gib", bytes * k, ctx.device);
  Sampler sampler(ctx);
  std::vector<std::unique_ptr<SubjectProc>> subjects;
  for (int i = 0; i < k; ++i) {
    subjects.emplace_back(new SubjectProc(ctx));
    if (!subjects.back()->started) {
      emitError(ctx.probe, subjects.back()->startError);
      return kExitProbeFailure;
    }
  }
  auto live = [&]() {
    std::vector<SubjectProc*> v;
    for (auto& s : subjects) {
      if (s) v.push_back(s.get());
    }
    return v;
  };
  auto attrs = [&]() { return Obj().num("processes", k).num("size_bytes", bytes); };
  Snapshot base = sampler.takeMany(live());
  sampler.emit("baseline", base, attrs());
  if (!subjects[0]->hasDriver) return skipNoDriver(ctx, subjects[0]->startError);
  Json a;
  std::string error;
  char cmd[128];
  std::snprintf(cmd, sizeof cmd, "alloc driver pinned %.0f", bytes);
  for (auto& s : subjects) {
    if (!s->ask(cmd, a, error) || !s->ask("touch", a, error)) {
      emitSkip(ctx.probe, "an allocation failed: " + error);
      return kExitRan;
    }
  }
  Snapshot all = sampler.takeMany(live());
  sampler.emit("after-all-pinned", all, attrs());
  for (const char* s : kDeviceSources) {
    Delta d = growth(base, all, s);
    if (d.ok) emitMetric(ctx.probe, "device_growth_bytes", d.value, "bytes", Obj().str("source", s).num("processes", k));
  }
  Delta host = growth(base, all, "system_available_bytes");
  if (host.ok) emitMetric(ctx.probe, "system_growth_bytes", -host.value, "bytes", Obj().num("processes", k));
  for (int i = 0; i < k; ++i) {
    subjects[i]->ask("free", a, error);
    sampler.emit("after-free-" + std::to_string(i + 1), sampler.takeMany(live()), attrs());
  }
  for (int i = 0; i < k; ++i) {
    subjects[i]->finish();
    subjects[i].reset();
    sampler.emit("after-exit-" + std::to_string(i + 1), sampler.takeMany(live()), attrs());
  }
  judgeMultiProcessPinned(ctx.probe, Recorded{sampler.samples(), {}});
  return kExitRan;
}

namespace {

// ---- pinned-ceiling (C12, C11) -------------------------------------------------------------

// Pins chunks in a fresh subject until a pin fails or the cap is reached; emits the metrics and
// keeps them for the judge. Returns false when the subject has no driver.
bool measureCeiling(ProbeContext& ctx, Recorded& rec, const std::string& api, double chunk, double capBytes, double fraction,
                    double prefillPercent, const char* variant) {
  Obj attrs = Obj().str("api", api);
  if (variant) attrs.str("variant", variant);
  else attrs.num("prefill_percent", prefillPercent);
  auto keep = [&](const std::string& line) { rec.metrics.push_back(Json::parse(line)); };
  SubjectProc p(ctx);
  Json a;
  std::string error = p.startError;
  bool ready = p.hasDriver && (!variant || std::string(variant) != "reset" || p.ask("reset", a, error)) && p.ask("meminfo", a, error);
  if (ready && prefillPercent > 0) {
    char cmd[128];
    std::snprintf(cmd, sizeof cmd, "alloc driver device %.0f", std::floor(a.num("cu_free") * prefillPercent / 100.0 / kMiB) * kMiB);
    ready = p.ask(cmd, a, error);
    if (!ready) error = "pre-filling VRAM failed: " + error;
  }
  double freeVram = ready && p.ask("meminfo", a, error) ? a.num("cu_free", -1) : -1;
  // Never pin more than the configured maximum nor a fraction of the memory available now.
  Reading avail = systemAvailable();
  double cap = std::floor(std::min(capBytes, avail.ok() ? fraction * avail.value : capBytes) / chunk) * chunk;
  char cmd[160];
  bool registered = variant && std::string(variant) == "registered";  // malloc + cuMemHostRegister chunks
  std::snprintf(cmd, sizeof cmd, "pinmax %s %.0f %.0f %s", api.c_str(), chunk, cap, registered ? "registered" : "pinned");
  if (!ready || !p.ask(cmd, a, error)) {
    keep(emitMetricNull(ctx.probe, "ceiling_bytes", "bytes", error, attrs));
    return p.hasDriver || !p.started;
  }
  bool stoppedByFailure = a.flag("failed");
  Obj full = attrs;
  full.num("cap_bytes", cap).str("stopped_by", stoppedByFailure ? "allocation-failure" : "safety-cap");
  if (stoppedByFailure) {
    full.str("failure", a.str("error"));
    if (a.has("after_failure_ok")) {
      full.num("after_failure_bytes", a.num("after_failure_bytes")).boolean("after_failure_ok", a.flag("after_failure_ok"));
      if (!a.flag("after_failure_ok")) full.str("after_failure_error", a.str("after_failure_error"));
    }
  }
  keep(emitMetric(ctx.probe, "ceiling_bytes", a.num("bytes"), "bytes", full));
  if (freeVram >= 0) keep(emitMetric(ctx.probe, "free_vram_bytes", freeVram, "bytes", attrs));
  if (a.num("ms_median", -1) >= 0) keep(emitMetric(ctx.probe, "chunk_alloc_ms", a.num("ms_median"), "ms", attrs));
  p.ask("free", a, error);  // released before exit as well as by it
  p.finish();
  return true;
}

// The device attributes that say whether and how host memory can be registered (C22).
void emitHostRegisterFacts(ProbeContext& ctx) {
  Cuda& c = cuda();
  CUdevice dev = 0;
  if (!c.ok() || c.cuInit(0) != 0 || c.cuDeviceGet(&dev, ctx.device) != 0) return;
  const struct {
    const char* fact;
    const char* attribute;
    int id;
  } attrs[] = {
      {"host_register_supported", "CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED", CU_ATTR_HOST_REGISTER_SUPPORTED},
      {"host_pointer_for_registered_mem", "CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", CU_ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM},
      {"pageable_memory_access", "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS", CU_ATTR_PAGEABLE_MEMORY_ACCESS},
  };
  for (const auto& a : attrs) {
    int v = 0;
    CUresult rc = c.cuDeviceGetAttribute(&v, a.id, dev);
    if (rc == 0) emitFact(ctx.probe, a.fact, v ? "true" : "false", Obj().integer(a.attribute, v));
    else emitFact(ctx.probe, a.fact, "null", Obj(), std::string(a.attribute) + ": " + c.err(rc));
  }
}

}  // namespace

int pinnedCeiling(ProbeContext& ctx) {
  double chunk = ctx.params.number("chunk_mib") * kMiB;
  double capBytes = ctx.params.number("max_gib") * kGiB;
  double fraction = ctx.params.number("max_fraction");
  std::vector<double> prefills = ctx.params.numbers("prefill_percent");
  int resetRounds = static_cast<int>(ctx.params.number("reset_rounds"));
  int registeredRounds = static_cast<int>(ctx.params.number("registered_rounds"));
  if (resetRounds < 0 || resetRounds > 10) throw UsageError{"parameter reset_rounds takes 0 (off) to 10"};
  if (registeredRounds < 0 || registeredRounds > 10) throw UsageError{"parameter registered_rounds takes 0 (off) to 10"};
  if (!(chunk > 0) || !(capBytes >= chunk)) throw UsageError{"parameters chunk_mib and max_gib must be positive, max_gib at least one chunk"};
  if (!(fraction > 0 && fraction <= 0.9)) throw UsageError{"parameter max_fraction takes a fraction of available memory between 0 and 0.9"};
  for (double p : prefills) {
    if (p < 0 || p > 95) throw UsageError{"parameter prefill_percent takes percentages from 0 to 95"};
  }
  Recorded rec;
  for (double p : prefills) {
    if (!measureCeiling(ctx, rec, "driver", chunk, capBytes, fraction, p, nullptr)) return skipNoDriver(ctx, "no usable driver");
  }
  emitHostRegisterFacts(ctx);
  // malloc'd memory registered in chunks (cuMemHostRegister), with no VRAM pre-filled: the
  // lock pool a Windows host is reported to limit to about half of its RAM.
  for (int i = 0; i < registeredRounds; ++i) measureCeiling(ctx, rec, "driver", chunk, capBytes, fraction, 0, "registered");
  if (resetRounds > 0 && cudart().ok()) {
    // Alternated, so that whatever the first pin leaves warm (the OS's free pages) does not
    // favour one variant; the judge takes the medians.
    for (int i = 0; i < resetRounds; ++i) {
      measureCeiling(ctx, rec, "runtime", chunk, capBytes, fraction, 0, "no-reset");
      measureCeiling(ctx, rec, "runtime", chunk, capBytes, fraction, 0, "reset");
    }
  } else if (resetRounds > 0) {
    emitSkip(ctx.probe, "no CUDA runtime library on this target (cudaDeviceReset is a runtime call)", "reset variant");
  }
  judgePinnedCeiling(ctx.probe, rec);
  return kExitRan;
}

}  // namespace cp
