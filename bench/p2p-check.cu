// The p2p probe's independent check, for the multi-GPU machine: the same pairs through the CUDA
// runtime API (cudaprobe uses the driver API), bandwidth with and without peer access both
// ways, and a checksum of every copy. One JSON line per pair and direction and mode on stdout.
// Built by scripts/gpu-prepare.ts (nvcc, static cudart); run by scripts/gpu-suite.ts --p2p.
//
//   p2p-check [SIZE_MIB=256] [REPETITIONS=10]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

static bool ok(cudaError_t rc, const char* what, int src, int dst) {
  if (rc == cudaSuccess) return true;
  std::printf("{\"src\":%d,\"dst\":%d,\"error\":\"%s: %s\"}\n", src, dst, what, cudaGetErrorName(rc));
  cudaGetLastError();
  return false;
}

// FNV-1a over the bytes: the checksum of what was sent and of what arrived.
static uint64_t fnv(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

struct Result {
  double gbps = -1;
  uint64_t sent = 0, got = 0;
};

static Result measure(int src, int dst, void* a, void* b, unsigned char* host, size_t bytes, int reps, uint64_t seed) {
  Result r;
  // The pattern: xorshift64 words, different for every direction and mode.
  uint64_t x = seed;
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *reinterpret_cast<uint64_t*>(host + i) = x;
  }
  r.sent = fnv(host, bytes);
  cudaSetDevice(src);
  if (!ok(cudaMemcpy(a, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D", src, dst)) return r;
  cudaSetDevice(dst);
  if (!ok(cudaMemset(b, 0, bytes), "cudaMemset", src, dst) || !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize", src, dst)) return r;
  cudaSetDevice(src);
  cudaStream_t s;
  cudaEvent_t e0, e1;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int i = 0; i <= reps; ++i) {  // the first is warm-up
    cudaEventRecord(e0, s);
    if (!ok(cudaMemcpyPeerAsync(b, dst, a, src, bytes, s), "cudaMemcpyPeerAsync", src, dst)) break;
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (i > 0) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(s);
  if (static_cast<int>(ms.size()) != reps) return r;
  std::sort(ms.begin(), ms.end());
  r.gbps = static_cast<double>(bytes) / (ms[ms.size() / 2] / 1000.0) / 1e9;
  std::fill(host, host + bytes, 0);
  cudaSetDevice(dst);
  if (ok(cudaMemcpy(host, b, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H", src, dst)) r.got = fnv(host, bytes);
  return r;
}

int main(int argc, char** argv) {
  size_t bytes = static_cast<size_t>(argc > 1 ? std::atof(argv[1]) : 256) * 1024 * 1024;
  int reps = argc > 2 ? std::atoi(argv[2]) : 10;
  int count = 0;
  if (!ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount", -1, -1)) return 1;
  std::printf("{\"device_count\":%d}\n", count);
  unsigned char* host = nullptr;
  if (count >= 2 && !ok(cudaMallocHost(&host, bytes), "cudaMallocHost", -1, -1)) return 1;
  for (int i = 0; i < count; ++i) {
    for (int j = i + 1; j < count; ++j) {
      int ij = 0, ji = 0;
      cudaDeviceCanAccessPeer(&ij, i, j);
      cudaDeviceCanAccessPeer(&ji, j, i);
      void *a = nullptr, *b = nullptr;
      cudaSetDevice(i);
      if (!ok(cudaMalloc(&a, bytes), "cudaMalloc", i, j)) continue;
      cudaSetDevice(j);
      if (!ok(cudaMalloc(&b, bytes), "cudaMalloc", i, j)) {
        cudaSetDevice(i);
        cudaFree(a);
        continue;
      }
      for (int peer = 0; peer < 2; ++peer) {
        if (peer) {
          if (!ij || !ji) break;
          cudaSetDevice(i);
          if (!ok(cudaDeviceEnablePeerAccess(j, 0), "cudaDeviceEnablePeerAccess", i, j)) break;
          cudaSetDevice(j);
          if (!ok(cudaDeviceEnablePeerAccess(i, 0), "cudaDeviceEnablePeerAccess", j, i)) break;
        }
        for (int dir = 0; dir < 2; ++dir) {
          int src = dir ? j : i, dst = dir ? i : j;
          Result r = measure(src, dst, dir ? b : a, dir ? a : b, host, bytes, reps, 0x9E3779B97F4A7C15ULL + peer * 2 + dir);
          std::printf("{\"src\":%d,\"dst\":%d,\"peer\":%s,\"can_access_peer\":%s,\"size_bytes\":%zu,\"gbps\":%.3f,\"checksum_sent\":\"%016llx\",\"checksum_received\":\"%016llx\",\"intact\":%s}\n",
                      src, dst, peer ? "true" : "false", ij && ji ? "true" : "false", bytes, r.gbps, static_cast<unsigned long long>(r.sent),
                      static_cast<unsigned long long>(r.got), r.sent == r.got ? "true" : "false");
          std::fflush(stdout);
        }
      }
      cudaSetDevice(i);
      cudaDeviceDisablePeerAccess(j);
      cudaFree(a);
      cudaSetDevice(j);
      cudaDeviceDisablePeerAccess(i);
      cudaFree(b);
    }
  }
  if (host) cudaFreeHost(host);
  return 0;
}
