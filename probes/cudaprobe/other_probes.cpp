// managed-memory (C13), cuda-log (C9) and windows-registry (C10).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "cuda.hpp"
#include "emit.hpp"
#include "gpu.hpp"
#include "managed_past_vram.hpp"
#include "probe.hpp"
#include "sampler.hpp"

#ifdef _WIN32
#include <windows.h>
#endif

namespace cp {

namespace {

// ---- managed-memory (C13) -----------------------------------------------------------------

int managedMemory(ProbeContext& ctx) {
  double sizeMib = ctx.params.number("size_mib");
  double percentOfFree = ctx.params.number("percent_of_free");
  // A managed allocation larger than free device memory can hang some GPUs: keep it small, and
  // the large step (percent_of_free) opt-in and bounded.
  if (!(sizeMib > 0) || sizeMib > 1024) throw UsageError{"parameter size_mib takes 1 to 1024 MiB"};
  if (percentOfFree < 0 || percentOfFree > 150) throw UsageError{"parameter percent_of_free takes 0 (off) to 150 % of free VRAM (above 100 oversubscribes)"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Cuda& c = cuda();
  int managed = 0, concurrent = 0, pageable = 0;
  CU(c.cuDeviceGetAttribute(&managed, CU_ATTR_MANAGED_MEMORY, gpu.dev));
  CU(c.cuDeviceGetAttribute(&concurrent, CU_ATTR_CONCURRENT_MANAGED_ACCESS, gpu.dev));
  CU(c.cuDeviceGetAttribute(&pageable, CU_ATTR_PAGEABLE_MEMORY_ACCESS, gpu.dev));
  emitFact(ctx.probe, "managed_supported", managed ? "true" : "false", Obj().integer("CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY", managed));
  emitFact(ctx.probe, "concurrent_access", concurrent ? "true" : "false",
           Obj().integer("CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS", concurrent));
  emitFact(ctx.probe, "pageable_access", pageable ? "true" : "false", Obj().integer("CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS", pageable));
  if (!managed) {
    emitFact(ctx.probe, "roundtrip_ok", "null", Obj(), "the device has no managed memory");
    return kExitRan;
  }
  size_t bytes = static_cast<size_t>(sizeMib * kMiB);
  size_t count = bytes / 4;
  CUdeviceptr p = 0;
  CU(c.cuMemAllocManaged(&p, bytes, 1 /* CU_MEM_ATTACH_GLOBAL */));
  struct Free {
    CUdeviceptr p;
    ~Free() {
      if (p) cuda().cuMemFree_v2(p);
    }
  } release{p};
  auto* host = reinterpret_cast<unsigned*>(p);
  // CPU, then GPU, then CPU again, never at the same time: without concurrent access a CPU
  // touch while a kernel runs is a fault.
  double t0 = nowSeconds();
  for (size_t i = 0; i < count; ++i) host[i] = 1;
  double t1 = nowSeconds();
  Stream st;
  gpu.launchFill(st.s, p, count, 0xC0FFEEu);
  CU(c.cuStreamSynchronize(st.s));
  double t2 = nowSeconds();
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += host[i] != 0xC0FFEEu;
  double t3 = nowSeconds();
  Obj attrs = Obj().num("size_bytes", static_cast<double>(bytes));
  emitMetric(ctx.probe, "cpu_first_touch_ms", (t1 - t0) * 1000, "ms", attrs);
  emitMetric(ctx.probe, "gpu_fill_ms", (t2 - t1) * 1000, "ms", attrs);
  emitMetric(ctx.probe, "cpu_read_back_ms", (t3 - t2) * 1000, "ms", attrs);
  emitFact(ctx.probe, "roundtrip_ok", wrong == 0 ? "true" : "false", Obj().num("wrong_words", static_cast<double>(wrong)).num("words", static_cast<double>(count)));
  if (percentOfFree > 0) {
    c.cuMemFree_v2(release.p);  // the small allocation goes before the large one
    release.p = 0;
    managedPastFreeVram(ctx, gpu, percentOfFree);
  }
  return kExitRan;
}

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

}  // namespace

int runManagedMemory(ProbeContext& ctx) { return managedMemory(ctx); }
int runCudaLog(ProbeContext& ctx) { return cudaLog(ctx); }
int runWindowsRegistry(ProbeContext& ctx) { return windowsRegistry(ctx); }

}  // namespace cp
