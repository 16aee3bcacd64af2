// The probe registry: each probe registers a name, a one-line description, the platforms it
// runs on, and its entry point. `cudaprobe list` prints this registry.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace cp {

// Exit codes of the cudaprobe program (the TypeScript side relies on them).
constexpr int kExitRan = 0;
constexpr int kExitProbeFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDriver = 3;

struct Params {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> used;  // for "unknown parameter" errors
  std::string get(const std::string& name, const std::string& fallback);
  double number(const std::string& name, double fallback);                  // throws UsageError
  std::vector<double> numbers(const std::string& name, const std::vector<double>& fallback);
  std::vector<std::string> unused() const;
};

struct UsageError {
  std::string message;
};

struct ProbeContext {
  std::string probe;
  int device = 0;
  std::string self;  // path of this executable, for probes that spawn subjects
  Params params;
};

using ProbeFn = int (*)(ProbeContext&);

struct ProbeInfo {
  const char* name;
  const char* description;
  const char* platforms;  // "linux,windows" or "windows"
  ProbeFn run;
};

const std::vector<ProbeInfo>& probes();

// Loads the driver and selects ctx.device; on failure emits a skip and returns false.
// Probes that need the GPU start with `if (!requireDevice(ctx)) return kExitNoDriver;`.
bool requireDevice(ProbeContext& ctx);

int runSysinfo(ProbeContext& ctx);

}  // namespace cp
