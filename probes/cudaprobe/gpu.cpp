#include "gpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

#include "kernels.hpp"
#include "neighbours.hpp"

namespace cp {

void cuCheck(CUresult rc, const char* what) {
  if (rc != 0) throw ProbeFailure{std::string(what) + " failed: " + cuda().err(rc)};
}

Gpu::Gpu(int device) {
  Cuda& c = cuda();
  CU(c.cuDeviceGet(&dev, device));
  CU(c.cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(c.cuCtxSetCurrent(ctx));
  // The context's own process should now be in NVML's list (the end check relies on it). The
  // end check comes after this context was released, when the process is rightly not listed.
  neighboursOwnContext(dev);
  CU(c.cuModuleLoadData(&mod, kKernelsPtx));
  CU(c.cuModuleGetFunction(&noop, mod, "noop"));
  CU(c.cuModuleGetFunction(&spin, mod, "spin"));
  CU(c.cuModuleGetFunction(&fill, mod, "fill"));
  CU(c.cuDeviceGetAttribute(&sms, CU_ATTR_MULTIPROCESSOR_COUNT, dev));
}

Gpu::~Gpu() {
  Cuda& c = cuda();
  if (mod) c.cuModuleUnload(mod);
  if (ctx) c.cuDevicePrimaryCtxRelease_v2(dev);
}

void Gpu::launchNoop(CUstream s) {
  CU(cuda().cuLaunchKernel(noop, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr));
}

void Gpu::launchSpin(CUstream s, unsigned long long cycles, unsigned grid, unsigned block) {
  void* args[] = {&cycles};
  CU(cuda().cuLaunchKernel(spin, grid, 1, 1, block, 1, 1, 0, s, args, nullptr));
}

void Gpu::launchFill(CUstream s, CUdeviceptr ptr, unsigned long long count, unsigned value) {
  void* args[] = {&ptr, &count, &value};
  unsigned grid = static_cast<unsigned>(std::max(1, sms * 4));
  CU(cuda().cuLaunchKernel(fill, grid, 1, 1, 256, 1, 1, 0, s, args, nullptr));
}

double Gpu::spinCyclesPerUs() {
  if (cyclesPerUs_ > 0) return cyclesPerUs_;
  Stream st;
  Event a, b;
  // Warm the clock up first: an idle GPU runs at a low clock and boosts under load.
  launchSpin(st.s, 20000000ULL);
  CU(cuda().cuStreamSynchronize(st.s));
  std::vector<double> rates;
  const unsigned long long cycles = 20000000ULL;
  for (int i = 0; i < 5; ++i) {
    a.record(st.s);
    launchSpin(st.s, cycles);
    b.record(st.s);
    rates.push_back(static_cast<double>(cycles) / (elapsedMs(a, b) * 1000.0));
  }
  cyclesPerUs_ = median(rates);
  return cyclesPerUs_;
}

Stream::Stream(int priority, bool usePriority) {
  if (usePriority) CU(cuda().cuStreamCreateWithPriority(&s, 1 /* non-blocking */, priority));
  else CU(cuda().cuStreamCreate(&s, 1 /* non-blocking */));
}
Stream::~Stream() {
  if (s) cuda().cuStreamDestroy_v2(s);
}

Event::Event() { CU(cuda().cuEventCreate(&e, 0)); }
Event::~Event() {
  if (e) cuda().cuEventDestroy_v2(e);
}
void Event::record(CUstream s) { CU(cuda().cuEventRecord(e, s)); }

double elapsedMs(const Event& a, const Event& b) {
  CU(cuda().cuEventSynchronize(b.e));
  float ms = 0;
  CU(cuda().cuEventElapsedTime(&ms, a.e, b.e));
  return ms;
}

double median(std::vector<double> v) { return percentile(std::move(v), 50); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::vector<double> batchPercentiles(const std::vector<double>& v, int batches, double p) {
  std::vector<double> out;
  size_t n = v.size(), k = std::min(n, static_cast<size_t>(std::max(batches, 1)));
  for (size_t i = 0; i < k; ++i) {
    auto from = v.begin() + static_cast<std::ptrdiff_t>(i * n / k), to = v.begin() + static_cast<std::ptrdiff_t>((i + 1) * n / k);
    out.push_back(percentile(std::vector<double>(from, to), p));
  }
  return out;
}

std::vector<double> repeatsOf(const std::vector<double>& v) { return v.size() > 200 ? batchPercentiles(v, 20, 50) : v; }

std::vector<double> scaled(std::vector<double> v, double factor) {
  for (double& x : v) x *= factor;
  return v;
}

}  // namespace cp
