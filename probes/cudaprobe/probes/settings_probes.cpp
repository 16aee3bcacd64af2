// The probes of the driver's settings: what CUDA_LOG_FILE logs (cuda-log, C9), the
// GraphicsDrivers registry values (windows-registry, C10) and the watchdog (watchdog, C25).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../probe.hpp"
#include "../sampler.hpp"

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
  for (const char* value : {"EnableGpuMemoryCompression", "HwSchMode", "TdrDelay", "TdrLevel"}) {
    RegistryDword v = graphicsDriversValue(value);
    std::string name = std::string("registry_") + value;
    if (v.found) {
      emitMetric(ctx.probe, name.c_str(), v.value, "count");
    } else {
      emitMetricNull(ctx.probe, name.c_str(), "count",
                     v.error == ERROR_FILE_NOT_FOUND ? "the value does not exist" : "not a readable DWORD (error " + std::to_string(v.error) + ")");
    }
    if (std::strcmp(value, "EnableGpuMemoryCompression") == 0) {
      emitFact(ctx.probe, "gpu_memory_compression_value_exists", v.found ? "true" : "false",
               Obj().str("key", std::string("HKLM\\") + kGraphicsDriversKey).integer("error", v.error));
    }
  }
  return kExitRan;
#else
  emitSkip(ctx.probe, "the Windows registry exists on Windows only");
  return kExitNoDriver;
#endif
}

// ---- watchdog (C25) ------------------------------------------------------------------------

// Why a TDR value is null off Windows: the setting is the Windows host's (inside WSL, where it
// applies to the distribution's kernels) or there is none (native Linux).
std::string tdrOffWindowsReason(const char* value, bool inWsl) {
  const std::string setting = std::string(value) + " is a Windows registry setting (HKLM\\" + kGraphicsDriversKey + ")";
  if (inWsl) return setting + ": inside WSL the Windows host's applies (numba/numba#3197), and the host's registry is not readable from the distribution";
  return setting + ": it exists on Windows only";
}

namespace {

// A TDR value of the GraphicsDrivers key as a fact: the value set, or Windows' documented
// default when it is not set (TdrDelay 2 s, TdrLevel 3 = recover), or null off Windows.
void tdrFact(const std::string& probe, const char* fact, const char* value, int windowsDefault) {
  if (!isWindows()) {
    emitFact(probe, fact, "null", Obj(), tdrOffWindowsReason(value, wslInfo().isWsl));
    return;
  }
  RegistryDword v = graphicsDriversValue(value);
  Obj ev = Obj().str("key", std::string("HKLM\\") + kGraphicsDriversKey + "\\" + value);
  if (v.found) {
    emitFact(probe, fact, std::to_string(v.value), ev.str("source", "registry"));
  } else if (v.error == 2 /* ERROR_FILE_NOT_FOUND */) {
    emitFact(probe, fact, std::to_string(windowsDefault), ev.str("source", "default").integer("error", v.error));
  } else {
    emitFact(probe, fact, "null", ev.integer("error", v.error), "the registry value is not a readable DWORD (error " + std::to_string(v.error) + ")");
  }
}

}  // namespace

// Facts only: no kernel runs near the watchdog's limit (it would reset the GPU of a desktop).
int watchdog(ProbeContext& ctx) {
  tdrFact(ctx.probe, "tdr_delay_s", "TdrDelay", 2);
  tdrFact(ctx.probe, "tdr_level", "TdrLevel", 3);
  if (!requireDevice(ctx)) return kExitNoDriver;
  Cuda& c = cuda();
  CUdevice dev = 0;
  CU(c.cuDeviceGet(&dev, ctx.device));
  int timeout = 0;
  CUresult rc = c.cuDeviceGetAttribute(&timeout, CU_ATTR_KERNEL_EXEC_TIMEOUT, dev);
  if (rc == 0) emitFact(ctx.probe, "kernel_exec_timeout", timeout ? "true" : "false", Obj().integer("attribute", timeout));
  else emitFact(ctx.probe, "kernel_exec_timeout", "null", Obj(), "cuDeviceGetAttribute(KERNEL_EXEC_TIMEOUT) failed: " + c.err(rc));
  return kExitRan;
}

}  // namespace cp
