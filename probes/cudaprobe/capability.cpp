#include "capability.hpp"

#include <cstdio>

#include "emit.hpp"

namespace cp {

std::string cudaErrorName(CUresult rc) {
  if (rc == 0) return "CUDA_SUCCESS";
  const char* name = nullptr;
  if (cuda().cuGetErrorName) cuda().cuGetErrorName(rc, &name);
  return name ? name : "CUDA_ERROR_" + std::to_string(rc);
}

bool Attempt::step(const char* name, CUresult rc) {
  if (!result.empty() && result != "CUDA_SUCCESS") return false;  // an earlier call already failed
  call = name;
  result = rc == 0 ? "CUDA_SUCCESS" : cudaErrorName(rc);
  return rc == 0;
}

bool Attempt::check(const char* name, bool ok, const std::string& what) {
  if (!result.empty() && result != "CUDA_SUCCESS") return false;
  if (ok) return true;
  call = name;
  result = what;
  return false;
}

void Attempt::done() { works = notApplicable.empty() && !call.empty() && result == "CUDA_SUCCESS"; }

double readAttribute(int attribute, CUdevice dev, std::string* error) {
  int value = 0;
  CUresult rc = cuda().cuDeviceGetAttribute(&value, attribute, dev);
  if (rc != 0) {
    if (error) *error = cudaErrorName(rc);
    return -1;
  }
  return value;
}

namespace {

const char* valueOf(const Attempt& a) {
  if (a.claimed == 1) return a.works ? "works" : "claimed-but-fails";
  if (a.claimed == 0) return a.works ? "works-unclaimed" : "unsupported";
  return a.works ? "works" : "unsupported";
}

Attempt attemptFromSample(const Sample& s) {
  Attempt a;
  a.feature = s.attrs.str("feature");
  a.attribute = s.attrs.str("attribute");
  auto reading = s.readings.find("attribute_value");
  if (reading != s.readings.end() && reading->second.ok()) a.attributeValue = reading->second.value;
  const Json& claimed = s.attrs.at("claimed");
  a.claimed = claimed.kind == Json::Bool ? (claimed.flag_ ? 1 : 0) : -1;
  a.call = s.attrs.str("call");
  a.result = s.attrs.str("result");
  a.notApplicable = s.attrs.str("not_applicable");
  // Works is what the deciding call returned, not a flag a hand-written line could contradict.
  a.works = a.notApplicable.empty() && a.result == "CUDA_SUCCESS";
  return a;
}

}  // namespace

void decideAttempt(const std::string& probe, const Attempt& a) {
  if (!a.notApplicable.empty()) {
    emitFact(probe, a.feature.c_str(), "null", Obj(), a.notApplicable);
    return;
  }
  Obj evidence;
  if (a.claimed < 0) evidence.null("claimed");
  else evidence.boolean("claimed", a.claimed == 1);
  if (a.attribute.empty()) evidence.null("attribute");
  else evidence.str("attribute", a.attribute);
  if (a.attributeValue < 0) evidence.null("attribute_value");
  else evidence.num("attribute_value", a.attributeValue);
  evidence.str("call", a.call).str("result", a.result);
  if (a.claimed < 0) evidence.null("agrees");
  else evidence.boolean("agrees", (a.claimed == 1) == a.works);
  emitFact(probe, a.feature.c_str(), jsonString(valueOf(a)), evidence);
}

void emitAttempt(const std::string& probe, const Attempt& a) {
  Obj readings, reasons, attrs;
  if (a.attributeValue < 0) {
    readings.null("attribute_value");
    reasons.str("attribute_value", a.attribute.empty() ? "no attribute speaks for this feature" : "the driver does not know the attribute");
  } else {
    readings.num("attribute_value", a.attributeValue);
  }
  attrs.str("feature", a.feature).str("attribute", a.attribute);
  if (a.claimed < 0) attrs.null("claimed");
  else attrs.boolean("claimed", a.claimed == 1);
  attrs.str("call", a.call).str("result", a.result).boolean("works", a.works);
  if (!a.notApplicable.empty()) attrs.str("not_applicable", a.notApplicable);
  Line line("sample", probe);
  line.str("phase", "attempt").raw("readings", readings.json());
  if (!reasons.empty()) line.raw("reasons", reasons.json());
  line.raw("attrs", attrs.json()).emit();
  decideAttempt(probe, a);
}

bool isCapabilityProbe(const std::string& probe) {
  return probe == "memory-pools" || probe == "virtual-memory" || probe == "ipc-handles" || probe == "host-register-flags";
}

bool judgeCapabilities(const std::string& probe, const Recorded& recorded) {
  int judged = 0, refused = 0;
  for (const Sample& s : recorded.samples) {
    if (s.phase != "attempt") continue;
    Attempt a = attemptFromSample(s);
    // A hand-written line must say which feature, and what the deciding call returned.
    if (a.feature.empty() || (a.notApplicable.empty() && (a.call.empty() || a.result.empty()))) {
      std::fprintf(stderr, "cudaprobe: judge %s: an attempt sample needs attrs.feature, attrs.call and attrs.result (or attrs.not_applicable): %s\n",
                   probe.c_str(), a.feature.empty() ? "a sample without a feature" : a.feature.c_str());
      ++refused;
      continue;
    }
    decideAttempt(probe, a);
    ++judged;
  }
  if (!judged && !refused) std::fprintf(stderr, "cudaprobe: judge %s: no sample of phase \"attempt\" on stdin: nothing to judge\n", probe.c_str());
  return judged > 0 && refused == 0;
}

}  // namespace cp
