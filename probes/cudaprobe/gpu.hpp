// A CUDA context on one device, the embedded kernels loaded into it, and small helpers for
// timing. Every CUDA call is checked: a failure throws ProbeFailure with the call and the
// error name, which main() turns into an `error` record and exit 1.
#pragma once
#include <string>
#include <vector>

#include "cuda.hpp"

namespace cp {

struct ProbeFailure {
  std::string message;
};

void cuCheck(CUresult rc, const char* what);
#define CU(call) ::cp::cuCheck((call), #call)

class Gpu {
 public:
  explicit Gpu(int device);  // retains the primary context, loads the kernels
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule mod = nullptr;
  CUfunction noop = nullptr, spin = nullptr, fill = nullptr;
  int sms = 0;

  void launchNoop(CUstream s);
  void launchSpin(CUstream s, unsigned long long cycles, unsigned grid = 1, unsigned block = 1);
  void launchFill(CUstream s, CUdeviceptr ptr, unsigned long long count, unsigned value);
  // SM clock cycles per microsecond, measured with a long spin timed by events.
  double spinCyclesPerUs();

 private:
  double cyclesPerUs_ = 0;
};

class Stream {
 public:
  explicit Stream(int priority = 0, bool usePriority = false);
  ~Stream();
  CUstream s = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  CUevent e = nullptr;
  void record(CUstream s);
};

// Milliseconds between two recorded events (after synchronising on the second).
double elapsedMs(const Event& a, const Event& b);

// Statistics over samples.
double median(std::vector<double> v);
double percentile(std::vector<double> v, double p);  // p in [0, 100]
double mean(const std::vector<double>& v);
// `p`th percentile of each of `batches` consecutive, near-equal batches of `v` (sizes differ by
// at most one), in order; fewer batches when `v` has fewer values.
std::vector<double> batchPercentiles(const std::vector<double>& v, int batches, double p);
// What a metric's "repeats" carry for the samples behind a median: the samples themselves, or,
// past 200 of them (to keep the line short), the medians of 20 consecutive equal batches.
std::vector<double> repeatsOf(const std::vector<double>& v);
// Each value times `factor` (samples converted to the metric's unit).
std::vector<double> scaled(std::vector<double> v, double factor);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace cp
