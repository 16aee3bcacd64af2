#include "neighbours.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "emit.hpp"
#include "platform.hpp"
#include "process.hpp"

namespace cp {

namespace {

struct State {
  bool started = false;  // the start line was emitted
  CUdevice dev = 0;
  nvmlDevice_t nvmlDev = nullptr;
  std::string why;       // why there is no NVML device
  bool ownChecked = false;
  bool ownListed = false;
};

State& state() {
  static State s;
  return s;
}

constexpr size_t kMaxPids = 16;

void emitNeighbours(const ProbeContext& ctx, const char* phase) {
  State& s = state();
  Line l("neighbours", ctx.probe);
  l.str("phase", phase);
  auto unknown = [&](const std::string& reason) { l.null("processes").null("used_bytes").raw("pids", "[]").str("reason", reason).emit(); };
  if (!s.nvmlDev) return unknown(s.why);
  std::vector<nvmlProcessInfo_t> infos;
  std::string why;
  if (!nvmlComputeProcesses(s.nvmlDev, infos, why)) return unknown(why);
  const bool end = std::string(phase) == "end";
  // At the end, a context this process held and NVML did not list means NVML's pids are of
  // another PID namespace: neither this process nor its subjects can be told from others.
  if (end && s.ownChecked && !s.ownListed) {
    return unknown("this process is not in NVML's list (another PID namespace): the end check cannot tell others from itself");
  }
  const uint64_t self = processId();
  const std::vector<uint64_t>& children = startedChildPids();
  std::vector<uint64_t> others;
  double used = 0;
  bool usedKnown = true;
  for (const nvmlProcessInfo_t& p : infos) {
    uint64_t pid = p.pid;
    if (pid == self || std::find(children.begin(), children.end(), pid) != children.end()) continue;
    others.push_back(pid);
    if (p.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE) usedKnown = false;
    else used += static_cast<double>(p.usedGpuMemory);
  }
  std::string pids = "[";
  for (size_t i = 0; i < others.size() && i < kMaxPids; ++i) pids += (i ? "," : "") + std::to_string(others[i]);
  pids += "]";
  l.integer("processes", static_cast<int64_t>(others.size()));
  if (usedKnown) l.num("used_bytes", used);
  else l.null("used_bytes");
  l.raw("pids", pids);
  if (!usedKnown) l.str("reason", "NVML reports per-process memory as NOT_AVAILABLE (always so under WDDM, where Windows manages the memory)");
  l.emit();
}

}  // namespace

void neighboursStart(const ProbeContext& ctx) {
  State& s = state();
  if (s.started) return;
  Cuda& c = cuda();
  int count = 0;
  if (!c.ok() || c.cuInit(0) != 0 || c.cuDeviceGetCount(&count) != 0 || ctx.device < 0 || ctx.device >= count) return;
  if (c.cuDeviceGet(&s.dev, ctx.device) != 0) return;
  s.started = true;
  s.nvmlDev = nvmlDeviceFor(s.dev, s.why);
  emitNeighbours(ctx, "start");
}

void neighboursOwnContext(CUdevice dev) {
  State& s = state();
  if (!s.started || s.ownChecked || dev != s.dev || !s.nvmlDev) return;
  std::vector<nvmlProcessInfo_t> infos;
  std::string why;
  if (!nvmlComputeProcesses(s.nvmlDev, infos, why)) return;  // the end check fails the same way and says why
  s.ownChecked = true;
  const uint64_t self = processId();
  s.ownListed = std::any_of(infos.begin(), infos.end(), [&](const nvmlProcessInfo_t& p) { return p.pid == self; });
}

void neighboursEnd(const ProbeContext& ctx) {
  if (state().started) emitNeighbours(ctx, "end");
}

}  // namespace cp
