#include "judge.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "capability.hpp"
#include "emit.hpp"
#include "gpu.hpp"
#include "probe.hpp"

namespace cp {

namespace {

std::string jsonBoolOrText(const std::string& v) { return v == "true" || v == "false" ? v : jsonString(v); }

const Sample* findPhase(const std::vector<const Sample*>& series, const std::string& phase) {
  for (const Sample* s : series) {
    if (s->phase == phase) return s;
  }
  return nullptr;
}

// Samples grouped by series: the same api, kind and size (or process count) in their attrs.
std::map<std::string, std::vector<const Sample*>> bySeries(const Recorded& r) {
  std::map<std::string, std::vector<const Sample*>> out;
  for (const Sample& s : r.samples) {
    std::string key = s.attrs.str("api") + "/" + s.attrs.str("kind") + "/" + std::to_string(static_cast<long long>(s.attrs.num("size_bytes", 0)));
    out[key].push_back(&s);
  }
  return out;
}

Obj growthEvidence(double bytes, const Snapshot& from, const Snapshot& to) {
  Obj e;
  e.num("size_bytes", bytes);
  for (const char* src : kDeviceSources) {
    Delta d = growth(from, to, src);
    if (d.ok) e.num(src, d.value);
  }
  for (const char* src : {"subject_rss_bytes", "system_available_bytes"}) {
    Delta d = growth(from, to, src);
    if (d.ok) e.num(src, d.value);
  }
  return e;
}

}  // namespace

std::string vramClass(double g, double n) {
  if (g >= 0.5 * n) return "true";
  if (g <= 0.05 * n) return "false";
  return "partial";
}

// ---- pinned-vram ----------------------------------------------------------------------------

void judgePinnedVram(const std::string& probe, const Recorded& r) {
  struct Decision {
    const char* fact;
    const char* api;
    const char* kind;
  };
  const Decision decisions[] = {{"counts_as_vram", "driver", "pinned"},
                                {"counts_as_vram_runtime", "runtime", "pinned"},
                                {"registered_counts_as_vram", "driver", "registered"},
                                {"control_counts_as_vram", "driver", "device"}};
  auto series = bySeries(r);
  for (const Decision& d : decisions) {
    // The largest size of this api and kind whose allocation worked decides.
    const Sample* base = nullptr;
    const Sample* touched = nullptr;
    double bytes = 0;
    for (const auto& kv : series) {
      const Sample* first = kv.second.front();
      if (first->attrs.str("api") != d.api || first->attrs.str("kind") != d.kind) continue;
      const Sample* b = findPhase(kv.second, "baseline");
      const Sample* t = findPhase(kv.second, "after-touch");
      double n = first->attrs.num("size_bytes", 0);
      if (b && t && t->attrs.flag("allocated") && n > bytes) {
        base = b;
        touched = t;
        bytes = n;
      }
    }
    if (!base) {
      emitFact(probe, d.fact, "null", Obj(),
               std::string("no ") + d.api + " " + d.kind + " series completed" +
                   (std::string(d.api) == "runtime" ? " (no CUDA runtime library on the target, or its allocation failed)" : ""));
      continue;
    }
    std::string source = primaryDeviceSource(base->readings, touched->readings);
    Obj ev = growthEvidence(bytes, base->readings, touched->readings);
    ev.str("source", source);
    if (source.empty()) {
      emitFact(probe, d.fact, "null", ev, "no device-memory source could be read (PDH, NVML, cuMemGetInfo)");
      continue;
    }
    double g = growth(base->readings, touched->readings, source).value;
    emitFact(probe, d.fact, jsonBoolOrText(vramClass(g, bytes)), ev);
    if (std::string(d.kind) != "device") {
      // Page-table and bookkeeping overhead per GiB pinned: a few MiB where pinned memory is
      // not charged to the GPU, the whole GiB where it is.
      emitMetric(probe, "device_growth_per_gib_bytes", g / (bytes / kGiB), "bytes",
                 Obj().str("api", d.api).str("kind", d.kind).str("source", source));
    }
  }
}

// ---- pinned-release -------------------------------------------------------------------------

Charge chargeOf(const Snapshot& base, const Snapshot& touched, double bytes) {
  std::string dev = primaryDeviceSource(base, touched);
  if (!dev.empty()) {
    double g = growth(base, touched, dev).value;
    if (g >= 0.5 * bytes) return {dev, g, false};
  }
  Delta rss = growth(base, touched, "subject_rss_bytes");
  if (rss.ok && rss.value >= 0.5 * bytes) return {"subject_rss_bytes", rss.value, false};
  Delta avail = growth(base, touched, "system_available_bytes");
  if (avail.ok && -avail.value >= 0.5 * bytes) return {"system_available_bytes", -avail.value, true};
  return Charge{};
}

// The device-wide sources that stand in for a per-process one once the subject has exited
// (its per-process readings are then gone): on WDDM the memory returned at exit shows only
// there.
std::vector<std::string> deviceWideFor(const std::string& src) {
  if (src == "pdh_process_shared_bytes" || src == "dxgi_nonlocal_bytes") return {"pdh_adapter_shared_bytes"};
  if (src == "pdh_process_dedicated_bytes" || src == "dxgi_local_bytes") return {"pdh_adapter_dedicated_bytes", "nvml_device_used_bytes"};
  if (src == "nvml_process_used_bytes" || src == "subject_cu_used_bytes") return {"nvml_device_used_bytes", "pdh_adapter_dedicated_bytes"};
  return {};
}

Delta retained(const Charge& c, const Snapshot& base, const Snapshot& now, std::string* usedSource) {
  std::string src = c.source;
  bool inverse = c.inverse;
  auto it = now.find(src);
  if (it == now.end() || !it->second.ok()) {
    if (src == "subject_rss_bytes") {
      // After the subject exited its RSS is gone: system memory stands in for it.
      src = "system_available_bytes";
      inverse = true;
    } else {
      for (const std::string& wide : deviceWideFor(src)) {
        if (growth(base, now, wide).ok) {
          src = wide;
          break;
        }
      }
    }
  }
  if (usedSource) *usedSource = src;
  Delta d = growth(base, now, src);
  if (d.ok && inverse) d.value = -d.value;
  return d;
}

bool isReleased(const Charge& c, const Snapshot& base, const Snapshot& now) {
  Delta held = retained(c, base, now);
  return !c.source.empty() && held.ok && held.value <= 0.25 * c.grewBytes;
}

void judgePinnedRelease(const std::string& probe, const Recorded& r) {
  for (const auto& kv : bySeries(r)) {
    const auto& samples = kv.second;
    std::string api = samples.front()->attrs.str("api");
    const char* fact = api == "runtime" ? "released_runtime" : "released";
    double bytes = samples.front()->attrs.num("size_bytes", 0);
    const Sample* base = findPhase(samples, "baseline");
    const Sample* touched = findPhase(samples, "after-touch");
    const Sample* exited = findPhase(samples, "after-exit");
    if (!base || !touched || !touched->attrs.flag("allocated")) {
      emitFact(probe, fact, "null", Obj(), "the allocation did not complete");
      continue;
    }
    Charge charge = chargeOf(base->readings, touched->readings, bytes);
    Obj ev = growthEvidence(bytes, base->readings, touched->readings);
    if (charge.source.empty()) {
      emitFact(probe, fact, "null", ev, "no source grew by half the allocation: it cannot be seen being released");
      continue;
    }
    ev.str("source", charge.source).num("grew_bytes", charge.grewBytes);
    std::string released;
    for (const Sample* s : samples) {
      if (s->phase.rfind("after-free+", 0) != 0) continue;
      double wait = s->attrs.num("wait_s", 0);
      Delta held = retained(charge, base->readings, s->readings);
      if (held.ok) emitMetric(probe, "retained_after_free_bytes", held.value, "bytes", Obj().str("api", api).num("wait_s", wait));
      if (isReleased(charge, base->readings, s->readings)) {
        released = "on-free";
        emitMetric(probe, "release_delay_s", wait, "s", Obj().str("api", api));
        break;
      }
    }
    if (released.empty()) {
      if (!exited) {
        emitFact(probe, fact, "null", ev, "no reading after the subject exited");
        continue;
      }
      std::string exitSource;
      Delta held = retained(charge, base->readings, exited->readings, &exitSource);
      if (held.ok) ev.num("retained_after_exit_bytes", held.value);
      if (exitSource != charge.source) ev.str("after_exit_source", exitSource);
      if (!held.ok) {
        emitFact(probe, fact, "null", ev, "no source read after the subject exited: " + held.reason);
        continue;
      }
      released = isReleased(charge, base->readings, exited->readings) ? "on-exit" : "never";
      if (released == "on-exit") emitMetric(probe, "exit_release_delay_s", exited->attrs.num("settle_s", 0), "s", Obj().str("api", api));
    }
    emitFact(probe, fact, jsonString(released), ev);
  }
}

// ---- multi-process-pinned -------------------------------------------------------------------

void judgeMultiProcessPinned(const std::string& probe, const Recorded& r) {
  const Sample* base = nullptr;
  const Sample* all = nullptr;
  for (const Sample& s : r.samples) {
    if (s.phase == "baseline") base = &s;
    if (s.phase == "after-all-pinned") all = &s;
  }
  if (!base || !all) {
    emitFact(probe, "vram_growth", "null", Obj(), "the subjects did not all pin their memory");
    return;
  }
  double k = all->attrs.num("processes", 1);
  double total = all->attrs.num("size_bytes", 0) * k;
  std::string src = primaryDeviceSource(base->readings, all->readings);
  Obj ev = growthEvidence(total, base->readings, all->readings);
  ev.str("source", src).num("processes", k);
  if (src.empty()) {
    emitFact(probe, "vram_growth", "null", ev, "no device-memory source could be read");
    return;
  }
  double g = growth(base->readings, all->readings, src).value;
  std::string v = g <= 0.05 * total ? "none" : (g >= 0.75 * total && g <= 1.25 * total) ? "sum-of-processes" : "partial";
  emitFact(probe, "vram_growth", jsonString(v), ev);
}

// ---- pinned-ceiling -------------------------------------------------------------------------

namespace {

// C33: after a pin failed at a real ceiling, the subject asks for a far smaller one in the same
// process. Poisoned when that one fails too (any round, any API); null when no pin failed.
void judgeFailurePoisons(const std::string& probe, const Recorded& r) {
  int tried = 0;
  for (const Json& m : r.metrics) {
    const Json& a = m.at("attrs");
    if (m.str("name") != "ceiling_bytes" || !a.has("after_failure_ok")) continue;
    ++tried;
    if (a.flag("after_failure_ok")) continue;
    Obj ev;
    ev.str("api", a.str("api")).num("ceiling_bytes", m.num("value")).str("failure", a.str("failure"));
    ev.num("after_failure_bytes", a.num("after_failure_bytes")).str("after_failure_error", a.str("after_failure_error"));
    emitFact(probe, "failure_poisons", "true", ev);
    return;
  }
  if (tried) emitFact(probe, "failure_poisons", "false", Obj().num("rounds_after_failure", tried));
  else emitFact(probe, "failure_poisons", "null", Obj(), "no pin failed before the safety cap, so no pin followed a failure");
}

}  // namespace

void judgePinnedCeiling(const std::string& probe, const Recorded& r) {
  struct Level {
    double prefill, bytes, cap;
    bool failed;
    double freeVram;
  };
  std::vector<Level> levels;
  std::vector<std::pair<double, double>> freeAt;  // (prefill %, free VRAM after the pre-fill)
  std::vector<double> plainB, resetB, plainMs, resetMs;
  bool runtimeTried = false;
  bool registeredTried = false;
  std::string registeredStop;
  Obj registeredEv;
  for (const Json& m : r.metrics) {
    const Json& a = m.at("attrs");
    std::string name = m.str("name");
    bool have = m.at("value").kind == Json::Number;
    if (a.str("variant") == "registered") {
      // The first registered round decides what stopped it (C22); later rounds are metrics only.
      if (name == "ceiling_bytes" && !registeredTried && have) {
        registeredStop = a.str("stopped_by");
        registeredEv.num("ceiling_bytes", m.num("value")).num("cap_bytes", a.num("cap_bytes", 0));
      }
      if (name == "ceiling_bytes") registeredTried = true;
      continue;
    }
    if (a.str("api") == "driver" && name == "ceiling_bytes" && have) {
      levels.push_back({a.num("prefill_percent", 0), m.num("value"), a.num("cap_bytes", 0), a.str("stopped_by") == "allocation-failure", -1});
    }
    if (a.str("api") == "driver" && name == "free_vram_bytes" && have) freeAt.emplace_back(a.num("prefill_percent", 0), m.num("value"));
    if (a.str("api") == "runtime") {
      runtimeTried = true;
      bool isReset = a.str("variant") == "reset";
      if (name == "ceiling_bytes" && have) (isReset ? resetB : plainB).push_back(m.num("value"));
      if (name == "chunk_alloc_ms" && have) (isReset ? resetMs : plainMs).push_back(m.num("value"));
    }
  }
  for (Level& l : levels) {
    for (const auto& f : freeAt) if (f.first == l.prefill) l.freeVram = f.second;
  }
  if (registeredTried) {
    if (registeredStop.empty()) emitFact(probe, "registered_limited_by", "null", Obj(), "no registered ceiling was measured");
    else emitFact(probe, "registered_limited_by", jsonString(registeredStop), registeredEv);
  }
  std::sort(levels.begin(), levels.end(), [](const Level& x, const Level& y) { return x.prefill < y.prefill; });
  // A level that pinned more than the VRAM left free shows the ceiling does not follow free VRAM,
  // even when no pin failed (pinned memory is host memory there).
  auto beyond = std::find_if(levels.begin(), levels.end(), [](const Level& l) { return !l.failed && l.freeVram >= 0 && l.bytes > l.freeVram; });
  if (levels.empty()) {
    emitFact(probe, "limited_by", "null", Obj(), "no ceiling was measured");
  } else {
    const Level& f = levels.front();
    emitFact(probe, "limited_by", jsonString(f.failed ? "allocation-failure" : "safety-cap"),
             Obj().num("ceiling_bytes", f.bytes).num("cap_bytes", f.cap).num("prefill_percent", f.prefill));
  }
  bool anyFailure = std::any_of(levels.begin(), levels.end(), [](const Level& l) { return l.failed; });
  if (levels.size() < 2) {
    emitFact(probe, "tracks_free_vram", "null", Obj(), "needs the ceiling at two or more pre-fill levels");
  } else if (!anyFailure && beyond != levels.end()) {
    emitFact(probe, "tracks_free_vram", "false",
             Obj().num("ceiling_bytes", beyond->bytes).num("free_vram_bytes", beyond->freeVram).num("prefill_percent", beyond->prefill));
  } else if (!anyFailure) {
    emitFact(probe, "tracks_free_vram", "null", Obj().num("cap_bytes", levels.front().cap),
             "every level stopped at the safety cap (the lower of max_gib and max_fraction of the available memory) before pinning failed or exceeded the free VRAM; raise max_gib/max_fraction to find the real ceiling");
  } else {
    bool tracks = levels.back().bytes < 0.75 * levels.front().bytes;
    emitFact(probe, "tracks_free_vram", tracks ? "true" : "false",
             Obj().num("ceiling_low_prefill_bytes", levels.front().bytes).num("ceiling_high_prefill_bytes", levels.back().bytes));
  }
  judgeFailurePoisons(probe, r);
  if (!runtimeTried) return;
  if (plainB.empty() || resetB.empty()) {
    emitFact(probe, "reset_helps", "null", Obj(), "a runtime-API ceiling was not measured");
    return;
  }
  // Helps = a clearly higher ceiling, or pinning clearly faster (by more than run-to-run noise).
  double plain = median(plainB), reset = median(resetB), pMs = median(plainMs), rMs = median(resetMs);
  bool higher = reset > 1.05 * plain;
  bool faster = rMs < 0.7 * pMs;
  emitFact(probe, "reset_helps", higher || faster ? "true" : "false",
           Obj().num("ceiling_no_reset_bytes", plain).num("ceiling_reset_bytes", reset).num("chunk_ms_no_reset", pMs).num("chunk_ms_reset", rMs)
               .num("rounds", static_cast<double>(plainB.size())));
}

// ---- cudaprobe judge ------------------------------------------------------------------------

namespace {

// One protocol record of `probe` into what the judge reads.
void take(const Json& record, const std::string& probe, Recorded& r) {
  if (record.str("probe") != probe) return;
  if (record.str("type") == "sample") r.samples.push_back(sampleFromRecord(record));
  if (record.str("type") == "metric") r.metrics.push_back(record);
}

}  // namespace

int runJudge(const std::string& probe) {
  bool known = probe == "pinned-vram" || probe == "pinned-release" || probe == "multi-process-pinned" || probe == "pinned-ceiling" ||
               isCapabilityProbe(probe);
  if (!known) {
    std::fprintf(stderr,
                 "cudaprobe: judge knows pinned-vram, pinned-release, multi-process-pinned, pinned-ceiling, memory-pools, "
                 "virtual-memory, ipc-handles and host-register-flags, not %s\n",
                 probe.c_str());
    return kExitUsage;
  }
  // The probe's own lines (as `cudaprobe run PROBE` prints them), or a run's events.jsonl, whose
  // cell-end events carry them in "records".
  Recorded r;
  std::string line;
  while (std::getline(std::cin, line)) {
    Json record = Json::parse(line);
    if (record.str("type") == "cell-end") {
      for (const Json& inner : record.at("records").items) take(inner, probe, r);
    } else {
      take(record, probe, r);
    }
  }
  if (r.samples.empty() && r.metrics.empty()) {
    std::fprintf(stderr,
                 "cudaprobe: judge %s: nothing to judge: no sample or metric of %s on stdin (give it the lines `cudaprobe run %s` "
                 "printed, or a run's events.jsonl)\n",
                 probe.c_str(), probe.c_str(), probe.c_str());
    return kExitUsage;
  }
  if (probe == "pinned-vram") judgePinnedVram(probe, r);
  else if (probe == "pinned-release") judgePinnedRelease(probe, r);
  else if (probe == "multi-process-pinned") judgeMultiProcessPinned(probe, r);
  else if (probe == "pinned-ceiling") judgePinnedCeiling(probe, r);
  else return judgeCapabilities(probe, r) ? kExitRan : kExitUsage;
  return kExitRan;
}

}  // namespace cp
