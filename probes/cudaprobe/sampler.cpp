#include "sampler.hpp"

#include <cmath>

#include "cuda.hpp"
#include "neighbours.hpp"
#include "winmem.hpp"

namespace cp {

SubjectProc::SubjectProc(ProbeContext& ctx, const std::vector<std::pair<std::string, std::string>>& env) {
  neighboursStart(ctx);  // before the first subject makes a context: every process listed is another's
  std::string error;
  if (!child_.start(ctx.self, {"subject", "--device", std::to_string(ctx.device)}, env, error)) {
    startError = "could not start the subject: " + error;
    return;
  }
  started = true;
  Json a;
  if (!ask("init", a, error, 120)) {
    startError = error;
    return;
  }
  hasDriver = true;
}

bool SubjectProc::ask(const std::string& command, Json& answer, std::string& error, double timeoutSec) {
  if (!child_.running()) {
    error = "the subject is not running";
    return false;
  }
  std::string line;
  if (!child_.writeLine(command) || !child_.readLine(line, timeoutSec)) {
    int code = child_.wait(0.5);
    error = "the subject did not answer \"" + command + "\"" + (code >= 0 ? " (it exited with " + std::to_string(code) + ")" : " in time");
    return false;
  }
  answer = Json::parse(line);
  if (!answer.flag("ok")) {
    error = answer.str("error").empty() ? "the subject answered: " + line : answer.str("error");
    return false;
  }
  return true;
}

bool SubjectProc::finish(double timeoutSec) {
  if (!child_.running()) return child_.wait(0) == 0;
  Json a;
  std::string error;
  ask("exit", a, error, timeoutSec);
  child_.closeStdin();
  int code = child_.wait(timeoutSec);
  if (code < 0) {
    child_.kill();
    return false;
  }
  return code == 0;
}

Sampler::Sampler(ProbeContext& ctx) : ctx_(ctx) {
  // cuInit and the device's UUID need no context: the sampler stays context-free.
  Cuda& c = cuda();
  if (c.ok() && c.cuInit(0) == 0) {
    CUdevice dev = 0;
    if (c.cuDeviceGet(&dev, ctx.device) == 0) {
      nvmlDevice_ = nvmlDeviceFor(dev, nvmlReason_);
      adapter_ = deviceAdapter(dev, true);
    } else {
      nvmlReason_ = "no CUDA device " + std::to_string(ctx.device);
      adapter_ = deviceAdapter(0, false);
    }
  } else {
    nvmlReason_ = nvml().ok() ? "no usable CUDA driver to match the NVML device with" : nvml().whyNot();
    adapter_ = deviceAdapter(0, false);
  }
}

Reading Sampler::nvmlDeviceUsed() {
  Reading r;
  if (!nvmlDevice_) {
    r.reason = nvmlReason_;
    return r;
  }
  nvmlMemory_t m{};
  nvmlReturn_t rc = nvml().nvmlDeviceGetMemoryInfo(static_cast<nvmlDevice_t>(nvmlDevice_), &m);
  if (rc == 0) r.value = static_cast<double>(m.used);
  else r.reason = nvml().err(rc);
  return r;
}

Reading Sampler::nvmlProcessUsed(uint64_t pid) {
  Reading r;
  if (!nvmlDevice_) {
    r.reason = nvmlReason_;
    return r;
  }
  std::vector<nvmlProcessInfo_t> infos;
  if (!nvmlComputeProcesses(static_cast<nvmlDevice_t>(nvmlDevice_), infos, r.reason)) return r;
  const size_t count = infos.size();
  for (size_t i = 0; i < count; ++i) {
    if (infos[i].pid != pid) continue;
    if (infos[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE) {
      r.reason = "NVML reports per-process memory as NOT_AVAILABLE (always so under WDDM, where Windows manages the memory)";
    } else {
      r.value = static_cast<double>(infos[i].usedGpuMemory);
    }
    return r;
  }
  r.reason = "the subject (pid " + std::to_string(pid) + ") is not among NVML's " + std::to_string(count) +
             " compute processes (no context yet, exited, WSL2 without per-process data, or another PID namespace)";
  return r;
}

namespace {

struct SubjectMemory {
  Reading cuUsed, dxgiLocal, dxgiNonLocal;
};

Reading fromAnswer(const Json& a, const char* key, const char* reasonKey) {
  Reading r;
  if (a.num(key, -1) >= 0) r.value = a.num(key);
  else r.reason = a.str(reasonKey);
  return r;
}

// What the subject says about itself: cuMemGetInfo, and on Windows its DXGI segment usage.
SubjectMemory askSubject(SubjectProc* p) {
  SubjectMemory m;
  Json a;
  std::string error;
  if (!p->hasDriver) {
    m.cuUsed.reason = p->startError.empty() ? "no CUDA context in the subject" : p->startError;
    DxgiReadings d = dxgiReadings(0, false);
    m.dxgiLocal = d.local;
    m.dxgiNonLocal = d.nonLocal;
    return m;
  }
  if (!p->ask("meminfo", a, error)) {
    m.cuUsed.reason = m.dxgiLocal.reason = m.dxgiNonLocal.reason = error;
    return m;
  }
  if (a.num("cu_total") >= 0) m.cuUsed.value = a.num("cu_total") - a.num("cu_free");
  else m.cuUsed.reason = a.str("cu_reason");
  m.dxgiLocal = fromAnswer(a, "dxgi_local", "dxgi_local_reason");
  m.dxgiNonLocal = fromAnswer(a, "dxgi_nonlocal", "dxgi_nonlocal_reason");
  return m;
}

// The sum over subjects; unavailable (with the first reason) when any one is.
Reading total(const std::vector<Reading>& parts) {
  Reading t;
  if (parts.empty()) {
    t.reason = "no subject running";
    return t;
  }
  t.value = 0;
  for (const Reading& r : parts) {
    if (!r.ok()) return r;
    t.value += r.value;
  }
  return t;
}

}  // namespace

Snapshot Sampler::take(SubjectProc* subject, uint64_t pid) {
  Snapshot s = takeMany(subject ? std::vector<SubjectProc*>{subject} : std::vector<SubjectProc*>{});
  if (!subject && pid) {
    for (auto& kv : s) {
      if (!kv.second.ok() && kv.second.reason == "no subject running") kv.second.reason = "the subject has exited";
    }
  }
  return s;
}

Snapshot Sampler::takeMany(const std::vector<SubjectProc*>& subjects) {
  std::vector<Reading> cu, local, nonLocal, rss, priv, nvmlProc, pdhDed, pdhShared;
  for (SubjectProc* p : subjects) {
    SubjectMemory m = askSubject(p);
    cu.push_back(m.cuUsed);
    local.push_back(m.dxgiLocal);
    nonLocal.push_back(m.dxgiNonLocal);
    rss.push_back(processResident(p->pid()));
    priv.push_back(processPrivate(p->pid()));
    nvmlProc.push_back(nvmlProcessUsed(p->pid()));
    PdhReadings pdh = pdhReadings(p->pid(), adapter_);
    pdhDed.push_back(pdh.processDedicated);
    pdhShared.push_back(pdh.processShared);
  }
  Snapshot s;
  s["subject_cu_used_bytes"] = total(cu);
  s["dxgi_local_bytes"] = total(local);
  s["dxgi_nonlocal_bytes"] = total(nonLocal);
  s["subject_rss_bytes"] = total(rss);
  s["subject_private_bytes"] = total(priv);
  s["nvml_process_used_bytes"] = total(nvmlProc);
  s["pdh_process_dedicated_bytes"] = total(pdhDed);
  s["pdh_process_shared_bytes"] = total(pdhShared);
  // Device- and system-wide sources, read once.
  s["nvml_device_used_bytes"] = nvmlDeviceUsed();
  PdhReadings adapter = pdhReadings(0, adapter_);
  s["pdh_adapter_dedicated_bytes"] = adapter.adapterDedicated;
  s["pdh_adapter_shared_bytes"] = adapter.adapterShared;
  s["system_available_bytes"] = systemAvailable();
  return s;
}

const char* const kDeviceSources[7] = {"pdh_process_dedicated_bytes", "pdh_process_shared_bytes", "nvml_process_used_bytes",
                                       "nvml_device_used_bytes", "subject_cu_used_bytes", "dxgi_local_bytes", "dxgi_nonlocal_bytes"};

Sample sampleFromRecord(const Json& record) {
  Sample s;
  s.phase = record.str("phase");
  s.attrs = record.at("attrs");
  const Json& reasons = record.at("reasons");
  for (const auto& kv : record.at("readings").fields) {
    Reading r;
    if (kv.second.kind == Json::Number) r.value = kv.second.number;
    else r.reason = reasons.str(kv.first).empty() ? "null in the record" : reasons.str(kv.first);
    s.readings[kv.first] = r;
  }
  return s;
}

void Sampler::emit(const std::string& phase, const Snapshot& s, const Obj& attrs) {
  samples_.push_back(Sample{phase, Json::parse(attrs.json()), s});
  Obj readings, reasons;
  for (const auto& kv : s) {
    if (kv.second.ok()) {
      readings.num(kv.first.c_str(), kv.second.value);
    } else {
      readings.null(kv.first.c_str());
      reasons.str(kv.first.c_str(), kv.second.reason);
    }
  }
  Line l("sample", ctx_.probe);
  l.str("phase", phase).raw("readings", readings.json());
  if (!reasons.empty()) l.raw("reasons", reasons.json());
  if (!attrs.empty()) l.raw("attrs", attrs.json());
  l.emit();
}

Delta growth(const Snapshot& before, const Snapshot& after, const std::string& key) {
  Delta d;
  auto b = before.find(key), a = after.find(key);
  if (b == before.end() || a == after.end()) {
    d.reason = "no reading " + key;
  } else if (!b->second.ok() || !a->second.ok()) {
    d.reason = !b->second.ok() ? b->second.reason : a->second.reason;
  } else {
    d.ok = true;
    d.value = a->second.value - b->second.value;
  }
  return d;
}

std::string primaryDeviceSource(const Snapshot& before, const Snapshot& after) {
  for (const char* k : {"pdh_process_dedicated_bytes", "nvml_process_used_bytes", "nvml_device_used_bytes", "subject_cu_used_bytes"}) {
    auto b = before.find(k), a = after.find(k);
    if (b != before.end() && a != after.end() && b->second.ok() && a->second.ok()) return k;
  }
  return "";
}

}  // namespace cp
