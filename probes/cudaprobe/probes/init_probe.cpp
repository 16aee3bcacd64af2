// runtime-init (C26): the result and time of cuInit, and of the first runtime call of each CUDA
// runtime found on the target, each in a fresh process of its own (`cudaprobe init-child`), so
// that initialisation is measured cold and a runtime that crashes it (NVIDIA/cuda-samples#433)
// is recorded as such instead of taking the probe with it.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../json.hpp"
#include "../probe.hpp"
#include "../process.hpp"

namespace cp {

namespace {

std::string dirOf(const std::string& file) {
  size_t slash = file.find_last_of(isWindows() ? "\\/" : "/");
  return slash == std::string::npos ? "." : file.substr(0, slash);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(sep, start);
    std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) parts.push_back(part);
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

bool isRuntimeName(const std::string& name) {
  if (isWindows()) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return n.rfind("cudart64_", 0) == 0 && n.size() > 13 && n.compare(n.size() - 4, 4, ".dll") == 0;
  }
  const std::string prefix = "libcudart.so.";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return false;
  return name.find_first_not_of("0123456789.", prefix.size()) == std::string::npos;
}

}  // namespace

// Every CUDA runtime library in the loader's folders, beside this program and in `extra`, once
// each (Linux: by real path, so that libcudart.so.13 and the file it links to count once).
std::vector<std::string> findRuntimes(const std::string& self, const std::vector<std::string>& extra) {
  std::vector<std::string> dirs = extra;
  dirs.push_back(dirOf(self));
  if (isWindows()) {
    for (const auto& d : split(getEnv("PATH"), ';')) dirs.push_back(d);
    std::string cudaPath = getEnv("CUDA_PATH");
    if (!cudaPath.empty()) {
      dirs.push_back(cudaPath + "\\bin");
      dirs.push_back(cudaPath + "\\bin\\x64");  // CUDA 13's place for them
    }
  } else {
    for (const auto& d : split(getEnv("LD_LIBRARY_PATH"), ':')) dirs.push_back(d);
    for (const char* d : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib",
                          "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"}) {
      dirs.push_back(d);
    }
  }
  std::vector<std::string> found;
  std::set<std::string> seen;
  for (const auto& dir : dirs) {
    std::vector<std::string> names = listDir(dir);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      if (!isRuntimeName(name)) continue;
      std::string path = dir + (isWindows() ? "\\" : "/") + name;
      std::string key = path;
#ifndef _WIN32
      char real[PATH_MAX];
      if (!realpath(path.c_str(), real)) continue;  // a dangling link
      key = real;
#else
      std::transform(key.begin(), key.end(), key.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
#endif
      if (seen.insert(key).second) found.push_back(isWindows() ? path : key);
    }
  }
  return found;
}

// `cudaprobe init-child driver|runtime [--device N]`: one initialisation, timed, as one JSON
// line. The runtime is the library CUDAPROBE_CUDART names (cuda.cpp).
int runInitChild(int argc, char** argv) {
  std::string what = argc > 2 ? argv[2] : "";
  int device = argc > 4 && std::string(argv[3]) == "--device" ? std::atoi(argv[4]) : 0;
  Obj o;
  double t0 = nowSeconds();
  if (what == "driver") {
    Cuda& c = cuda();
    double t1 = nowSeconds();
    if (!c.ok()) {
      o.boolean("loaded", false).str("result", c.lib ? "the library lacks " + c.missing : "not loaded: " + c.lib.error);
    } else {
      CUresult rc = c.cuInit(0);
      double t2 = nowSeconds();
      o.boolean("loaded", true).num("load_ms", (t1 - t0) * 1e3).num("init_ms", (t2 - t1) * 1e3).integer("rc", rc).str("result", rc == 0 ? "CUDA_SUCCESS" : c.err(rc));
    }
  } else if (what == "runtime") {
    Cudart& r = cudart();
    double t1 = nowSeconds();
    if (!r.ok()) {
      o.boolean("loaded", false).str("result", r.lib ? "the library lacks " + r.missing : "not loaded: " + r.lib.error);
    } else {
      int version = 0, count = 0;
      r.cudaRuntimeGetVersion(&version);  // answered by the library itself, no initialisation
      // Said before the first call, so that a crash in it is known to be this version's.
      std::printf("%s\n", Obj().integer("version", version).json().c_str());
      std::fflush(stdout);
      double t2 = nowSeconds();
      // The first call that initialises (pytorch/pytorch#150048), looked up here only: the other
      // probes do not need it.
      auto getCount = reinterpret_cast<cudaError_t(CP_API*)(int*)>(r.lib.symbol("cudaGetDeviceCount"));
      cudaError_t rc = getCount ? getCount(&count) : -1;
      double t3 = nowSeconds();
      o.boolean("loaded", true).integer("version", version).num("load_ms", (t1 - t0) * 1e3).num("first_call_ms", (t3 - t2) * 1e3).integer("rc", rc);
      o.str("result", !getCount ? "the library lacks cudaGetDeviceCount" : rc == 0 ? "cudaSuccess" : r.err(rc)).integer("devices", count);
      if (rc == 0 && device < count) {
        cudaError_t cr = r.cudaSetDevice(device);
        if (cr == 0) cr = r.cudaFree(nullptr);  // the context
        o.num("context_ms", (nowSeconds() - t3) * 1e3).str("context", cr == 0 ? "cudaSuccess" : r.err(cr));
      }
    }
  } else {
    std::fprintf(stderr, "cudaprobe: init-child takes driver or runtime\n");
    return kExitUsage;
  }
  std::printf("%s\n", o.json().c_str());
  std::fflush(stdout);
  return kExitRan;
}

