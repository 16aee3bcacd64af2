// The managed-memory probe (C13): the managed-memory attributes, and a managed allocation
// written by the CPU, filled by a kernel and read back by the CPU, never at the same time.
#include <cstddef>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "managed_past_vram.hpp"
#include "../probe.hpp"
#include "../sampler.hpp"

namespace cp {

int managedMemory(ProbeContext& ctx) {
  double sizeMib = ctx.params.number("size_mib");
  double percentOfFree = ctx.params.number("percent_of_free");
  // A managed allocation larger than free device memory can hang some GPUs: keep it small, and
  // the large step (percent_of_free) opt-in and bounded.
  if (!(sizeMib > 0) || sizeMib > 1024) throw UsageError{"parameter size_mib takes 1 to 1024 MiB"};
  if (percentOfFree < 0 || percentOfFree > 150) throw UsageError{"parameter percent_of_free takes 0 (off) to 150 % of free VRAM (above 100 oversubscribes)"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Cuda& c = cuda();
  int managed = 0, concurrent = 0, pageable = 0;
  CU(c.cuDeviceGetAttribute(&managed, CU_ATTR_MANAGED_MEMORY, gpu.dev));
  CU(c.cuDeviceGetAttribute(&concurrent, CU_ATTR_CONCURRENT_MANAGED_ACCESS, gpu.dev));
  CU(c.cuDeviceGetAttribute(&pageable, CU_ATTR_PAGEABLE_MEMORY_ACCESS, gpu.dev));
  emitFact(ctx.probe, "managed_supported", managed ? "true" : "false", Obj().integer("CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY", managed));
  emitFact(ctx.probe, "concurrent_access", concurrent ? "true" : "false",
           Obj().integer("CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS", concurrent));
  emitFact(ctx.probe, "pageable_access", pageable ? "true" : "false", Obj().integer("CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS", pageable));
  if (!managed) {
    emitFact(ctx.probe, "roundtrip_ok", "null", Obj(), "the device has no managed memory");
    return kExitRan;
  }
  size_t bytes = static_cast<size_t>(sizeMib * kMiB);
  size_t count = bytes / 4;
  CUdeviceptr p = 0;
  CU(c.cuMemAllocManaged(&p, bytes, 1 /* CU_MEM_ATTACH_GLOBAL */));
  struct Free {
    CUdeviceptr p;
    ~Free() {
      if (p) cuda().cuMemFree_v2(p);
    }
  } release{p};
  auto* host = reinterpret_cast<unsigned*>(p);
  // CPU, then GPU, then CPU again, never at the same time: without concurrent access a CPU
  // touch while a kernel runs is a fault.
  double t0 = nowSeconds();
  for (size_t i = 0; i < count; ++i) host[i] = 1;
  double t1 = nowSeconds();
  Stream st;
  gpu.launchFill(st.s, p, count, 0xC0FFEEu);
  CU(c.cuStreamSynchronize(st.s));
  double t2 = nowSeconds();
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += host[i] != 0xC0FFEEu;
  double t3 = nowSeconds();
  Obj attrs = Obj().num("size_bytes", static_cast<double>(bytes));
  emitMetric(ctx.probe, "cpu_first_touch_ms", (t1 - t0) * 1000, "ms", attrs);
  emitMetric(ctx.probe, "gpu_fill_ms", (t2 - t1) * 1000, "ms", attrs);
  emitMetric(ctx.probe, "cpu_read_back_ms", (t3 - t2) * 1000, "ms", attrs);
  emitFact(ctx.probe, "roundtrip_ok", wrong == 0 ? "true" : "false", Obj().num("wrong_words", static_cast<double>(wrong)).num("words", static_cast<double>(count)));
  if (percentOfFree > 0) {
    c.cuMemFree_v2(release.p);  // the small allocation goes before the large one
    release.p = 0;
    managedPastFreeVram(ctx, gpu, percentOfFree);
  }
  return kExitRan;
}

}  // namespace cp
