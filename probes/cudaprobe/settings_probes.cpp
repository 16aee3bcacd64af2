// The probes of the driver's settings: what CUDA_LOG_FILE logs (cuda-log, C9) and the
// GraphicsDrivers registry values (windows-registry, C10).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "cuda.hpp"
#include "emit.hpp"
#include "probe.hpp"
#include "sampler.hpp"

#ifdef _WIN32
#include <windows.h>
#endif

namespace cp {

namespace {

// ---- cuda-log (C9) ------------------------------------------------------------------------

std::vector<std::string> readLines(const std::string& path, bool& exists) {
  std::vector<std::string> lines;
  std::ifstream f(path);
  exists = static_cast<bool>(f);
  std::string l;
  while (std::getline(f, l)) {
    if (!l.empty()) lines.push_back(l);
  }
  return lines;
}

}  // namespace

int cudaLog(ProbeContext& ctx) {
  std::string level = ctx.params.get("log_level");
  if (!requireDevice(ctx)) return kExitNoDriver;
  Cudart& r = cudart();
  if (!r.ok()) {
    emitSkip(ctx.probe, "no CUDA runtime library on this target: CUDA_LOG_FILE is read by the runtime");
    return kExitNoDriver;
  }
  int version = 0;
  r.cudaRuntimeGetVersion(&version);
  emitMetric(ctx.probe, "runtime_version", version, "count");
  if (version < 12090) {
    const std::string why = "CUDA_LOG_FILE exists from CUDA 12.9; this runtime is " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    for (const char* f : {"log_file_written", "logs_successful_pin", "logs_errors"}) emitFact(ctx.probe, f, "null", Obj(), why);
    return kExitRan;
  }
  // Two fresh subjects, each with its own log file: one only pins, one also makes an error.
  struct Outcome {
    bool exists = false;
    std::vector<std::string> lines;
    std::string error;
  };
  auto run = [&](bool withError) {
    Outcome o;
    char name[64];
    std::snprintf(name, sizeof name, "cudaprobe-log-%llu-%d.txt", static_cast<unsigned long long>(processId()), withError ? 1 : 0);
    std::string dir = getEnv(isWindows() ? "TEMP" : "TMPDIR");
    if (dir.empty()) dir = isWindows() ? "." : "/tmp";
    std::string file = dir + (isWindows() ? "\\" : "/") + name;
    std::remove(file.c_str());
    std::vector<std::pair<std::string, std::string>> env = {{"CUDA_LOG_FILE", file}};
    if (!level.empty()) env.emplace_back("CUDA_LOG_LEVEL", level);
    SubjectProc p(ctx, env);
    Json a;
    if (!p.hasDriver) o.error = p.startError;
    else if (!p.ask("alloc runtime pinned 1048576", a, o.error)) {
    } else if (withError && !p.ask("runtime-error", a, o.error)) {
    }
    p.finish();
    o.lines = readLines(file, o.exists);
    std::remove(file.c_str());
    return o;
  };
  Outcome pinOnly = run(false), withError = run(true);
  if (!pinOnly.error.empty() || !withError.error.empty()) {
    emitError(ctx.probe, "a subject failed: " + (pinOnly.error.empty() ? withError.error : pinOnly.error));
    return kExitProbeFailure;
  }
  Obj attrs = level.empty() ? Obj() : Obj().str("log_level", level);
  emitMetric(ctx.probe, "lines_pin_only", static_cast<double>(pinOnly.lines.size()), "count", attrs);
  emitMetric(ctx.probe, "lines_with_error", static_cast<double>(withError.lines.size()), "count", attrs);
  Obj ev;
  if (!withError.lines.empty()) ev.str("first_line", withError.lines.front().substr(0, 300));
  emitFact(ctx.probe, "log_file_written", pinOnly.exists || withError.exists ? "true" : "false", ev);
  emitFact(ctx.probe, "logs_successful_pin", pinOnly.lines.empty() ? "false" : "true", Obj().num("lines", static_cast<double>(pinOnly.lines.size())));
  emitFact(ctx.probe, "logs_errors", withError.lines.size() > pinOnly.lines.size() ? "true" : "false",
           Obj().num("lines_with_error", static_cast<double>(withError.lines.size())).num("lines_pin_only", static_cast<double>(pinOnly.lines.size())));
  return kExitRan;
}

// ---- windows-registry (C10) ---------------------------------------------------------------

int windowsRegistry(ProbeContext& ctx) {
#ifdef _WIN32
  // Read only. The Win+Ctrl+Shift+B hot-key of the same claim is never sent: a driver reset
  // can break live work on the machine.
  const char* key = "SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers";
  for (const char* value : {"EnableGpuMemoryCompression", "HwSchMode", "TdrDelay", "TdrLevel"}) {
    DWORD data = 0, size = sizeof data, type = 0;
    LONG rc = RegGetValueA(HKEY_LOCAL_MACHINE, key, value, RRF_RT_ANY, &type, &data, &size);
    std::string name = std::string("registry_") + value;
    if (rc == ERROR_SUCCESS && type == REG_DWORD) {
      emitMetric(ctx.probe, name.c_str(), data, "count");
    } else {
      emitMetricNull(ctx.probe, name.c_str(), "count",
                     rc == ERROR_FILE_NOT_FOUND ? "the value does not exist" : "not a readable DWORD (error " + std::to_string(rc) + ")");
    }
    if (std::strcmp(value, "EnableGpuMemoryCompression") == 0) {
      emitFact(ctx.probe, "gpu_memory_compression_value_exists", rc == ERROR_SUCCESS ? "true" : "false",
               Obj().str("key", std::string("HKLM\\") + key).integer("error", rc));
    }
  }
  return kExitRan;
#else
  emitSkip(ctx.probe, "the Windows registry exists on Windows only");
  return kExitNoDriver;
#endif
}

}  // namespace cp
