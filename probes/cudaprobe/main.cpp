// cudaprobe: one small program that measures what the NVIDIA driver does and prints the
// results as JSON lines (protocol cudaprobe/1). Diagnostics go to stderr.
//
//   cudaprobe list                              the probes this build has, with their parameters
//   cudaprobe run PROBE [--device N] [--param NAME=VALUE]...
//   cudaprobe subject [--device N]              a memory probe's subject (started by the probe)
//   cudaprobe judge PROBE                       decide a memory probe's facts again from its
//                                               recorded JSON lines on stdin
//   cudaprobe wait [--stdin] [--usr1-kills-others]
//                                               block until stopped, or with --stdin until stdin
//                                               ends (a probe container's main process, which
//                                               thus ends with the controller's connection);
//                                               with --usr1-kills-others (Linux, in a container
//                                               under docker-init) SIGUSR1 kills every other
//                                               process of the container but its init
//   cudaprobe vm-memory [--max-seconds S] [--interval-ms N]
//                                               on a WSL 2 distribution's Windows host: the VM
//                                               process's GPU memory counters, sampled (winvm.hpp)
//   cudaprobe init-child driver|runtime [--device N]
//                                               one timed initialisation (started by runtime-init)
//   cudaprobe ipc-import [--device N]           import one exported allocation named on stdin and
//                                               read it back (started by ipc-handles)
//   cudaprobe ptx                               the embedded PTX kernels
//   cudaprobe selftest ...                      for the tests (selftest.hpp)
//   cudaprobe version
//
// Exit codes: 0 ran, 1 probe failure, 2 usage error, 3 everything skipped (no usable driver or
// device, or a probe for another platform).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef _WIN32
#include <windows.h>
#else
#include <unistd.h>
#endif

#include "cuda.hpp"
#include "emit.hpp"
#include "gpu.hpp"
#include "judge.hpp"
#include "kernels.hpp"
#include "neighbours.hpp"
#include "probe.hpp"
#include "process.hpp"
#include "selftest.hpp"
#include "subject.hpp"
#include "version.hpp"
#include "wait.hpp"
#include "winvm.hpp"

namespace cp {

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
  neighboursStart(ctx);  // the device is known and no context made yet (cuInit makes none)
  return true;
}

}  // namespace cp

namespace {

const char* kUsage =
    "usage: cudaprobe list\n"
    "       cudaprobe run PROBE [--device N] [--param NAME=VALUE]...\n"
    "       cudaprobe subject [--device N]\n"
    "       cudaprobe judge PROBE < recorded-lines\n"
    "       cudaprobe wait [--stdin] [--usr1-kills-others]\n"
    "       cudaprobe vm-memory [--max-seconds S] [--interval-ms N]\n"
    "       cudaprobe init-child driver|runtime [--device N]\n"
    "       cudaprobe ipc-import [--device N] < request\n"
    "       cudaprobe ptx\n"
    "       cudaprobe version\n"
    "       cudaprobe selftest NAME < input   (tests only: the parsers, e.g. pdh-select)\n";

// The path this program was started by, made absolute, for starting subjects of itself.
std::string selfPath(const char* argv0) {
#ifdef _WIN32
  wchar_t buf[32768];  // the longest path Windows has; wide, so that C:\Users\Jürgen works
  DWORD n = GetModuleFileNameW(nullptr, buf, sizeof buf / sizeof buf[0]);
  return n > 0 && n < sizeof buf / sizeof buf[0] ? cp::toUtf8(std::wstring(buf, n)) : std::string(argv0);
#else
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string(argv0);
#endif
}

int usage(const std::string& message) {
  std::fprintf(stderr, "cudaprobe: %s\n%s", message.c_str(), kUsage);
  return cp::kExitUsage;
}

int list() {
  for (const auto& p : cp::probes()) {
    cp::Params params;
    params.declare(p.name, p.params);
    cp::Obj defaults;
    for (const auto& kv : params.defaults()) defaults.str(kv.first.c_str(), kv.second);
    cp::Line("probe", p.name)
        .str("description", p.description)
        .str("claims", p.claims)
        .str("platforms", p.platforms)
        .raw("params", defaults.json())
        .emit();
  }
  return cp::kExitRan;
}

int parseDevice(const char* text, int& device) {
  char* end = nullptr;
  long d = std::strtol(text, &end, 10);
  if (*end != '\0' || d < 0) return usage(std::string("--device needs a device index, got ") + text);
  device = static_cast<int>(d);
  return -1;
}

int subject(int argc, char** argv) {
  int device = 0;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      int rc = parseDevice(argv[++i], device);
      if (rc >= 0) return rc;
    } else {
      return usage("unknown argument " + a);
    }
  }
  // A test hook (never set in real runs): a subject busy for a known time, as in a long
  // allocation, for the tests of a probe that dies under its subjects.
  if (const char* delay = std::getenv("CUDAPROBE_TEST_SUBJECT_DELAY_MS")) cp::sleepSeconds(std::atof(delay) / 1000.0);
  return cp::runSubject(device);
}

