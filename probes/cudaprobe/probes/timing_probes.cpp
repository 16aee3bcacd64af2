// The timing probes (C5-C8, C24): transfer-bandwidth, event-timing, event-host-gap,
// sync-latency, stream-priority and cuda-graph. Each warms up before it measures, repeats, and reports medians (and the
// percentiles where the tail matters); kernel durations come from a spin kernel whose cycle
// count is calibrated against the clock first.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../probe.hpp"
#include "../process.hpp"

namespace cp {

namespace {

// PCIe payload rate in GB/s for a generation and width (encoding overhead included).
double pcieGbps(unsigned gen, unsigned width) {
  static const double gts[] = {0, 2.5, 5, 8, 16, 32, 64};
  if (gen < 1 || gen > 6) return NAN;
  double efficiency = gen <= 2 ? 8.0 / 10.0 : gen <= 5 ? 128.0 / 130.0 : 242.0 / 256.0;
  return gts[gen] * width * efficiency / 8.0;
}

// Device memory held for the busy-card variant: `percent` of the free VRAM, capped so that at
// least `reserveBytes` stay free; written once, so that it is resident. Freed when it goes.
struct VramFill {
  CUdeviceptr ptr = 0;
  double bytes = 0;
  double usedFraction = 0;  // 1 - free / total once filled
  std::string why;          // why nothing was filled
  VramFill(double percent, double reserveBytes) {
    if (percent <= 0) return;
    Cuda& c = cuda();
    size_t freeB = 0, totalB = 0;
    CU(c.cuMemGetInfo_v2(&freeB, &totalB));
    double want = std::min(static_cast<double>(freeB) * percent / 100.0, static_cast<double>(freeB) - reserveBytes);
    want = std::floor(want / kMiB) * kMiB;
    if (want < kMiB) {
      why = "free VRAM " + std::to_string(static_cast<long long>(freeB / kMiB)) + " MiB leaves nothing above the reserve of " +
            std::to_string(static_cast<long long>(reserveBytes / kMiB)) + " MiB (fill_reserve_gib)";
      return;
    }
    CUresult ar = c.cuMemAlloc_v2(&ptr, static_cast<size_t>(want));
    if (ar != 0) {  // another user of the card took memory meanwhile: this round cannot be had
      ptr = 0;
      why = "cuMemAlloc of " + std::to_string(static_cast<long long>(want / kMiB)) + " MiB failed: " + c.err(ar);
      return;
    }
    bytes = want;
    CUresult rc = c.cuMemsetD32_v2(ptr, 0, static_cast<size_t>(want) / 4);
    if (rc == 0) rc = c.cuCtxSynchronize();
    if (rc == 0) rc = c.cuMemGetInfo_v2(&freeB, &totalB);
    if (rc != 0) {
      c.cuMemFree_v2(ptr);
      cuCheck(rc, "filling VRAM (cuMemsetD32)");
    }
    usedFraction = 1.0 - static_cast<double>(freeB) / static_cast<double>(totalB);
  }
  ~VramFill() {
    if (ptr) cuda().cuMemFree_v2(ptr);
  }
  VramFill(const VramFill&) = delete;
  VramFill& operator=(const VramFill&) = delete;
};

}  // namespace

// ---- transfer-bandwidth (C8, C28) -------------------------------------------------------------

int transferBandwidth(ProbeContext& ctx) {
  std::vector<double> sizesMib = ctx.params.numbers("sizes_mib");
  int reps = static_cast<int>(ctx.params.number("repetitions"));
  int warmup = static_cast<int>(ctx.params.number("warmup"));
  std::vector<double> fills = ctx.params.numbers("fill_percent");
  double reserveBytes = ctx.params.number("fill_reserve_gib") * kGiB;
  if (reps < 20) throw UsageError{"parameter repetitions must be at least 20 (medians of fewer copies are noise)"};
  for (double f : fills) {
    if (f < 0 || f > 90) throw UsageError{"parameter fill_percent takes percentages of free VRAM from 0 to 90"};
  }
  if (!(reserveBytes >= 0)) throw UsageError{"parameter fill_reserve_gib takes a size in GiB, 0 or more"};
  for (double m : sizesMib) {
    if (!(m > 0) || m > 64 * 1024) throw UsageError{"parameter sizes_mib takes sizes from 1 to 65536 MiB"};
  }
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Cuda& c = cuda();
  size_t maxBytes = static_cast<size_t>(*std::max_element(sizesMib.begin(), sizesMib.end()) * kMiB);
  size_t freeB = 0, totalB = 0;
  CU(c.cuMemGetInfo_v2(&freeB, &totalB));
  if (maxBytes > freeB / 2) throw UsageError{"parameter sizes_mib: the largest copy does not fit in half the free device memory"};

  CUdeviceptr dev = 0;
  void* pinned = nullptr;
  CU(c.cuMemAlloc_v2(&dev, maxBytes));
  CUresult rc = c.cuMemHostAlloc(&pinned, maxBytes, 0);
  if (rc != 0) {
    c.cuMemFree_v2(dev);
    cuCheck(rc, "cuMemHostAlloc");
  }
  // Pageable memory, touched first so that page faults are not timed; the second buffer is the
  // host control's destination (host_memcpy_gbps), allocated and touched the same way.
  void* pageable = std::malloc(maxBytes);
  void* pageable2 = std::malloc(maxBytes);
  struct Cleanup {
    CUdeviceptr d;
    void* p;
    void* h;
    void* h2;
    ~Cleanup() {
      cuda().cuMemFree_v2(d);
      cuda().cuMemFreeHost(p);
      std::free(h);
      std::free(h2);
    }
  } cleanup{dev, pinned, pageable, pageable2};
  if (!pageable || !pageable2) throw ProbeFailure{"malloc of the pageable buffers failed"};
  std::memset(pageable, 1, maxBytes);
  std::memset(pageable2, 2, maxBytes);
  std::memset(pinned, 1, maxBytes);

  Stream st;
  Event a, b;
  // A short spin ahead of each timed copy keeps the stream busy while the copy is enqueued, so
  // that the events bracket the copy alone, not the host's launch latency.
  const auto lead = static_cast<unsigned long long>(20 * gpu.spinCyclesPerUs());
  std::map<std::string, double> pinnedBest;
  // Pinned rates of the largest copy per direction, idle card (fill 0) and filled.
  std::map<std::string, double> largestIdle, largestFilled;
  for (double fill : fills) {
    // The busy-card variant (C28): fill_percent of the free VRAM held (and written, so that it is
    // resident under WDDM too), never leaving less than fill_reserve_gib free: the card is shared.
    VramFill held(fill, reserveBytes);
    if (fill > 0 && held.bytes == 0) {
      const std::string what = "fill_percent=" + std::to_string(static_cast<int>(fill));
      emitSkip(ctx.probe, "no room to fill: " + held.why, what.c_str());
      continue;
    }
    if (fill > 0) {
      emitMetric(ctx.probe, "fill_bytes", held.bytes, "bytes", Obj().num("fill_percent", fill));
      emitMetric(ctx.probe, "vram_used_fraction", held.usedFraction, "ratio", Obj().num("fill_percent", fill));
    }
    for (double mib : sizesMib) {
      size_t bytes = static_cast<size_t>(mib * kMiB);
      std::map<std::string, double> gbps;
      // The idle card's series keep the attrs they always had; the filled ones carry fill_percent.
      auto withFill = [&](Obj o) { return fill > 0 ? o.num("fill_percent", fill) : o; };
      if (fill == 0) {
        // The host control (issue 32): the same size memcpy'd between two pageable buffers, timed on
        // the host clock. A slower host (memory bandwidth, a busy neighbour) slows the pageable
        // copies too, so a verdict can tell a host change from a driver's.
        std::vector<double> hostRates;
        volatile unsigned char sink = 0;
        for (int i = 0; i < warmup + reps; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          std::memcpy(pageable2, pageable, bytes);
          auto t1 = std::chrono::steady_clock::now();
          sink = sink + static_cast<unsigned char*>(pageable2)[bytes - 1];  // the copy is used: not elided
          double s = std::chrono::duration<double>(t1 - t0).count();
          if (i >= warmup) hostRates.push_back(s > 0 ? static_cast<double>(bytes) / s / 1e9 : NAN);
        }
        std::vector<double> finite;
        for (double r : hostRates) {
          if (std::isfinite(r)) finite.push_back(r);
        }
        if (finite.empty()) {
          emitMetricNull(ctx.probe, "host_memcpy_gbps", "GB/s", "every copy took less than the host clock's step",
                         Obj().num("size_bytes", static_cast<double>(bytes)));
        } else {
          emitMetric(ctx.probe, "host_memcpy_gbps", median(finite), "GB/s", Obj().num("size_bytes", static_cast<double>(bytes)), repeatsOf(finite));
        }
      }
      for (const char* dir : {"h2d", "d2h"}) {
        for (const char* mem : {"pageable", "pinned"}) {
          void* host = std::strcmp(mem, "pinned") == 0 ? pinned : pageable;
          std::vector<double> ms;
          for (int i = 0; i < warmup + reps; ++i) {
            gpu.launchSpin(st.s, lead);
            a.record(st.s);
            if (std::strcmp(dir, "h2d") == 0) CU(c.cuMemcpyHtoDAsync_v2(dev, host, bytes, st.s));
            else CU(c.cuMemcpyDtoHAsync_v2(host, dev, bytes, st.s));
            b.record(st.s);
            double t = elapsedMs(a, b);
            if (i >= warmup) ms.push_back(t);
          }
          double rate = static_cast<double>(bytes) / (median(ms) / 1000.0) / 1e9;
          gbps[std::string(dir) + mem] = rate;
          // The repeats: each timed copy's own rate (the value stays the rate of the median time).
          std::vector<double> rates;
          for (double t : ms) rates.push_back(static_cast<double>(bytes) / (t / 1000.0) / 1e9);
          emitMetric(ctx.probe, "bandwidth_gbps", rate, "GB/s",
                     withFill(Obj().str("direction", dir).str("memory", mem).num("size_bytes", static_cast<double>(bytes))), repeatsOf(rates));
          if (std::strcmp(mem, "pinned") == 0 && fill == 0) pinnedBest[dir] = std::max(pinnedBest[dir], rate);
          if (std::strcmp(mem, "pinned") == 0 && bytes == maxBytes) (fill == 0 ? largestIdle : largestFilled)[dir] = rate;
        }
        emitMetric(ctx.probe, "pageable_pinned_ratio", gbps[std::string(dir) + "pageable"] / gbps[std::string(dir) + "pinned"], "ratio",
                   withFill(Obj().str("direction", dir).num("size_bytes", static_cast<double>(bytes))));
      }
    }
    if (fill > 0) {
      for (const auto& kv : largestFilled) {
        if (largestIdle.count(kv.first)) {
          emitMetric(ctx.probe, "filled_idle_ratio", kv.second / largestIdle[kv.first], "ratio",
                     Obj().str("direction", kv.first).num("fill_percent", fill).num("size_bytes", static_cast<double>(maxBytes)));
        }
      }
    }
  }
  // The link's theoretical rate (from its maximum generation and width: an idle link trains down).
  std::string why;
  nvmlDevice_t h = nvmlDeviceFor(gpu.dev, why);
  unsigned gen = 0, width = 0;
  if (h && nvml().nvmlDeviceGetMaxPcieLinkGeneration(h, &gen) == 0 && nvml().nvmlDeviceGetMaxPcieLinkWidth(h, &width) == 0) {
    double link = pcieGbps(gen, width);
    emitMetric(ctx.probe, "pcie_theoretical_gbps", link, "GB/s", Obj().num("gen", gen).num("width", width));
    for (const auto& kv : pinnedBest) {
      emitMetric(ctx.probe, "pinned_fraction_of_link", kv.second / link, "ratio", Obj().str("direction", kv.first));
    }
  } else {
    emitMetricNull(ctx.probe, "pcie_theoretical_gbps", "GB/s", h ? "NVML could not read the link" : why);
  }
  return kExitRan;
}

// ---- event-timing (C7) --------------------------------------------------------------------

int eventTiming(ProbeContext& ctx) {
  std::vector<double> targets = ctx.params.numbers("targets_us");
  int reps = static_cast<int>(ctx.params.number("repetitions"));
  if (reps < 5) throw UsageError{"parameter repetitions must be at least 5"};
  for (double t : targets) {
    if (!(t > 0) || t > 1e6) throw UsageError{"parameter targets_us takes durations from 0 to 1000000 us"};
  }
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Cuda& c = cuda();
  double cyclesPerUs = gpu.spinCyclesPerUs();
  emitMetric(ctx.probe, "spin_cycles_per_us", cyclesPerUs, "cycles");

  // The host clock's own step, for comparison.
  std::vector<double> hostSteps;
  for (int i = 0; i < 1000; ++i) {
    double t0 = nowSeconds(), t1 = t0;
    while (t1 == t0) t1 = nowSeconds();
    hostSteps.push_back((t1 - t0) * 1e6);
  }
  emitMetric(ctx.probe, "host_clock_resolution_us", *std::min_element(hostSteps.begin(), hostSteps.end()), "us");

  Stream st;
  Event a, b;
  std::set<double> distinct;
  for (int i = 0; i < 3; ++i) {  // warm-up
    gpu.launchSpin(st.s, static_cast<unsigned long long>(cyclesPerUs));
  }
  CU(c.cuStreamSynchronize(st.s));
  for (double target : targets) {
    auto cycles = static_cast<unsigned long long>(target * cyclesPerUs);
    std::vector<double> eventUs, hostUs;
    const auto lead = static_cast<unsigned long long>(20 * cyclesPerUs);
    for (int i = 0; i < reps; ++i) {
      // The host's view: launch to completion on the host clock.
      double h0 = nowSeconds();
      gpu.launchSpin(st.s, cycles);
      CU(c.cuStreamSynchronize(st.s));
      hostUs.push_back((nowSeconds() - h0) * 1e6);
      // The events' view. As in transfer-bandwidth, a lead spin keeps the stream busy while the
      // kernel is enqueued, so that the events time the kernel rather than its launch.
      gpu.launchSpin(st.s, lead);
      a.record(st.s);
      gpu.launchSpin(st.s, cycles);
      b.record(st.s);
      double ms = elapsedMs(a, b);
      eventUs.push_back(ms * 1000.0);
      distinct.insert(ms * 1000.0);
    }
    Obj attrs = Obj().num("target_us", target);
    emitMetric(ctx.probe, "elapsed_us", median(eventUs), "us", attrs, repeatsOf(eventUs));
    emitMetric(ctx.probe, "host_elapsed_us", median(hostUs), "us", attrs, repeatsOf(hostUs));
  }
  // The smallest step between distinct elapsed times: the events' effective resolution.
  double step = INFINITY;
  double prev = NAN;
  for (double v : distinct) {
    if (!std::isnan(prev) && v - prev > 1e-6) step = std::min(step, v - prev);
    prev = v;
  }
  emitMetric(ctx.probe, "distinct_values", static_cast<double>(distinct.size()), "count");
  if (std::isinf(step)) {
    emitMetricNull(ctx.probe, "resolution_us", "us", "every measurement gave the same value");
    emitFact(ctx.probe, "resolution_class", "null", Obj(), "every measurement gave the same value");
  } else {
    emitMetric(ctx.probe, "resolution_us", step, "us");
    const char* cls = step < 1.0 ? "sub-microsecond" : step < 1000.0 ? "microsecond" : "millisecond";
    emitFact(ctx.probe, "resolution_class", jsonString(cls), Obj().num("resolution_us", step).num("distinct_values", static_cast<double>(distinct.size())));
  }
  return kExitRan;
}

// ---- event-host-gap (C24) -----------------------------------------------------------------

// Under WDDM an event record waits in the command buffer until something submits it, so a pair of
// events around host time without GPU work may not bracket that time (FLAMEGPU/FLAMEGPU2#451).
// Each round: record, (cuStreamQuery to submit it,) sleep on the host, record, synchronize.
int eventHostGap(ProbeContext& ctx) {
  double sleepMs = ctx.params.number("sleep_ms");
  int reps = static_cast<int>(ctx.params.number("repetitions"));
  if (!(sleepMs >= 1 && sleepMs <= 1000)) throw UsageError{"parameter sleep_ms takes 1 to 1000 ms"};
  if (reps < 3) throw UsageError{"parameter repetitions must be at least 3"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Cuda& c = cuda();
  Stream st;
  Event a, b;
  gpu.launchNoop(st.s);  // the stream and events used once before they are timed
  a.record(st.s);
  b.record(st.s);
  elapsedMs(a, b);
  std::map<std::string, double> ratios;
  std::vector<const char*> flushes = {"none"};
  if (c.cuStreamQuery) flushes.push_back("query");
  for (const char* flush : flushes) {
    std::vector<double> eventMs, hostMs;
    for (int i = 0; i < reps; ++i) {
      a.record(st.s);
      if (std::strcmp(flush, "query") == 0) c.cuStreamQuery(st.s);  // CUDA_SUCCESS or NOT_READY: either submits
      double h0 = nowSeconds();
      sleepSeconds(sleepMs / 1000.0);
      double h1 = nowSeconds();
      b.record(st.s);
      eventMs.push_back(elapsedMs(a, b));
      hostMs.push_back((h1 - h0) * 1000.0);
    }
    Obj attrs = Obj().str("flush", flush).num("sleep_ms", sleepMs);
    double e = median(eventMs), h = median(hostMs);
    // Repeats for the two medians; the ratio is one of medians and the minimum an extreme, so
    // per-round values would describe other statistics: they have none.
    emitMetric(ctx.probe, "elapsed_ms", e, "ms", attrs, repeatsOf(eventMs));
    emitMetric(ctx.probe, "host_gap_ms", h, "ms", attrs, repeatsOf(hostMs));
    emitMetric(ctx.probe, "elapsed_min_ms", *std::min_element(eventMs.begin(), eventMs.end()), "ms", attrs);
    emitMetric(ctx.probe, "elapsed_host_ratio", e / h, "ratio", attrs);
    ratios[flush] = e / h;
  }
  // Bracketed: the events' median is at least 90 % of the host's gap (a timer cannot see less
  // time than passed; the margin is for the host clock read on either side of the sleep).
  for (const char* flush : {"none", "query"}) {
    const char* fact = std::strcmp(flush, "none") == 0 ? "brackets_host_gap" : "brackets_host_gap_flushed";
    if (!ratios.count(flush)) {
      emitFact(ctx.probe, fact, "null", Obj(), "the driver lacks cuStreamQuery");
      continue;
    }
    emitFact(ctx.probe, fact, ratios[flush] >= 0.9 ? "true" : "false",
             Obj().num("elapsed_host_ratio", ratios[flush]).num("sleep_ms", sleepMs).integer("repetitions", reps));
  }
  return kExitRan;
}

// ---- sync-latency (C5) --------------------------------------------------------------------

int syncLatency(ProbeContext& ctx) {
  int iterations = static_cast<int>(ctx.params.number("iterations"));
  if (iterations < 100) throw UsageError{"parameter iterations must be at least 100"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Cuda& c = cuda();
  Stream st;
  for (int i = 0; i < 200; ++i) {
    gpu.launchNoop(st.s);
    CU(c.cuStreamSynchronize(st.s));
  }
  std::vector<double> us;
  us.reserve(static_cast<size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    double t0 = nowSeconds();
    gpu.launchNoop(st.s);
    CU(c.cuStreamSynchronize(st.s));
    us.push_back((nowSeconds() - t0) * 1e6);
  }
  Obj attrs = Obj().num("iterations", iterations);
  // The repeats: the iterations in 10 consecutive batches, and each batch's own p50 / p99 / mean
  // (10000 raw values would make a line of 100 KB). mean_us's batch means average to its value, so
  // their spread is its noise. min_us has none: a batch's minimum is the minimum of a tenth of the
  // iterations, a statistic biased above the value, not a repetition of it.
  std::vector<double> batchMeans;
  for (size_t i = 0; i < 10; ++i) {
    size_t n = us.size();
    batchMeans.push_back(mean(std::vector<double>(us.begin() + static_cast<std::ptrdiff_t>(i * n / 10),
                                                  us.begin() + static_cast<std::ptrdiff_t>((i + 1) * n / 10))));
  }
  emitMetric(ctx.probe, "p50_us", percentile(us, 50), "us", attrs, batchPercentiles(us, 10, 50));
  emitMetric(ctx.probe, "p99_us", percentile(us, 99), "us", attrs, batchPercentiles(us, 10, 99));
  emitMetric(ctx.probe, "mean_us", mean(us), "us", attrs, batchMeans);
  emitMetric(ctx.probe, "min_us", *std::min_element(us.begin(), us.end()), "us", attrs);
  return kExitRan;
}

namespace {

// ---- stream-priority (C6) -----------------------------------------------------------------

struct PriorityRun {
  double highDoneMs, longDoneMs;
};

// A long kernel of many short blocks fills the GPU for several waves; 1 ms later a one-block
// kernel goes on the other stream. Times are from the long kernel's start.
PriorityRun priorityRun(Gpu& gpu, int lowPriority, int highPriority, bool usePriority, double cyclesPerUs, double blockUs, int waves, double delayMs) {
  Cuda& c = cuda();
  Stream low(lowPriority, usePriority), high(highPriority, usePriority);
  Event start, longEnd, highEnd;
  unsigned blocks = static_cast<unsigned>(gpu.sms * 8 * waves);  // 8 resident 256-thread blocks per SM
  start.record(low.s);
  gpu.launchSpin(low.s, static_cast<unsigned long long>(blockUs * cyclesPerUs), blocks, 256);
  longEnd.record(low.s);
  sleepSeconds(delayMs / 1000.0);
  gpu.launchSpin(high.s, static_cast<unsigned long long>(10 * cyclesPerUs), 1, 32);
  highEnd.record(high.s);
  CU(c.cuEventSynchronize(longEnd.e));
  CU(c.cuEventSynchronize(highEnd.e));
  return {elapsedMs(start, highEnd), elapsedMs(start, longEnd)};
}

}  // namespace

int streamPriority(ProbeContext& ctx) {
  int reps = static_cast<int>(ctx.params.number("repetitions"));
  double blockUs = ctx.params.number("block_us");
  int waves = static_cast<int>(ctx.params.number("waves"));
  double delayMs = ctx.params.number("delay_ms");
  if (reps < 1 || waves < 2 || !(blockUs > 0) || delayMs < 0) throw UsageError{"stream-priority needs repetitions >= 1, waves >= 2, block_us > 0, delay_ms >= 0"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Cuda& c = cuda();
  int least = 0, greatest = 0;
  CU(c.cuCtxGetStreamPriorityRange(&least, &greatest));
  emitMetric(ctx.probe, "priority_least", least, "count");
  emitMetric(ctx.probe, "priority_greatest", greatest, "count");
  if (least == greatest) {
    emitFact(ctx.probe, "honoured", "null", Obj(), "the device has a single stream priority");
    return kExitRan;
  }
  double cyclesPerUs = gpu.spinCyclesPerUs();
  std::vector<double> prioRatio, equalRatio, prioHigh, prioLong, eqHigh, eqLong;
  for (int i = 0; i < reps; ++i) {
    PriorityRun p = priorityRun(gpu, least, greatest, true, cyclesPerUs, blockUs, waves, delayMs);
    PriorityRun e = priorityRun(gpu, 0, 0, false, cyclesPerUs, blockUs, waves, delayMs);
    prioHigh.push_back(p.highDoneMs);
    prioLong.push_back(p.longDoneMs);
    eqHigh.push_back(e.highDoneMs);
    eqLong.push_back(e.longDoneMs);
    prioRatio.push_back(p.highDoneMs / p.longDoneMs);
    equalRatio.push_back(e.highDoneMs / e.longDoneMs);
  }
  emitMetric(ctx.probe, "high_done_ms", median(prioHigh), "ms", Obj().str("mode", "priority"), repeatsOf(prioHigh));
  emitMetric(ctx.probe, "long_done_ms", median(prioLong), "ms", Obj().str("mode", "priority"), repeatsOf(prioLong));
  emitMetric(ctx.probe, "high_done_ms", median(eqHigh), "ms", Obj().str("mode", "equal"), repeatsOf(eqHigh));
  emitMetric(ctx.probe, "long_done_ms", median(eqLong), "ms", Obj().str("mode", "equal"), repeatsOf(eqLong));
  double pr = median(prioRatio), er = median(equalRatio);
  emitMetric(ctx.probe, "high_done_ratio", pr, "ratio", Obj().str("mode", "priority"), repeatsOf(prioRatio));
  emitMetric(ctx.probe, "high_done_ratio", er, "ratio", Obj().str("mode", "equal"), repeatsOf(equalRatio));
  Obj ev = Obj().num("ratio_priority", pr).num("ratio_equal", er).integer("least", least).integer("greatest", greatest);
  if (pr <= 0.5 && er - pr >= 0.25) emitFact(ctx.probe, "honoured", "true", ev);
  else if (er <= 0.5) emitFact(ctx.probe, "honoured", "null", ev, "the short kernel finished early at equal priority too: this test cannot tell");
  else emitFact(ctx.probe, "honoured", "false", ev);
  return kExitRan;
}

// ---- cuda-graph (C5) ----------------------------------------------------------------------

int cudaGraph(ProbeContext& ctx) {
  int kernels = static_cast<int>(ctx.params.number("kernels"));
  int reps = static_cast<int>(ctx.params.number("repetitions"));
  if (kernels < 1 || reps < 3) throw UsageError{"cuda-graph needs kernels >= 1 and repetitions >= 3"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Cuda& c = cuda();
  if (!c.cuStreamBeginCapture_v2 || !c.cuStreamEndCapture || !c.cuGraphInstantiateWithFlags || !c.cuGraphLaunch) {
    emitFact(ctx.probe, "supported", "false", Obj(), "the driver lacks the stream-capture or graph entry points");
    return kExitRan;
  }
  Stream st;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CUresult rc = c.cuStreamBeginCapture_v2(st.s, 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */);
  if (rc == 0) {
    for (int i = 0; i < kernels; ++i) gpu.launchNoop(st.s);
    rc = c.cuStreamEndCapture(st.s, &graph);
  }
  if (rc == 0) rc = c.cuGraphInstantiateWithFlags(&exec, graph, 0);
  if (rc != 0) {
    if (graph) c.cuGraphDestroy(graph);
    emitFact(ctx.probe, "supported", "false", Obj(), "capturing or instantiating the graph failed: " + c.err(rc));
    return kExitRan;
  }
  struct Cleanup {
    CUgraph g;
    CUgraphExec e;
    ~Cleanup() {
      cuda().cuGraphExecDestroy(e);
      cuda().cuGraphDestroy(g);
    }
  } cleanup{graph, exec};
  std::vector<double> graphUs, plainUs;
  for (int i = 0; i < reps + 2; ++i) {  // the first two are warm-up
    double t0 = nowSeconds();
    CU(c.cuGraphLaunch(exec, st.s));
    CU(c.cuStreamSynchronize(st.s));
    double t1 = nowSeconds();
    for (int k = 0; k < kernels; ++k) gpu.launchNoop(st.s);
    CU(c.cuStreamSynchronize(st.s));
    double t2 = nowSeconds();
    if (i >= 2) {
      graphUs.push_back((t1 - t0) * 1e6);
      plainUs.push_back((t2 - t1) * 1e6);
    }
  }
  double g = median(graphUs), p = median(plainUs);
  Obj attrs = Obj().num("kernels", kernels);
  // Repeats per launch (per kernel: the same divided by kernels); the speed-up is a ratio of
  // medians and has none.
  emitMetric(ctx.probe, "graph_us", g, "us", attrs, repeatsOf(graphUs));
  emitMetric(ctx.probe, "plain_us", p, "us", attrs, repeatsOf(plainUs));
  emitMetric(ctx.probe, "graph_per_kernel_us", g / kernels, "us", attrs, repeatsOf(scaled(graphUs, 1.0 / kernels)));
  emitMetric(ctx.probe, "plain_per_kernel_us", p / kernels, "us", attrs, repeatsOf(scaled(plainUs, 1.0 / kernels)));
  emitMetric(ctx.probe, "graph_speedup", p / g, "ratio", attrs);
  emitFact(ctx.probe, "supported", "true", Obj().num("graph_us", g).num("plain_us", p).num("kernels", kernels));
  return kExitRan;
}

}  // namespace cp
