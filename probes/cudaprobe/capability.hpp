// What a device attribute claims against what the calls do (issue 36): the capability probes
// (memory-pools, virtual-memory, ipc-handles, host-register-flags) try each feature and record
// one Attempt per feature as a sample (phase "attempt"); the fact is decided from that sample,
// by the probe at the end of its run and by `cudaprobe judge PROBE` from a saved log, alike.
#pragma once
#include <string>
#include <vector>

#include "cuda.hpp"
#include "judge.hpp"

namespace cp {

struct Attempt {
  std::string feature;        // the fact's name: "pool_posix_fd"
  std::string attribute;      // "CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES"; "" when no attribute speaks for it
  double attributeValue = -1; // the attribute's raw value; -1 when not read
  int claimed = -1;           // 1: the attribute claims the feature, 0: it denies it, -1: no attribute
  std::string call;           // the call that decided: the first that failed, else the last one made
  std::string result;         // its result's name ("CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"), or what went wrong
  bool works = false;         // every call succeeded and the bytes read back were right
  std::string notApplicable;  // set when the feature cannot be tried here (the fact is null, this is why)

  // Records a call's result: the first failure is what decides. Returns whether it succeeded.
  bool step(const char* name, CUresult rc);
  // A check after the calls (the bytes read back): fails the attempt with `what` when !ok.
  bool check(const char* name, bool ok, const std::string& what);
  // Marks the end of the attempt: works when no step failed.
  void done();
  // An optional entry point (absent in an old driver library): when it is null the attempt
  // fails at that name with "missing in the driver library". Returns whether it is there.
  template <typename Fn>
  bool entry(const char* name, Fn fn) {
    return check(name, fn != nullptr, "missing in the driver library");
  }
};

// A driver result's name alone ("CUDA_ERROR_INVALID_VALUE"), as the logs of other projects quote it.
std::string cudaErrorName(CUresult rc);

// The attribute's value, or -1 (with `error` set) when the driver does not know it.
double readAttribute(int attribute, CUdevice dev, std::string* error = nullptr);

// Emits the attempt's sample and then its fact.
void emitAttempt(const std::string& probe, const Attempt& attempt);

// The fact of one attempt: works, claimed-but-fails, works-unclaimed or unsupported (null when
// not applicable), with what the attribute said and what the call returned as its evidence.
void decideAttempt(const std::string& probe, const Attempt& attempt);

// `cudaprobe judge` for the capability probes: the facts again, from the attempt samples. False,
// with why on stderr, when there was none or one lacks its feature, call or result.
bool isCapabilityProbe(const std::string& probe);
bool judgeCapabilities(const std::string& probe, const Recorded& recorded);

}  // namespace cp