namespace {

// One init-child: its answer (null, with `failure`, when it crashed, hung or could not start),
// and the runtime version it said before its first call (0 when none).
Json initChild(ProbeContext& ctx, const std::string& what, const std::string& runtime, double timeoutS, std::string& failure, int& version) {
  Child child;
  std::string error;
  std::vector<std::pair<std::string, std::string>> env;
  if (!runtime.empty()) env.emplace_back("CUDAPROBE_CUDART", runtime);
  if (!child.start(ctx.self, {"init-child", what, "--device", std::to_string(ctx.device)}, env, error)) {
    failure = "could not start: " + error;
    return Json();
  }
  std::string line;
  bool answered = false;
  while (!answered && child.readLine(line, timeoutS)) {
    Json j = Json::parse(line);
    if (j.has("version")) version = static_cast<int>(j.num("version", 0));
    answered = j.has("result");
  }
  int code = child.wait(answered ? 30 : 0.5);
  if (code < 0) {
    child.kill();
    failure = answered ? "did not exit after answering" : "timed out after " + std::to_string(static_cast<int>(timeoutS)) + " s";
    return answered ? Json::parse(line) : Json();
  }
  if (!answered) failure = "crashed (exit status " + std::to_string(code) + ")";
  return answered ? Json::parse(line) : Json();
}

std::string baseName(const std::string& path) {
  size_t slash = path.find_last_of(isWindows() ? "\\/" : "/");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string versionName(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

int runtimeInit(ProbeContext& ctx) {
  std::string extra = ctx.params.get("dirs");
  double timeoutS = ctx.params.number("timeout_s");
  if (!(timeoutS >= 1 && timeoutS <= 600)) throw UsageError{"parameter timeout_s takes 1 to 600 s"};
  // No cuInit here: each child initialises for itself. Without a driver library there is nothing to time.
  Cuda& c = cuda();
  if (!c.ok()) {
    emitSkip(ctx.probe, c.lib ? "the CUDA driver library lacks " + c.missing
                              : "no NVIDIA driver found: the CUDA driver library could not be loaded (" + c.lib.error + ")");
    return kExitNoDriver;
  }
  int driverVersion = 0;
  c.cuDriverGetVersion(&driverVersion);

  std::string failure;
  int unused = 0;
  Json d = initChild(ctx, "driver", "", timeoutS, failure, unused);
  if (d.isNull()) {
    emitFact(ctx.probe, "driver_init", jsonString(failure), Obj());
  } else {
    emitFact(ctx.probe, "driver_init", jsonString(d.str("result")), Obj().num("init_ms", d.num("init_ms")).integer("driver_version", driverVersion));
    if (d.flag("loaded")) {
      emitMetric(ctx.probe, "cuinit_ms", d.num("init_ms"), "ms");
      emitMetric(ctx.probe, "driver_load_ms", d.num("load_ms"), "ms");
    }
  }

  std::vector<std::string> runtimes = findRuntimes(ctx.self, split(extra, ','));
  emitMetric(ctx.probe, "runtimes_found", static_cast<double>(runtimes.size()), "count");
  std::string summary, paths;
  bool supportedOk = true;
  int supported = 0;
  for (const auto& path : runtimes) {
    failure.clear();
    int version = 0;
    Json r = initChild(ctx, "runtime", path, timeoutS, failure, version);
    std::string name = baseName(path);
    Obj attrs = Obj().str("library", name);
    if (version > 0) attrs.str("version", versionName(version));
    std::string result = r.isNull() ? failure : r.str("result");
    if (!r.isNull() && r.flag("loaded")) {
      emitMetric(ctx.probe, "runtime_load_ms", r.num("load_ms"), "ms", attrs);
      emitMetric(ctx.probe, "runtime_first_call_ms", r.num("first_call_ms"), "ms", attrs);
      if (r.has("context_ms")) emitMetric(ctx.probe, "runtime_context_ms", r.num("context_ms"), "ms", attrs);
      if (r.has("context") && r.str("context") != "cudaSuccess") result += ", context " + r.str("context");
    }
    paths += (paths.empty() ? "" : "; ") + path;
    summary += (summary.empty() ? "" : "; ") + name + (version > 0 ? " (" + versionName(version) + ")" : "") + ": " + result;
    // A runtime newer than the driver may fail by design (cudaErrorInsufficientDriver); one the
    // driver supports must initialise.
    if (version > 0 && version <= driverVersion) {
      ++supported;
      if (result != "cudaSuccess") supportedOk = false;
    }
  }
  Obj ev = Obj().integer("runtimes", static_cast<int64_t>(runtimes.size())).integer("supported", supported).str("driver_cuda", versionName(driverVersion)).str("libraries", paths);
  if (runtimes.empty()) {
    emitFact(ctx.probe, "runtime_init", "null", Obj(), "no CUDA runtime library found on the loader path or beside cudaprobe");
  } else {
    emitFact(ctx.probe, "runtime_init", jsonString(summary), ev);
  }
  if (supported == 0) {
    emitFact(ctx.probe, "supported_runtimes_init", "null", ev,
             runtimes.empty() ? "no CUDA runtime library found" : "no runtime found is of a CUDA version the driver supports");
  } else {
    emitFact(ctx.probe, "supported_runtimes_init", supportedOk ? "true" : "false", ev);
  }
  return kExitRan;
}

}  // namespace cp
