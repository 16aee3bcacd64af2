// The sampler side of the memory probes. The sampler never creates a CUDA context: it starts
// subjects (this same program, `cudaprobe subject`), steps them through phases over a pipe, and
// at every phase takes a snapshot from every source the platform has. An unavailable source is
// recorded as null with its reason.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "emit.hpp"
#include "json.hpp"
#include "probe.hpp"
#include "process.hpp"
#include "winmem.hpp"

namespace cp {

// A running subject process.
class SubjectProc {
 public:
  // Starts a subject and initialises its CUDA context. `env` is added to its environment.
  SubjectProc(ProbeContext& ctx, const std::vector<std::pair<std::string, std::string>>& env = {});
  // Sends a command and waits for the answer; false (with `error`) when the subject failed,
  // died or did not answer in time.
  bool ask(const std::string& command, Json& answer, std::string& error, double timeoutSec = 600);
  // Asks it to exit and reaps it; true when it exited with status 0.
  bool finish(double timeoutSec = 30);
  uint64_t pid() const { return child_.pid(); }
  bool alive() const { return child_.running(); }
  bool started = false;
  bool hasDriver = false;  // init succeeded
  std::string startError;  // why start or init failed

 private:
  Child child_;
};

using Snapshot = std::map<std::string, Reading>;

// One emitted sample, kept so that the facts can be decided from exactly what was recorded
// (and decided again from a saved record by `cudaprobe judge`).
struct Sample {
  std::string phase;
  Json attrs;
  Snapshot readings;
};

// A sample record read back from a probe's JSON line.
Sample sampleFromRecord(const Json& record);

class Sampler {
 public:
  explicit Sampler(ProbeContext& ctx);
  // Readings now; `subject` may be null (after it exited); `pid` is the subject's.
  Snapshot take(SubjectProc* subject, uint64_t pid);
  // The same, for several subjects at once (device-wide sources are read once).
  Snapshot takeMany(const std::vector<SubjectProc*>& subjects);
  void emit(const std::string& phase, const Snapshot& s, const Obj& attrs);
  const std::vector<Sample>& samples() const { return samples_; }

 private:
  Reading nvmlDeviceUsed();
  Reading nvmlProcessUsed(uint64_t pid);
  ProbeContext& ctx_;
  std::vector<Sample> samples_;
  void* nvmlDevice_ = nullptr;
  std::string nvmlReason_;
  DeviceAdapter adapter_;  // the CUDA device's adapter, whose PDH instances are read
};

// A change between two readings (may be negative); unavailable when either side is.
struct Delta {
  bool ok = false;
  double value = 0;
  std::string reason;
};
Delta growth(const Snapshot& before, const Snapshot& after, const std::string& key);

// The device-memory sources, per process first (PDH, NVML), then device-wide (NVML, cuMemGetInfo),
// then DXGI.
extern const char* const kDeviceSources[7];

// The device-memory sources, best first: per-process where the platform has it, device-wide
// otherwise. Returns the first one available in both snapshots.
std::string primaryDeviceSource(const Snapshot& before, const Snapshot& after);

}  // namespace cp
