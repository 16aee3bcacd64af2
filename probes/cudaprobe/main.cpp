// cudaprobe: one small program that measures what the NVIDIA driver does and prints the
// results as JSON lines (protocol cudaprobe/1). Diagnostics go to stderr.
//
//   cudaprobe list                              the probes this build has
//   cudaprobe run PROBE [--device N] [--param NAME=VALUE]...
//   cudaprobe ptx                               the embedded PTX kernels
//   cudaprobe version
//
// Exit codes: 0 ran, 1 probe failure, 2 usage error, 3 no usable driver or device.
#include <cstdio>
#include <cstring>
#include <string>

#include "cuda.hpp"
#include "emit.hpp"
#include "kernels.hpp"
#include "probe.hpp"
#include "version.hpp"

namespace cp {

const std::vector<ProbeInfo>& probes() {
  static const std::vector<ProbeInfo> all = {
      {"sysinfo", "OS, driver, GPU, PCIe link, driver model and the detected environment", "linux,windows", runSysinfo},
  };
  return all;
}

bool requireDevice(ProbeContext& ctx) {
  Cuda& c = cuda();
  if (!c.ok()) {
    emitSkip(ctx.probe, c.lib ? "the CUDA driver library lacks " + c.missing
                              : "no NVIDIA driver found: the CUDA driver library could not be loaded (" + c.lib.error + ")");
    return false;
  }
  CUresult rc = c.cuInit(0);
  if (rc != 0) {
    emitSkip(ctx.probe, "cuInit failed: " + c.err(rc) + " (the driver is installed but no usable GPU was found)");
    return false;
  }
  int count = 0;
  c.cuDeviceGetCount(&count);
  if (ctx.device < 0 || ctx.device >= count) {
    emitSkip(ctx.probe, "device " + std::to_string(ctx.device) + " does not exist (" + std::to_string(count) + " present)");
    return false;
  }
  return true;
}

}  // namespace cp

namespace {

const char* kUsage =
    "usage: cudaprobe list\n"
    "       cudaprobe run PROBE [--device N] [--param NAME=VALUE]...\n"
    "       cudaprobe ptx\n"
    "       cudaprobe version\n";

int usage(const std::string& message) {
  std::fprintf(stderr, "cudaprobe: %s\n%s", message.c_str(), kUsage);
  return cp::kExitUsage;
}

int list() {
  for (const auto& p : cp::probes()) {
    cp::Line("probe", p.name).str("description", p.description).str("platforms", p.platforms).emit();
  }
  return cp::kExitRan;
}

int run(int argc, char** argv) {
  if (argc < 3) return usage("run needs a probe name");
  cp::ProbeContext ctx;
  ctx.probe = argv[2];
  ctx.self = argv[0];
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--device" || a == "--param") && i + 1 >= argc) return usage(a + " needs a value");
    if (a == "--device") {
      char* end = nullptr;
      long d = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || d < 0) return usage(std::string("--device needs a device index, got ") + argv[i]);
      ctx.device = static_cast<int>(d);
    } else if (a == "--param") {
      std::string kv = argv[++i];
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) return usage("--param needs NAME=VALUE, got " + kv);
      ctx.params.values[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else {
      return usage("unknown argument " + a);
    }
  }
  for (const auto& p : cp::probes()) {
    if (ctx.probe != p.name) continue;
    bool here = std::strstr(p.platforms, cp::isWindows() ? "windows" : "linux") != nullptr;
    if (!here) {
      cp::emitSkip(ctx.probe, std::string("this probe runs on ") + p.platforms + " only");
      return cp::kExitRan;
    }
    try {
      int rc = p.run(ctx);
      auto unused = ctx.params.unused();
      if (!unused.empty()) {
        std::fprintf(stderr, "cudaprobe: probe %s has no parameter %s\n", p.name, unused.front().c_str());
      }
      return rc;
    } catch (const cp::UsageError& e) {
      cp::emitError(ctx.probe, e.message, "USAGE");
      return cp::kExitUsage;
    }
  }
  return usage("unknown probe " + ctx.probe + " (cudaprobe list shows the probes)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("missing command");
  std::string cmd = argv[1];
  if (cmd == "list") return list();
  if (cmd == "run") return run(argc, argv);
  if (cmd == "ptx") {
    std::fputs(cp::kKernelsPtx, stdout);
    return cp::kExitRan;
  }
  if (cmd == "version") {
    std::printf("cudaprobe %s (protocol %s)\n", cp::kCudaprobeVersion, cp::kSchema);
    return cp::kExitRan;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return cp::kExitRan;
  }
  return usage("unknown command " + cmd);
}