int run(int argc, char** argv) {
  if (argc < 3) return usage("run needs a probe name");
  cp::ProbeContext ctx;
  ctx.probe = argv[2];
  ctx.self = selfPath(argv[0]);
  const cp::ProbeInfo* info = nullptr;
  for (const auto& p : cp::probes()) {
    if (ctx.probe == p.name) info = &p;
  }
  if (!info) return usage("unknown probe " + ctx.probe + " (cudaprobe list shows the probes)");
  ctx.params.declare(info->name, info->params);
  int code = cp::kExitRan;
  try {
    for (int i = 3; i < argc; ++i) {
      std::string a = argv[i];
      if ((a == "--device" || a == "--param") && i + 1 >= argc) return usage(a + " needs a value");
      if (a == "--device") {
        int rc = parseDevice(argv[++i], ctx.device);
        if (rc >= 0) return rc;
      } else if (a == "--param") {
        std::string kv = argv[++i];
        auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) return usage("--param needs NAME=VALUE, got " + kv);
        ctx.params.set(kv.substr(0, eq), kv.substr(eq + 1));
      } else {
        return usage("unknown argument " + a);
      }
    }
    // A test hook: the tests of timeouts, cancellation, signals and scheduling need a probe
    // that takes a known time (or hangs) on machines without a GPU. Never set in real runs.
#ifndef _WIN32
    // With it, a stubborn probe that only SIGKILL stops (the tests of a second Ctrl-C).
    if (std::getenv("CUDAPROBE_TEST_IGNORE_SIGTERM")) signal(SIGTERM, SIG_IGN);
#endif
    if (const char* delay = std::getenv("CUDAPROBE_TEST_DELAY_MS")) {
      double ms = std::atof(delay);
      std::fprintf(stderr, "cudaprobe: CUDAPROBE_TEST_DELAY_MS=%s: waiting before %s\n", delay, ctx.probe.c_str());
      std::fflush(stderr);
      cp::sleepSeconds(ms / 1000.0);
    }
    bool here = std::strstr(info->platforms, cp::isWindows() ? "windows" : "linux") != nullptr;
    if (!here) {
      cp::emitSkip(ctx.probe, std::string("this probe runs on ") + info->platforms + " only");
      return cp::kExitNoDriver;
    }
    code = info->run(ctx);
  } catch (const cp::UsageError& e) {
    cp::emitError(ctx.probe, e.message, "USAGE");
    code = cp::kExitUsage;
  } catch (const cp::ProbeFailure& e) {
    cp::emitError(ctx.probe, e.message, "PROBE_FAILURE");
    code = cp::kExitProbeFailure;
  }
  // Right after the probe's work (a failed one too: a neighbour may be why it failed), when its
  // start check was taken: who else used the GPU meanwhile.
  cp::neighboursEnd(ctx);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("missing command");
  std::string cmd = argv[1];
  if (cmd == "list") return list();
  if (cmd == "run") return run(argc, argv);
  if (cmd == "subject") return subject(argc, argv);
  if (cmd == "judge") {
    if (argc != 3) return usage("judge needs a probe name");
    return cp::runJudge(argv[2]);
  }
  if (cmd == "wait") {
    try {
      return cp::runWait(argc, argv);
    } catch (const cp::UsageError& e) {
      return usage(e.message);
    }
  }
  if (cmd == "vm-memory") {
    try {
      return cp::runVmMemory(argc, argv);
    } catch (const cp::UsageError& e) {
      return usage(e.message);
    }
  }
  if (cmd == "selftest") return cp::runSelftest(argc, argv);
  if (cmd == "init-child") return cp::runInitChild(argc, argv);
  if (cmd == "ipc-import") return cp::runIpcImport(argc, argv);
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
