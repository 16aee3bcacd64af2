// The memory-pools probe (issue 36, C29): the stream-ordered allocator's pools tried one by one
// against the attributes that claim them. The device's default pool (MEMORY_POOLS_SUPPORTED), a
// pool of its own, a pool per shareable handle type (MEMPOOL_SUPPORTED_HANDLE_TYPES, a bit each),
// a managed pool (no attribute) and a host pool (CUDA 13's HOST_MEMORY_POOLS_SUPPORTED). A pool
// works when an allocation from it takes a kernel's fill and the bytes come back right (and, for
// a handle type, the pool exports that handle). TCC has no pools (CuPy #5889, cuda-python #206);
// WSL 2 drivers have claimed POSIX fd pools that cuMemPoolCreate then refused (cuda-python #1045).
#include <cstdint>
#include <vector>

#include "../capability.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../probe.hpp"
#include "memory_attempts.hpp"

namespace cp {

namespace {

// Managed memory is never allocated past this, whatever size_mib says: 2 MiB proves the pool.
constexpr size_t kManagedBytes = 2u << 20;
constexpr unsigned kFillValue = 0x600DF00Du;

// A pool this probe created: destroyed at the end of its scope unless destroy() recorded it.
struct CreatedPool {
  CUmemoryPool pool = nullptr;
  ~CreatedPool() {
    if (pool) cuda().cuMemPoolDestroy(pool);
  }
  CUresult destroy() {
    CUresult rc = pool ? cuda().cuMemPoolDestroy(pool) : 0;
    pool = nullptr;
    return rc;
  }
};

// A stream-ordered allocation: freed on its stream, and waited for, at the end of its scope
// unless free() recorded it. Declared after its pool, so it goes first.
struct AsyncAllocation {
  explicit AsyncAllocation(CUstream s) : stream(s) {}
  ~AsyncAllocation() {
    if (!ptr) return;
    cuda().cuMemFreeAsync(ptr, stream);
    cuda().cuStreamSynchronize(stream);
  }
  CUresult free() {
    CUresult rc = ptr ? cuda().cuMemFreeAsync(ptr, stream) : 0;
    ptr = 0;
    return rc;
  }
  CUstream stream;
  CUdeviceptr ptr = 0;
};

// Device memory of cuMemAlloc, the far side of the host pool's copies.
struct DeviceBuffer {
  ~DeviceBuffer() {
    if (ptr) cuda().cuMemFree_v2(ptr);
  }
  CUdeviceptr ptr = 0;
};

Attempt begin(const char* feature, const std::string& lost) {
  Attempt a;
  a.feature = feature;
  a.notApplicable = lost;  // after a lost context nothing more is tried
  return a;
}

Attempt tryDevicePool(Gpu& gpu, CUstream s, size_t bytes, const std::string& lost) {
  Cuda& c = cuda();
  Attempt a = begin("device_pool", lost);
  claimFrom(a, gpu.dev, CU_ATTR_MEMORY_POOLS_SUPPORTED, "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED");
  if (!a.notApplicable.empty()) return a;
  if (a.entry("cuDeviceGetDefaultMemPool", c.cuDeviceGetDefaultMemPool) && a.entry("cuMemAllocAsync", c.cuMemAllocAsync) &&
      a.entry("cuMemFreeAsync", c.cuMemFreeAsync)) {
    CUmemoryPool pool = nullptr;
    AsyncAllocation alloc(s);
    if (a.step("cuDeviceGetDefaultMemPool", c.cuDeviceGetDefaultMemPool(&pool, gpu.dev)) &&
        a.step("cuMemAllocAsync", c.cuMemAllocAsync(&alloc.ptr, bytes, s)))
      fillAndReadBack(a, gpu, s, alloc.ptr, bytes / 4, kFillValue);
    a.step("cuMemFreeAsync", alloc.free());
    a.step("cuStreamSynchronize", c.cuStreamSynchronize(s));
  }
  a.done();
  return a;
}

CUmemPoolProps poolProps(int allocType, int handleTypes, int locationType, int locationId) {
  CUmemPoolProps props{};
  props.allocType = allocType;
  props.handleTypes = handleTypes;
  props.location.type = locationType;
  props.location.id = locationId;
  props.win32SecurityAttributes = win32Security(handleTypes);
  return props;
}

bool poolEntries(Attempt& a) {
  Cuda& c = cuda();
  return a.entry("cuMemPoolCreate", c.cuMemPoolCreate) && a.entry("cuMemAllocFromPoolAsync", c.cuMemAllocFromPoolAsync) &&
         a.entry("cuMemFreeAsync", c.cuMemFreeAsync) && a.entry("cuMemPoolDestroy", c.cuMemPoolDestroy);
}

// A device pool created with `handleTypes` (NONE for pool_create): an allocation from it filled
// and read back, and its handle exported (then closed) where it has a type.
void tryDeviceLocatedPool(Attempt& a, Gpu& gpu, CUstream s, size_t bytes, int handleTypes) {
  Cuda& c = cuda();
  if (!poolEntries(a)) return;
  if (handleTypes && !a.entry("cuMemPoolExportToShareableHandle", c.cuMemPoolExportToShareableHandle)) return;
  CUmemPoolProps props = poolProps(CU_MEM_ALLOCATION_TYPE_PINNED, handleTypes, CU_MEM_LOCATION_TYPE_DEVICE, gpu.dev);
  CreatedPool pool;
  if (!a.step("cuMemPoolCreate", c.cuMemPoolCreate(&pool.pool, &props))) return;
  {
    AsyncAllocation alloc(s);
    if (a.step("cuMemAllocFromPoolAsync", c.cuMemAllocFromPoolAsync(&alloc.ptr, bytes, pool.pool, s))) {
      if (handleTypes) {
        ShareableHandle handle;
        if (a.step("cuMemPoolExportToShareableHandle", c.cuMemPoolExportToShareableHandle(handle.out(), pool.pool, handleTypes, 0)))
          handle.close(handleTypes);
      }
      fillAndReadBack(a, gpu, s, alloc.ptr, bytes / 4, kFillValue);
    }
    a.step("cuMemFreeAsync", alloc.free());
    a.step("cuStreamSynchronize", c.cuStreamSynchronize(s));
  }
  a.step("cuMemPoolDestroy", pool.destroy());
}

Attempt tryPoolCreate(Gpu& gpu, CUstream s, size_t bytes, const std::string& lost) {
  Attempt a = begin("pool_create", lost);
  claimFrom(a, gpu.dev, CU_ATTR_MEMORY_POOLS_SUPPORTED, "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED");
  if (a.notApplicable.empty()) tryDeviceLocatedPool(a, gpu, s, bytes, CU_MEM_HANDLE_TYPE_NONE);
  a.done();
  return a;
}

struct PoolHandleKind {
  const char* feature;
  int type;  // CU_MEM_HANDLE_TYPE_*, also its bit in MEMPOOL_SUPPORTED_HANDLE_TYPES
};
const PoolHandleKind kPoolHandleKinds[] = {
    {"pool_posix_fd", CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR},
    {"pool_win32", CU_MEM_HANDLE_TYPE_WIN32},
    {"pool_win32_kmt", CU_MEM_HANDLE_TYPE_WIN32_KMT},
    {"pool_fabric", CU_MEM_HANDLE_TYPE_FABRIC},
};

Attempt tryHandlePool(const PoolHandleKind& kind, Gpu& gpu, CUstream s, size_t bytes, const std::string& lost) {
  Attempt a = begin(kind.feature, lost);
  claimFrom(a, gpu.dev, CU_ATTR_MEMPOOL_SUPPORTED_HANDLE_TYPES, "CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES", kind.type);
  if (a.notApplicable.empty() && tryHere(a, kind.type)) tryDeviceLocatedPool(a, gpu, s, bytes, kind.type);
  a.done();
  return a;
}

// A managed pool (CUDA 13: allocType MANAGED, no preferred location): 2 MiB from it filled by a
// kernel, copied back, and read by the CPU once the GPU is idle (without concurrent managed
// access, as on Windows, the CPU may touch managed memory only then). No attribute claims it.
// Tried last: on Windows the CPU's touch of managed memory has crashed a process although the
// attributes claimed managed memory (ml-explore/mlx#3075); the facts before it are out by then.
Attempt tryManagedPool(Gpu& gpu, CUstream s, const std::string& lost) {
  Cuda& c = cuda();
  Attempt a = begin("managed_pool", lost);
  if (a.notApplicable.empty() && poolEntries(a)) {
    CUmemPoolProps props = poolProps(CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_HANDLE_TYPE_NONE, CU_MEM_LOCATION_TYPE_NONE, 0);
    CreatedPool pool;
    if (a.step("cuMemPoolCreate", c.cuMemPoolCreate(&pool.pool, &props))) {
      {
        AsyncAllocation alloc(s);
        if (a.step("cuMemAllocFromPoolAsync", c.cuMemAllocFromPoolAsync(&alloc.ptr, kManagedBytes, pool.pool, s)) &&
            fillAndReadBack(a, gpu, s, alloc.ptr, kManagedBytes / 4, kFillValue) && a.step("cuCtxSynchronize", c.cuCtxSynchronize()))
          cpuReads(a, "CPU read", alloc.ptr, kManagedBytes / 4, kFillValue);
        a.step("cuMemFreeAsync", alloc.free());
        a.step("cuStreamSynchronize", c.cuStreamSynchronize(s));
      }
      a.step("cuMemPoolDestroy", pool.destroy());
    }
  }
  a.done();
  return a;
}

// A host pool (location HOST): its memory is the CPU's by default. A kernel's fill of device
// memory is copied into it and read by the CPU; then the CPU writes a pattern there that is
// copied to the device and back. The CPU touches the pool's memory only after a copy into it
// worked: where host pools are not supported a pool has handed out a buffer whose first copy
// failed (NVIDIA/cuda-python#2486).
Attempt tryHostPool(Gpu& gpu, CUstream s, size_t bytes, const std::string& lost) {
  Cuda& c = cuda();
  Attempt a = begin("host_pool", lost);
  claimFrom(a, gpu.dev, CU_ATTR_HOST_MEMORY_POOLS_SUPPORTED, "CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED");
  if (a.notApplicable.empty() && poolEntries(a)) {
    CUmemPoolProps props = poolProps(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_HANDLE_TYPE_NONE, CU_MEM_LOCATION_TYPE_HOST, 0);
    CreatedPool pool;
    if (a.step("cuMemPoolCreate", c.cuMemPoolCreate(&pool.pool, &props))) {
      {
        DeviceBuffer device;
        AsyncAllocation alloc(s);
        size_t words = bytes / 4;
        if (a.step("cuMemAllocFromPoolAsync", c.cuMemAllocFromPoolAsync(&alloc.ptr, bytes, pool.pool, s)) &&
            a.step("cuStreamSynchronize", c.cuStreamSynchronize(s)) && a.step("cuMemAlloc", c.cuMemAlloc_v2(&device.ptr, bytes)) &&
            fillAndReadBack(a, gpu, s, device.ptr, words, kFillValue)) {
          auto* host = reinterpret_cast<unsigned*>(static_cast<uintptr_t>(alloc.ptr));
          if (a.step("cuMemcpyDtoHAsync(host pool)", c.cuMemcpyDtoHAsync_v2(host, device.ptr, bytes, s)) &&
              a.step("cuStreamSynchronize", c.cuStreamSynchronize(s)) && cpuReads(a, "CPU read", alloc.ptr, words, kFillValue)) {
            for (size_t i = 0; i < words; ++i) host[i] = static_cast<unsigned>(i * 2654435761u);
            std::vector<unsigned> back(words, 0);
            if (a.step("cuMemcpyHtoDAsync(host pool)", c.cuMemcpyHtoDAsync_v2(device.ptr, host, bytes, s)) &&
                a.step("cuMemcpyDtoHAsync", c.cuMemcpyDtoHAsync_v2(back.data(), device.ptr, bytes, s)) &&
                a.step("cuStreamSynchronize", c.cuStreamSynchronize(s))) {
              size_t wrong = 0;
              for (size_t i = 0; i < words; ++i) wrong += back[i] != static_cast<unsigned>(i * 2654435761u);
              a.check("copy from the host pool", wrong == 0, std::to_string(wrong) + " words copied from the host pool differ");
            }
          }
        }
        a.step("cuMemFreeAsync", alloc.free());
        a.step("cuStreamSynchronize", c.cuStreamSynchronize(s));
      }
      a.step("cuMemPoolDestroy", pool.destroy());
    }
  }
  a.done();
  return a;
}

}  // namespace

int memoryPools(ProbeContext& ctx) {
  double sizeMib = ctx.params.number("size_mib");
  if (!(sizeMib >= 1) || sizeMib > 1024) throw UsageError{"parameter size_mib takes 1 to 1024 MiB"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Stream st;
  size_t bytes = static_cast<size_t>(sizeMib * kMiB) / 4 * 4;
  std::string lost;  // set once an attempt leaves the context unusable: the rest are not tried
  auto record = [&](const Attempt& a) {
    emitAttempt(ctx.probe, a);
    if (lost.empty()) lost = lostContext(a);
  };
  record(tryDevicePool(gpu, st.s, bytes, lost));
  record(tryPoolCreate(gpu, st.s, bytes, lost));
  for (const PoolHandleKind& kind : kPoolHandleKinds) record(tryHandlePool(kind, gpu, st.s, bytes, lost));
  record(tryHostPool(gpu, st.s, bytes, lost));
  record(tryManagedPool(gpu, st.s, lost));
  return kExitRan;
}

}  // namespace cp
