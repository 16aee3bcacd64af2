// The subject of the memory probes: a process that allocates, touches and frees memory when its
// sampler says so, one command a line on stdin, one flat JSON answer a line on stdout. It exits
// when told to, or when its stdin closes (a killed sampler never leaves it holding memory), and
// frees everything it holds on every path.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cuda.hpp"
#include "emit.hpp"
#include "gpu.hpp"
#include "platform.hpp"
#include "subject.hpp"
#include "winmem.hpp"

namespace cp {

namespace {

struct Allocation {
  std::string api;   // driver | runtime | async (cudaMallocAsync, device memory only)
  std::string kind;  // pinned | registered | device
  void* host = nullptr;
  CUdeviceptr device = 0;
  size_t bytes = 0;
};

class Subject {
 public:
  explicit Subject(int device) : device_(device) {}
  ~Subject() { freeAll(); }

  std::string handle(const std::string& line);
  bool done = false;

 private:
  std::string init();
  std::string meminfo();
  std::string alloc(const std::string& api, const std::string& kind, size_t bytes);
  std::string touch();
  std::string freeAll();
  std::string pinUntilFail(const std::string& api, const std::string& kind, size_t chunk, size_t max);
  std::string fill(const std::string& api, size_t chunk, size_t max);
  std::string largest(const std::string& api, size_t max, size_t granularity);
  double writeGbps(const Allocation& a);
  std::string reset();
  std::string runtimeError();
  bool allocOne(const std::string& api, const std::string& kind, size_t bytes, Allocation& a, std::string& error);
  void freeOne(Allocation& a);

