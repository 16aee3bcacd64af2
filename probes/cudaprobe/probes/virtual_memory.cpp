// The virtual-memory probe (issue 36, C30): the virtual memory management calls (cuMemCreate,
// cuMemAddressReserve, cuMemMap, cuMemSetAccess) tried against the attributes that claim them:
// device memory mapped and filled by a kernel, a mapping grown in place by a second reservation
// right after the first, host memory (CUDA 13's HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) filled
// by the GPU and read by the CPU, and the shareable handle types exported. WDDM drivers have
// claimed VMM while cuMemMap failed (cuda-python #1241). Metrics: the allocation granularity and
// the largest address reservation granted, doubling up to a cap (address space only).
#include <cstdint>
#include <vector>

#include "../capability.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../probe.hpp"
#include "memory_attempts.hpp"

namespace cp {

namespace {

constexpr unsigned kFillValue = 0x5EEDF00Du;

// The three things a mapping holds, each released at the end of its scope unless the probe's
// own call recorded it. Declared in this order (reservation, memory, mapping) so that the
// mapping goes first, then the memory, then the address range.
struct Reservation {
  ~Reservation() {
    if (ptr) cuda().cuMemAddressFree(ptr, size);
  }
  CUresult free() {
    CUresult rc = ptr ? cuda().cuMemAddressFree(ptr, size) : 0;
    ptr = 0;
    return rc;
  }
  CUdeviceptr ptr = 0;
  size_t size = 0;
};

struct PhysicalMemory {
  ~PhysicalMemory() {
    if (made) cuda().cuMemRelease(handle);
  }
  CUresult release() {
    CUresult rc = made ? cuda().cuMemRelease(handle) : 0;
    made = false;
    return rc;
  }
  CUmemGenericAllocationHandle handle = 0;
  bool made = false;
};

struct Mapping {
  ~Mapping() {
    if (ptr) cuda().cuMemUnmap(ptr, size);
  }
  CUresult unmap() {
    CUresult rc = ptr ? cuda().cuMemUnmap(ptr, size) : 0;
    ptr = 0;
    return rc;
  }
  CUdeviceptr ptr = 0;
  size_t size = 0;
};

bool vmmEntries(Attempt& a) {
  Cuda& c = cuda();
  return a.entry("cuMemGetAllocationGranularity", c.cuMemGetAllocationGranularity) && a.entry("cuMemCreate", c.cuMemCreate) &&
         a.entry("cuMemRelease", c.cuMemRelease) && a.entry("cuMemAddressReserve", c.cuMemAddressReserve) &&
         a.entry("cuMemAddressFree", c.cuMemAddressFree) && a.entry("cuMemMap", c.cuMemMap) && a.entry("cuMemUnmap", c.cuMemUnmap) &&
         a.entry("cuMemSetAccess", c.cuMemSetAccess);
}

CUmemAllocationProp allocationProp(int locationType, int locationId, int handleTypes) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = handleTypes;
  prop.location.type = locationType;
  prop.location.id = locationId;
  prop.win32HandleMetaData = win32Security(handleTypes);
  return prop;
}

CUmemAccessDesc readWrite(int locationType, int locationId) {
  CUmemAccessDesc desc{};
  desc.location.type = locationType;
  desc.location.id = locationId;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return desc;
}

// The minimum granularity of `prop`, into `size` rounded up from `bytes`.
bool granular(Attempt& a, const CUmemAllocationProp& prop, size_t bytes, size_t& size) {
  size_t granularity = 0;
  if (!a.step("cuMemGetAllocationGranularity", cuda().cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) ||
      !a.check("cuMemGetAllocationGranularity", granularity > 0, "the granularity returned is 0"))
    return false;
  size = roundUp(bytes, granularity);
  return true;
}

// What one mapping holds: the address range, the memory and the mapping of one onto the other.
struct MappedMemory {
  Reservation range;
  PhysicalMemory memory;
  Mapping mapping;
  // Records the cleanup's calls, in the order that undoes the mapping.
  void release(Attempt& a) {
    a.step("cuMemUnmap", mapping.unmap());
    a.step("cuMemRelease", memory.release());
    a.step("cuMemAddressFree", range.free());
  }
};

// Creates `size` bytes of `prop`, exports its handle type if it has one (closed again), and maps
// them at `wanted` (0: wherever the driver likes; else the address must be granted as asked),
// accessible to the device. Stops at the first failure; the caller releases what was made.
bool createAndMap(Attempt& a, MappedMemory& m, const CUmemAllocationProp& prop, size_t size, CUdevice dev, CUdeviceptr wanted,
                  const char* suffix) {
  Cuda& c = cuda();
  std::string reserve = std::string("cuMemAddressReserve") + suffix, map = std::string("cuMemMap") + suffix,
              access = std::string("cuMemSetAccess") + suffix;
  m.range.size = m.mapping.size = size;
  m.memory.made = a.step("cuMemCreate", c.cuMemCreate(&m.memory.handle, size, &prop, 0));
  if (!m.memory.made) return false;
  int handleTypes = prop.requestedHandleTypes;
  if (handleTypes) {
    ShareableHandle handle;
    if (!a.step("cuMemExportToShareableHandle", c.cuMemExportToShareableHandle(handle.out(), m.memory.handle, handleTypes, 0))) return false;
    handle.close(handleTypes);
  }
  if (!a.step(reserve.c_str(), c.cuMemAddressReserve(&m.range.ptr, size, 0, wanted, 0))) return false;
  if (wanted && !a.check(reserve.c_str(), m.range.ptr == wanted,
                         "the driver placed the reservation elsewhere than right after the first (the address is only a hint)"))
    return false;
  if (!a.step(map.c_str(), c.cuMemMap(m.range.ptr, size, 0, m.memory.handle, 0))) return false;
  m.mapping.ptr = m.range.ptr;
  CUmemAccessDesc device = readWrite(CU_MEM_LOCATION_TYPE_DEVICE, dev);
  return a.step(access.c_str(), c.cuMemSetAccess(m.range.ptr, size, &device, 1));
}

// One allocation mapped and made accessible to the device, and for host memory to the CPU too
// (as NCCL maps its host buffers); a kernel fills it and the bytes come back, and the CPU reads
// them where the memory is the host's.
void tryMapping(Attempt& a, Gpu& gpu, CUstream s, const CUmemAllocationProp& prop, size_t bytes) {
  Cuda& c = cuda();
  bool host = prop.location.type == CU_MEM_LOCATION_TYPE_HOST;
  if (!vmmEntries(a)) return;
  if (prop.requestedHandleTypes && !a.entry("cuMemExportToShareableHandle", c.cuMemExportToShareableHandle)) return;
  size_t size = 0;
  if (!granular(a, prop, bytes, size)) return;
  MappedMemory m;
  CUmemAccessDesc cpu = readWrite(CU_MEM_LOCATION_TYPE_HOST, 0);
  if (createAndMap(a, m, prop, size, gpu.dev, 0, "") &&
      (!host || a.step("cuMemSetAccess(host)", c.cuMemSetAccess(m.range.ptr, size, &cpu, 1))) &&
      fillAndReadBack(a, gpu, s, m.range.ptr, size / 4, kFillValue) && host)
    cpuReads(a, "CPU read", m.range.ptr, size / 4, kFillValue);
  m.release(a);
}

Attempt begin(const char* feature, const std::string& lost) {
  Attempt a;
  a.feature = feature;
  a.notApplicable = lost;
  return a;
}

Attempt tryVmm(Gpu& gpu, CUstream s, size_t bytes, const std::string& lost) {
  Attempt a = begin("vmm", lost);
  claimFrom(a, gpu.dev, CU_ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
  if (a.notApplicable.empty()) tryMapping(a, gpu, s, allocationProp(CU_MEM_LOCATION_TYPE_DEVICE, gpu.dev, CU_MEM_HANDLE_TYPE_NONE), bytes);
  a.done();
  return a;
}

// Growth in place, as a growing buffer does it (PyTorch's expandable segments reserve ahead
// instead): a second reservation asked for at the address right after the first, a second
// allocation mapped there, and one kernel filling both as one range.
Attempt tryGrow(Gpu& gpu, CUstream s, size_t bytes, const std::string& lost) {
  Attempt a = begin("vmm_grow", lost);
  claimFrom(a, gpu.dev, CU_ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
  CUmemAllocationProp prop = allocationProp(CU_MEM_LOCATION_TYPE_DEVICE, gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
  size_t size = 0;
  if (a.notApplicable.empty() && vmmEntries(a) && granular(a, prop, bytes, size)) {
    MappedMemory first, next;
    if (createAndMap(a, first, prop, size, gpu.dev, 0, "") && createAndMap(a, next, prop, size, gpu.dev, first.range.ptr + size, "(next)"))
      fillAndReadBack(a, gpu, s, first.range.ptr, 2 * size / 4, kFillValue);
    next.release(a);
    first.release(a);
  }
  a.done();
  return a;
}

struct VmmHandleKind {
  const char* feature;
  int type;
  int attribute;
  const char* attributeName;
};
const VmmHandleKind kVmmHandleKinds[] = {
    {"vmm_posix_fd", CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_ATTR_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
     "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED"},
    {"vmm_win32", CU_MEM_HANDLE_TYPE_WIN32, CU_ATTR_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED"},
};

Attempt tryHandle(const VmmHandleKind& kind, Gpu& gpu, CUstream s, size_t bytes, const std::string& lost) {
  Attempt a = begin(kind.feature, lost);
  claimFrom(a, gpu.dev, kind.attribute, kind.attributeName);
  if (a.notApplicable.empty() && tryHere(a, kind.type))
    tryMapping(a, gpu, s, allocationProp(CU_MEM_LOCATION_TYPE_DEVICE, gpu.dev, kind.type), bytes);
  a.done();
  return a;
}

// Host memory through VMM: tried last, since the CPU reads what the mapping hands out.
Attempt tryHostVmm(Gpu& gpu, CUstream s, size_t bytes, const std::string& lost) {
  Attempt a = begin("host_vmm", lost);
  claimFrom(a, gpu.dev, CU_ATTR_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, "CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
  if (a.notApplicable.empty()) tryMapping(a, gpu, s, allocationProp(CU_MEM_LOCATION_TYPE_HOST, 0, CU_MEM_HANDLE_TYPE_NONE), bytes);
  a.done();
  return a;
}

// The metrics after a lost context: null with that reason, since every call would fail for it.
void emitLost(const std::string& probe, const std::string& lost) {
  for (const char* kind : {"minimum", "recommended"}) emitMetricNull(probe, "granularity_bytes", "bytes", lost, Obj().str("kind", kind));
  emitMetricNull(probe, "reservation_ceiling_bytes", "bytes", lost, Obj().str("bounded_by", "refusal"));
}

void emitGranularity(const std::string& probe, CUdevice dev) {
  Cuda& c = cuda();
  CUmemAllocationProp prop = allocationProp(CU_MEM_LOCATION_TYPE_DEVICE, dev, CU_MEM_HANDLE_TYPE_NONE);
  const std::pair<const char*, int> kinds[] = {{"minimum", CU_MEM_ALLOC_GRANULARITY_MINIMUM},
                                               {"recommended", CU_MEM_ALLOC_GRANULARITY_RECOMMENDED}};
  for (const auto& [kind, flag] : kinds) {
    Obj attrs;
    attrs.str("kind", kind);
    if (!c.cuMemGetAllocationGranularity) {
      emitMetricNull(probe, "granularity_bytes", "bytes", "cuMemGetAllocationGranularity is missing in the driver library", attrs);
      continue;
    }
    size_t granularity = 0;
    CUresult rc = c.cuMemGetAllocationGranularity(&granularity, &prop, flag);
    if (rc != 0) emitMetricNull(probe, "granularity_bytes", "bytes", "cuMemGetAllocationGranularity returned " + cudaErrorName(rc), attrs);
    else emitMetric(probe, "granularity_bytes", static_cast<double>(granularity), "bytes", attrs);
  }
}

// The largest cuMemAddressReserve granted, doubling from 1 GiB to the cap. Address space only:
// nothing is mapped, and each reservation is freed at once.
void emitReservationCeiling(const std::string& probe, double maxGib) {
  Cuda& c = cuda();
  Obj refusal;
  refusal.str("bounded_by", "refusal");
  if (!c.cuMemAddressReserve || !c.cuMemAddressFree) {
    emitMetricNull(probe, "reservation_ceiling_bytes", "bytes", "cuMemAddressReserve is missing in the driver library", refusal);
    return;
  }
  const size_t gib = static_cast<size_t>(kGiB);
  const size_t cap = static_cast<size_t>(maxGib) * gib;
  size_t granted = 0;
  std::string refused;
  for (size_t size = gib;; size = size * 2 < cap ? size * 2 : cap) {
    CUdeviceptr ptr = 0;
    CUresult rc = c.cuMemAddressReserve(&ptr, size, 0, 0, 0);
    if (rc != 0) {
      refused = cudaErrorName(rc) + " at " + std::to_string(size / gib) + " GiB";
      break;
    }
    c.cuMemAddressFree(ptr, size);
    granted = size;
    if (size >= cap) break;
  }
  if (granted == 0) {
    emitMetricNull(probe, "reservation_ceiling_bytes", "bytes", "cuMemAddressReserve refused even 1 GiB: " + refused, refusal);
    return;
  }
  Obj attrs;
  attrs.str("bounded_by", refused.empty() ? "cap" : "refusal");
  emitMetric(probe, "reservation_ceiling_bytes", static_cast<double>(granted), "bytes", attrs);
}

}  // namespace

int virtualMemory(ProbeContext& ctx) {
  double sizeMib = ctx.params.number("size_mib");
  if (!(sizeMib >= 1) || sizeMib > 1024) throw UsageError{"parameter size_mib takes 1 to 1024 MiB"};
  double maxGib = ctx.params.number("max_reserve_gib");
  if (!(maxGib >= 1) || maxGib > 65536 || maxGib != static_cast<double>(static_cast<long long>(maxGib)))
    throw UsageError{"parameter max_reserve_gib takes a whole number of GiB from 1 to 65536"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Stream st;
  size_t bytes = static_cast<size_t>(sizeMib * kMiB);
  std::string lost;  // set once an attempt leaves the context unusable: the rest are not tried
  auto record = [&](const Attempt& a) {
    emitAttempt(ctx.probe, a);
    if (lost.empty()) lost = lostContext(a);
  };
  record(tryVmm(gpu, st.s, bytes, lost));
  record(tryGrow(gpu, st.s, bytes, lost));
  for (const VmmHandleKind& kind : kVmmHandleKinds) record(tryHandle(kind, gpu, st.s, bytes, lost));
  record(tryHostVmm(gpu, st.s, bytes, lost));
  if (!lost.empty()) {
    emitLost(ctx.probe, lost);
    return kExitRan;
  }
  emitGranularity(ctx.probe, gpu.dev);
  emitReservationCeiling(ctx.probe, maxGib);
  return kExitRan;
}

}  // namespace cp
