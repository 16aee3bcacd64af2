// What a probe is given (ProbeContext, its Params) and how it is listed (ProbeInfo): the list
// itself is probe_list.cpp, which `cudaprobe list` prints, with its data generated from the
// TypeScript catalogue (probe_table.inc).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace cp {

// Exit codes of the cudaprobe program (the TypeScript side relies on them).
constexpr int kExitRan = 0;
constexpr int kExitProbeFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDriver = 3;  // no usable driver or device, or not for this platform: everything skipped

struct UsageError {
  std::string message;
};

// A probe's parameters: declared defaults ("name=value;name=v1,v2"), overridden by --param.
class Params {
 public:
  void declare(const std::string& probe, const std::string& defaults);
  // Throws UsageError for a --param the probe does not have.
  void set(const std::string& name, const std::string& value);
  std::string get(const std::string& name) const;
  double number(const std::string& name) const;
  std::vector<double> numbers(const std::string& name) const;
  const std::map<std::string, std::string>& defaults() const { return defaults_; }

 private:
  std::string probe_;
  std::map<std::string, std::string> defaults_, values_;
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
  const char* claims;     // claim ids (docs/claims.md), "C1,C3"
  const char* platforms;  // "linux,windows" or "windows"
  const char* params;     // defaults, "name=value;name=v1,v2"
  ProbeFn run;
};

// Every probe, in the catalogue's order (probe_list.cpp).
const std::vector<ProbeInfo>& probes();

// `cudaprobe init-child`: runtime-init's fresh process (probes/init_probe.cpp).
int runInitChild(int argc, char** argv);

// `cudaprobe ipc-import`: ipc-handles' importing process (probes/ipc_handles.cpp).
int runIpcImport(int argc, char** argv);

// Loads the driver and checks ctx.device; on failure emits a skip and returns false.
// Probes that need the GPU start with `if (!requireDevice(ctx)) return kExitNoDriver;`.
bool requireDevice(ProbeContext& ctx);

}  // namespace cp