  int device_;
  bool ready_ = false;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  std::vector<Allocation> held_;
};

std::string reply(bool ok, const Obj& extra = Obj()) {
  std::string j = extra.json();
  return std::string("{\"ok\":") + (ok ? "true" : "false") + (extra.empty() ? "" : "," + j.substr(1, j.size() - 2)) + "}";
}

std::string failure(const std::string& error) { return reply(false, Obj().str("error", error)); }

std::string Subject::handle(const std::string& line) {
  std::istringstream in(line);
  std::string cmd;
  in >> cmd;
  if (cmd == "init") return init();
  if (cmd == "meminfo") return meminfo();
  if (cmd == "devices") {  // the devices this process enumerates (p2p: MIG slices)
    int count = -1;
    CUresult rc = cuda().cuDeviceGetCount(&count);
    return rc == 0 ? reply(true, Obj().integer("count", count)) : failure("cuDeviceGetCount: " + cuda().err(rc));
  }
  if (cmd == "alloc") {
    std::string api, kind;
    double bytes = 0;
    in >> api >> kind >> bytes;
    return alloc(api, kind, static_cast<size_t>(bytes));
  }
  if (cmd == "touch") return touch();
  if (cmd == "free") return freeAll();
  if (cmd == "pinmax") {
    std::string api, kind = "pinned";
    double chunk = 0, max = 0;
    in >> api >> chunk >> max >> kind;  // kind: pinned (default) or registered
    return pinUntilFail(api, kind, static_cast<size_t>(chunk), static_cast<size_t>(max));
  }
  if (cmd == "fill") {
    std::string api;
    double chunk = 0, max = 0;
    in >> api >> chunk >> max;
    return fill(api, static_cast<size_t>(chunk), static_cast<size_t>(max));
  }
  if (cmd == "largest") {
    std::string api;
    double max = 0, granularity = 0;
    in >> api >> max >> granularity;
    return largest(api, static_cast<size_t>(max), static_cast<size_t>(granularity));
  }
  if (cmd == "reset") return reset();
  if (cmd == "runtime-error") return runtimeError();
  if (cmd == "exit") {
    freeAll();
    done = true;
    return reply(true);
  }
  return failure("unknown command: " + cmd);
}

std::string Subject::init() {
  Cuda& c = cuda();
  if (!c.ok()) return reply(false, Obj().str("error", c.lib ? "the CUDA driver library lacks " + c.missing : "no NVIDIA driver found: " + c.lib.error).boolean("nodriver", true));
  CUresult rc = c.cuInit(0);
  if (rc != 0) return reply(false, Obj().str("error", "cuInit failed: " + c.err(rc)).boolean("nodriver", true));
  if ((rc = c.cuDeviceGet(&dev_, device_)) != 0) return reply(false, Obj().str("error", "cuDeviceGet: " + c.err(rc)).boolean("nodriver", true));
  double t0 = nowSeconds();
  if ((rc = c.cuDevicePrimaryCtxRetain(&ctx_, dev_)) != 0 || (rc = c.cuCtxSetCurrent(ctx_)) != 0) {
    return failure("creating the context failed: " + c.err(rc));
  }
  ready_ = true;
  return reply(true, Obj().num("ms", (nowSeconds() - t0) * 1000).integer("pid", static_cast<int64_t>(processId())));
}

std::string Subject::meminfo() {
  Obj o;
  if (ready_) {
    size_t free = 0, total = 0;
    CUresult rc = cuda().cuMemGetInfo_v2(&free, &total);
    if (rc == 0) o.num("cu_free", static_cast<double>(free)).num("cu_total", static_cast<double>(total));
    else o.str("cu_reason", "cuMemGetInfo failed: " + cuda().err(rc));
  } else {
    o.str("cu_reason", "no CUDA context in the subject (no usable driver)");
  }
  DxgiReadings d = dxgiReadings(dev_, ready_);
  if (d.local.ok()) o.num("dxgi_local", d.local.value);
  else o.str("dxgi_local_reason", d.local.reason);
  if (d.nonLocal.ok()) o.num("dxgi_nonlocal", d.nonLocal.value);
  else o.str("dxgi_nonlocal_reason", d.nonLocal.reason);
  return reply(true, o);
}

bool Subject::allocOne(const std::string& api, const std::string& kind, size_t bytes, Allocation& a, std::string& error) {
  a.api = api;
  a.kind = kind;
  a.bytes = bytes;
  Cuda& c = cuda();
  if (api == "driver") {
    CUresult rc = 0;
    if (kind == "pinned") {
      rc = c.cuMemHostAlloc(&a.host, bytes, 0);
    } else if (kind == "registered") {
      a.host = std::malloc(bytes);
      if (!a.host) {
        error = "malloc failed";
        return false;
      }
      std::memset(a.host, 0, bytes);  // register touched pages, as applications do
      rc = c.cuMemHostRegister_v2(a.host, bytes, 0);
      if (rc != 0) {
        std::free(a.host);
        a.host = nullptr;
      }
    } else if (kind == "device") {
      rc = c.cuMemAlloc_v2(&a.device, bytes);
    } else {
      error = "unknown kind " + kind;
      return false;
    }
    if (rc != 0) error = "driver API " + kind + " allocation of " + std::to_string(bytes) + " bytes failed: " + c.err(rc);
    return rc == 0;
  }
  if (api == "async") {
    Cudart& r = cudart();
    if (!r.ok() || !r.cudaMallocAsync || !r.cudaFreeAsync || !r.cudaStreamSynchronize) {
      error = r.ok() ? "the CUDA runtime library lacks cudaMallocAsync (CUDA 11.2+)" : "no CUDA runtime library";
      return false;
    }
    if (kind != "device") {
      error = "cudaMallocAsync allocates device memory only, not " + kind;
      return false;
    }
    r.cudaSetDevice(device_);
    void* p = nullptr;
    int rc = r.cudaMallocAsync(&p, bytes, nullptr);
    bool issued = rc == 0;
    if (issued) rc = r.cudaStreamSynchronize(nullptr);  // the pool grows here; a failure shows now
    a.device = reinterpret_cast<CUdeviceptr>(p);
    if (rc != 0) {
      r.cudaGetLastError();
      if (issued && p) {
        r.cudaFreeAsync(p, nullptr);
        r.cudaStreamSynchronize(nullptr);
        r.cudaGetLastError();
      }
      a.device = 0;
      error = "cudaMallocAsync of " + std::to_string(bytes) + " bytes failed: " + r.err(rc);
    }
    return rc == 0;
  }
  if (api == "runtime") {
    Cudart& r = cudart();
    if (!r.ok()) {
      error = "no CUDA runtime library";
      return false;
    }
    r.cudaSetDevice(device_);
    int rc = 0;
    if (kind == "pinned") {
      rc = r.cudaMallocHost(&a.host, bytes);
    } else if (kind == "registered") {
      a.host = std::malloc(bytes);
      if (!a.host) {
        error = "malloc failed";
        return false;
      }
      std::memset(a.host, 0, bytes);
      rc = r.cudaHostRegister(a.host, bytes, 0);
      if (rc != 0) {
        std::free(a.host);
        a.host = nullptr;
      }
    } else if (kind == "device") {
      void* p = nullptr;
      rc = r.cudaMalloc(&p, bytes);
      a.device = reinterpret_cast<CUdeviceptr>(p);
    } else {
      error = "unknown kind " + kind;
      return false;
    }
    if (rc != 0) {
      r.cudaGetLastError();  // clear the sticky-free error state so later calls work
      error = "runtime API " + kind + " allocation of " + std::to_string(bytes) + " bytes failed: " + r.err(rc);
    }
    return rc == 0;
  }
  error = "unknown api " + api;
  return false;
}

void Subject::freeOne(Allocation& a) {
  Cuda& c = cuda();
  Cudart& r = cudart();
  bool rt = a.api == "runtime";
  if (a.kind == "pinned" && a.host) rt ? (void)r.cudaFreeHost(a.host) : (void)c.cuMemFreeHost(a.host);
  if (a.kind == "registered" && a.host) {
    rt ? (void)r.cudaHostUnregister(a.host) : (void)c.cuMemHostUnregister(a.host);
    std::free(a.host);
  }
  if (a.kind == "device" && a.device && a.api == "async") {
    r.cudaFreeAsync(reinterpret_cast<void*>(a.device), nullptr);
    r.cudaStreamSynchronize(nullptr);  // with the pool's default release threshold (0) it shrinks here
  } else if (a.kind == "device" && a.device) {
    rt ? (void)r.cudaFree(reinterpret_cast<void*>(a.device)) : (void)c.cuMemFree_v2(a.device);
  }
  a.host = nullptr;
  a.device = 0;
}

std::string Subject::alloc(const std::string& api, const std::string& kind, size_t bytes) {
  if (!ready_) return failure("no CUDA context in the subject (no usable driver)");
  Allocation a;
  std::string error;
  double t0 = nowSeconds();
  if (!allocOne(api, kind, bytes, a, error)) return failure(error);
  held_.push_back(a);
  return reply(true, Obj().num("ms", (nowSeconds() - t0) * 1000));
}

std::string Subject::touch() {
  if (!ready_) return failure("no CUDA context in the subject (no usable driver)");
  double t0 = nowSeconds();
  for (auto& a : held_) {
    if (a.host) std::memset(a.host, 0x5a, a.bytes);  // every page, from the host
    if (a.device) {
      CUresult rc = cuda().cuMemsetD32_v2(a.device, 0x5a5a5a5a, a.bytes / 4);
      if (rc == 0) rc = cuda().cuCtxSynchronize();
      if (rc != 0) return failure("cuMemsetD32 failed: " + cuda().err(rc));
    }
  }
  return reply(true, Obj().num("ms", (nowSeconds() - t0) * 1000));
}

std::string Subject::freeAll() {
  double t0 = nowSeconds();
  for (auto it = held_.rbegin(); it != held_.rend(); ++it) freeOne(*it);
  held_.clear();
  return reply(true, Obj().num("ms", (nowSeconds() - t0) * 1000));
}

std::string Subject::pinUntilFail(const std::string& api, const std::string& kind, size_t chunk, size_t max) {
  if (!ready_) return failure("no CUDA context in the subject (no usable driver)");
  if (kind != "pinned" && kind != "registered") return failure("pinmax takes pinned or registered, not " + kind);
  size_t pinned = 0;
  std::vector<double> times;
  std::string error;
  bool failed = false;
  while (pinned + chunk <= max) {
    Allocation a;
    double t0 = nowSeconds();
    if (!allocOne(api, kind, chunk, a, error)) {
      failed = true;
      break;
    }
    times.push_back((nowSeconds() - t0) * 1000);
    held_.push_back(a);
    pinned += chunk;
  }
  Obj o;
  o.num("bytes", static_cast<double>(pinned)).integer("chunks", static_cast<int64_t>(times.size())).boolean("failed", failed);
  if (!times.empty()) o.num("ms_median", median(times)).num("ms_total", mean(times) * static_cast<double>(times.size()));
  if (failed) {
    o.str("error", error);
    // Does one failed pin poison the process? A sixteenth of a chunk (at least a page), asked
    // right after the failure, with everything pinned so far still held: the reports say every
    // later cudaMallocHost then fails with cudaErrorAlreadyMapped (C33).
    size_t smaller = std::max<size_t>(chunk / 16, 65536);
    Allocation retry;
    std::string retryError;
    bool retried = allocOne(api, kind, smaller, retry, retryError);
    o.num("after_failure_bytes", static_cast<double>(smaller)).boolean("after_failure_ok", retried);
    if (retried) held_.push_back(retry);
    else o.str("after_failure_error", retryError);
  }
  return reply(true, o);
}

// Write bandwidth of one device allocation: four cuMemsetD32 over all of it and one
// synchronize (so that the call overhead is a small part), the median of three (memory the
// driver placed in system memory is written over the bus, far slower).
double Subject::writeGbps(const Allocation& a) {
  std::vector<double> s;
  for (int i = 0; i < 3; ++i) {
    double t0 = nowSeconds();
    CUresult rc = 0;
    for (int k = 0; k < 4 && rc == 0; ++k) rc = cuda().cuMemsetD32_v2(a.device, 0x5a5a5a5a, a.bytes / 4);
    if (rc == 0) rc = cuda().cuCtxSynchronize();
    if (rc != 0) return -1;
    s.push_back(nowSeconds() - t0);
  }
  return 4.0 * static_cast<double>(a.bytes) / median(s) / 1e9;
}

// Device memory in chunks until an allocation fails or `max` is reached, held until "free"; the
// write bandwidth of the first and the last chunk.
std::string Subject::fill(const std::string& api, size_t chunk, size_t max) {
  if (!ready_) return failure("no CUDA context in the subject (no usable driver)");
  if (chunk == 0) return failure("fill needs a chunk size");
  size_t bytes = 0;
  size_t first = held_.size();
  std::string error;
  bool failed = false;
  double t0 = nowSeconds();
  while (bytes + chunk <= max) {
    Allocation a;
    if (!allocOne(api, "device", chunk, a, error)) {
      failed = true;
      break;
    }
    held_.push_back(a);
    bytes += chunk;
  }
  Obj o;
  o.num("bytes", static_cast<double>(bytes)).integer("chunks", static_cast<int64_t>(held_.size() - first)).boolean("failed", failed);
  o.num("ms", (nowSeconds() - t0) * 1000);
  if (failed) o.str("error", error);
  if (held_.size() > first) {
    double f = writeGbps(held_[first]), l = writeGbps(held_.back());
    if (f > 0) o.num("first_write_gbps", f);
    if (l > 0) o.num("last_write_gbps", l);
  }
  return reply(true, o);
}

// The largest single device allocation up to `max`, by bisection to `granularity`; each trial
// is freed at once.
std::string Subject::largest(const std::string& api, size_t max, size_t granularity) {
  if (!ready_) return failure("no CUDA context in the subject (no usable driver)");
  if (granularity == 0 || max < granularity) return failure("largest needs a granularity no larger than the maximum");
  auto fits = [&](size_t bytes, std::string& error) {
    Allocation a;
    if (!allocOne(api, "device", bytes, a, error)) return false;
    freeOne(a);
    return true;
  };
  std::string error, lastError;
  int trials = 1;
  size_t lo = 0, hi = max;
  if (fits(max, error)) {
    lo = max;
  } else {
    lastError = error;
    while (hi - lo > granularity) {
      size_t mid = (lo + (hi - lo) / 2) / granularity * granularity;
      if (mid <= lo) mid = lo + granularity;
      ++trials;
      if (fits(mid, error)) lo = mid;
      else hi = mid, lastError = error;
    }
  }
  Obj o;
  o.num("bytes", static_cast<double>(lo)).integer("trials", trials).boolean("capped", lo == max);
  if (!lastError.empty()) o.str("error", lastError);
  return reply(true, o);
}

std::string Subject::reset() {
  Cudart& r = cudart();
  if (!r.ok()) return failure("no CUDA runtime library");
  freeAll();
  double t0 = nowSeconds();
  int rc = r.cudaDeviceReset();
  if (rc != 0) return failure("cudaDeviceReset failed: " + r.err(rc));
  // The reset destroyed the primary context's state; make it current again for the driver API.
  cuda().cuCtxSetCurrent(ctx_);
  return reply(true, Obj().num("ms", (nowSeconds() - t0) * 1000));
}

std::string Subject::runtimeError() {
  Cudart& r = cudart();
  if (!r.ok()) return failure("no CUDA runtime library");
  void* p = nullptr;
  int rc = r.cudaMalloc(&p, static_cast<size_t>(1) << 62);  // deliberately impossible
  r.cudaGetLastError();
  return reply(true, Obj().integer("error_code", rc).str("error", r.err(rc)));
}

}  // namespace

int runSubject(int device) {
  Subject s(device);
  std::string line;
  while (!s.done && std::getline(std::cin, line)) {
    std::string out = s.handle(line) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
  return 0;  // ~Subject frees what is still held, also when stdin closed without "exit"
}

}  // namespace cp
