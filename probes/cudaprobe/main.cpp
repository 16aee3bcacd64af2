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
//   cudaprobe ptx                               the embedded PTX kernels
//   cudaprobe selftest ...                      for the tests (selftest.hpp)
//   cudaprobe version
//
// Exit codes: 0 ran, 1 probe failure, 2 usage error, 3 everything skipped (no usable driver or
// device, or a probe for another platform).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef _WIN32
#include <windows.h>
#else
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "cuda.hpp"
#include "emit.hpp"
#include "gpu.hpp"
#include "judge.hpp"
#include "kernels.hpp"
#include "probe.hpp"
#include "process.hpp"
#include "selftest.hpp"
#include "subject.hpp"
#include "version.hpp"

namespace cp {

const std::vector<ProbeInfo>& probes() {
  static const std::vector<ProbeInfo> all = {
      {"sysinfo", "OS, driver, GPU, PCIe link, driver model and the detected environment", "linux,windows", "", runSysinfo},
      {"pinned-vram", "whether pinned host memory counts against VRAM (C1, C3, C4)", "linux,windows",
       "sizes_gib=1,2,4;apis=driver,runtime;register_size_gib=1;wait_s=0.1", runPinnedVram},
      {"pinned-release", "when memory freed with cuMemFreeHost/cudaFreeHost is returned (C2)", "linux,windows",
       "size_gib=1;wait_s=0,1,5;apis=driver,runtime", runPinnedRelease},
      {"multi-process-pinned", "whether several processes pinning at once add up (C14)", "linux,windows", "processes=2;size_gib=1",
       runMultiProcessPinned},
      {"pinned-ceiling", "how much can be pinned, against free VRAM and with cudaDeviceReset first (C11, C12)", "linux,windows",
       "chunk_mib=256;max_gib=16;max_fraction=0.5;prefill_percent=0,50,90;reset_rounds=2;registered_rounds=1", runPinnedCeiling},
      {"transfer-bandwidth", "H2D and D2H bandwidth from pageable and pinned memory (C8)", "linux,windows",
       "sizes_mib=1,16,256,1024;repetitions=20;warmup=2", runTransferBandwidth},
      {"event-timing", "the resolution of cuEventElapsedTime (C7)", "linux,windows", "targets_us=1,2,5,10,20;repetitions=50", runEventTiming},
      {"sync-latency", "no-op kernel + stream synchronize latency (C5)", "linux,windows", "iterations=10000", runSyncLatency},
      {"stream-priority", "whether stream priorities are honoured (C6)", "linux,windows", "repetitions=5;block_us=1000;waves=10;delay_ms=1",
       runStreamPriority},
      {"cuda-graph", "CUDA Graphs support and launch cost (C5)", "linux,windows", "kernels=1000;repetitions=20", runCudaGraph},
      {"managed-memory", "managed memory and concurrent CPU/GPU access (C13); opt-in: a managed allocation of percent_of_free (C18)", "linux,windows",
       "size_mib=64;percent_of_free=0", runManagedMemory},
      {"cuda-log", "what CUDA_LOG_FILE logs (C9)", "linux,windows", "log_level=", runCudaLog},
      {"windows-registry", "GraphicsDrivers registry values (C10)", "windows", "", runWindowsRegistry},
      // Opt-in (they fill the card), bounded, and last.
      {"alloc-ceiling", "how much device memory can be allocated against the free VRAM reported (C15); opt-in", "linux,windows",
       "apis=driver,runtime,async;chunk_mib=256;max_gib=0;granularity_mib=64", runAllocCeiling},
      {"sysmem-fallback", "whether allocations past VRAM spill into system memory, and what a spilled chunk costs (C16); opt-in", "linux,windows",
       "api=runtime;chunk_mib=256;past_vram_gib=2;max_gib=0", runSysmemFallback},
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
    "       cudaprobe subject [--device N]\n"
    "       cudaprobe judge PROBE < recorded-lines\n"
    "       cudaprobe wait [--stdin] [--usr1-kills-others]\n"
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
    cp::Line("probe", p.name).str("description", p.description).str("platforms", p.platforms).raw("params", defaults.json()).emit();
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
    return info->run(ctx);
  } catch (const cp::UsageError& e) {
    cp::emitError(ctx.probe, e.message, "USAGE");
    return cp::kExitUsage;
  } catch (const cp::ProbeFailure& e) {
    cp::emitError(ctx.probe, e.message, "PROBE_FAILURE");
    return cp::kExitProbeFailure;
  }
}

#ifndef _WIN32
// SIGUSR1 under --usr1-kills-others: every process of this PID namespace but its init and this
// one gets SIGKILL (the commands run in the container with docker exec, which the engine cannot
// signal itself); the container stays up for the next command.
extern "C" void killOthers(int) { kill(-1, SIGKILL); }

// Whether kill(-1) stays inside a container: this process is in a PID namespace other than the
// host's (whose /proc/self/ns/pid inode is the kernel's constant PROC_PID_INIT_INO) and is a
// child of that namespace's init.
bool inContainerPidNamespace() {
  struct stat st;
  return getppid() == 1 && stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != 0xEFFFFFFCu;
}
#endif

// The main process of a probe container: it only has to stay alive while the container is used
// (docker-init, PID 1, reaps what the probes leave). With --stdin it ends, exit 0, when its
// stdin does: the container's stdin is the controller's attach connection (StdinOnce), so the
// container ends, and is removed (AutoRemove), when the controller or a hop to the engine dies.
// Plain, it blocks until a signal ends it. The line on stderr says it runs.
int waitCommand(int argc, char** argv) {
  bool untilEof = false;
  bool usr1KillsOthers = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--stdin") {
      untilEof = true;
    } else if (a == "--usr1-kills-others") {
      usr1KillsOthers = true;
    } else {
      return usage("unknown argument " + a);
    }
  }
#ifndef _WIN32
  if (usr1KillsOthers) {
    if (inContainerPidNamespace()) {
      struct sigaction sa;
      std::memset(&sa, 0, sizeof sa);
      sa.sa_handler = killOthers;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(SIGUSR1, &sa, nullptr);
    } else {
      // Left at its default (it ends this process): outside a container kill(-1) would reach
      // every process of the user.
      std::fputs("cudaprobe: not in a container's PID namespace under its init: SIGUSR1 only ends this process\n", stderr);
    }
  }
#else
  (void)usr1KillsOthers;  // no signals to send on Windows
#endif
  std::fputs("cudaprobe: waiting\n", stderr);
  std::fflush(stderr);
  if (!untilEof) {
    for (;;) {
#ifdef _WIN32
      Sleep(INFINITE);
#else
      pause();
#endif
    }
  }
  char buf[512];
#ifdef _WIN32
  while (std::fread(buf, 1, sizeof buf, stdin) > 0) {
  }
#else
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    break;  // end of input, or it is gone (EBADF, EIO)
  }
#endif
  return cp::kExitRan;
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
  if (cmd == "wait") return waitCommand(argc, argv);
  if (cmd == "selftest") return cp::runSelftest(argc, argv);
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
