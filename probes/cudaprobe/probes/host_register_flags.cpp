// The host-register-flags probe (issue 36): each cuMemHostRegister flag tried on malloc memory,
// against the attribute that claims it. A registration that returns CUDA_SUCCESS works only
// when the GPU then reads the bytes (a copy to the device and back) and, for Mapped, writes
// them through the device pointer the driver hands out. Each call is a step of the attempt, never
// thrown (memory_attempts.hpp), so that one flag's failure is its own evidence.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../capability.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../probe.hpp"
#include "memory_attempts.hpp"

namespace cp {

namespace {

struct Flag {
  const char* feature;
  unsigned flags;
  int attribute;  // -1: no attribute speaks for it
  const char* attributeName;
};

// IoMemory is for a device's I/O space (a PCIe BAR), not for malloc memory: no attribute claims
// it there, and a refusal is the documented answer. It is tried so that a driver that takes it
// anyway is seen.
const Flag kFlags[] = {
    {"default", 0, CU_ATTR_HOST_REGISTER_SUPPORTED, "CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED"},
    {"portable", CU_MEMHOSTREGISTER_PORTABLE, CU_ATTR_HOST_REGISTER_SUPPORTED, "CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED"},
    {"mapped", CU_MEMHOSTREGISTER_DEVICEMAP, CU_ATTR_CAN_MAP_HOST_MEMORY, "CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY"},
    {"read_only", CU_MEMHOSTREGISTER_READ_ONLY, CU_ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED,
     "CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED"},
    {"io_memory", CU_MEMHOSTREGISTER_IOMEMORY, -1, ""},
};

// Page-aligned malloc memory, touched, as an application registers it.
struct HostBuffer {
  explicit HostBuffer(size_t size) : bytes(size) {
    raw = std::malloc(size + 65536);
    if (raw) {
      auto address = reinterpret_cast<uintptr_t>(raw);
      data = reinterpret_cast<unsigned*>((address + 65535) & ~static_cast<uintptr_t>(65535));
      std::memset(data, 0, size);
    }
  }
  ~HostBuffer() { std::free(raw); }
  void* raw = nullptr;
  unsigned* data = nullptr;
  size_t bytes;
};

Attempt tryFlag(const Flag& flag, Gpu& gpu, size_t bytes) {
  Cuda& c = cuda();
  Attempt a;
  a.feature = flag.feature;
  a.attribute = flag.attributeName;
  if (flag.attribute >= 0) {
    a.attributeValue = readAttribute(flag.attribute, gpu.dev);
    a.claimed = a.attributeValue < 0 ? -1 : a.attributeValue > 0 ? 1 : 0;
  }
  HostBuffer host(bytes);
  if (!a.check("malloc", host.data != nullptr, "malloc of the buffer failed")) return a;
  size_t words = bytes / 4;
  for (size_t i = 0; i < words; ++i) host.data[i] = static_cast<unsigned>(i * 2654435761u);
  if (!a.step("cuMemHostRegister", c.cuMemHostRegister_v2(host.data, bytes, flag.flags))) {
    a.done();
    return a;
  }
  CUdeviceptr device = 0;
  Stream st;
  std::vector<unsigned> back(words, 0);
  if (a.step("cuMemAlloc", c.cuMemAlloc_v2(&device, bytes)) &&
      a.step("cuMemcpyHtoDAsync", c.cuMemcpyHtoDAsync_v2(device, host.data, bytes, st.s)) &&
      a.step("cuMemcpyDtoHAsync", c.cuMemcpyDtoHAsync_v2(back.data(), device, bytes, st.s)) &&
      a.step("cuStreamSynchronize", c.cuStreamSynchronize(st.s))) {
    a.check("read back", std::memcmp(back.data(), host.data, bytes) == 0, "the bytes the GPU read differ");
  }
  if (flag.flags & CU_MEMHOSTREGISTER_DEVICEMAP) {
    // Mapped: a kernel writes through the device pointer the driver hands out, the CPU reads it.
    CUdeviceptr mapped = 0;
    if (a.entry("cuMemHostGetDevicePointer", c.cuMemHostGetDevicePointer_v2) &&
        a.step("cuMemHostGetDevicePointer", c.cuMemHostGetDevicePointer_v2(&mapped, host.data, 0)) &&
        fillAndReadBack(a, gpu, st.s, mapped, words, 0xC0FFEEu)) {
      cpuReads(a, "CPU read", static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(host.data)), words, 0xC0FFEEu);
    }
  }
  if (device) c.cuMemFree_v2(device);
  CUresult unregistered = c.cuMemHostUnregister(host.data);
  a.step("cuMemHostUnregister", unregistered);
  a.done();
  return a;
}

}  // namespace

int hostRegisterFlags(ProbeContext& ctx) {
  double sizeMib = ctx.params.number("size_mib");
  if (!(sizeMib >= 1) || sizeMib > 1024) throw UsageError{"parameter size_mib takes 1 to 1024 MiB"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  size_t bytes = static_cast<size_t>(sizeMib * kMiB);
  std::string lost;  // set once an attempt leaves the context unusable: the rest are not tried
  for (const Flag& flag : kFlags) {
    Attempt a;
    if (lost.empty()) {
      a = tryFlag(flag, gpu, bytes);
      lost = lostContext(a);
    } else {
      a.feature = flag.feature;
      a.notApplicable = lost;
    }
    emitAttempt(ctx.probe, a);
  }
  return kExitRan;
}

}  // namespace cp
