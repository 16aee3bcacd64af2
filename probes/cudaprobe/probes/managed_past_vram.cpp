// managed-memory's large step (C23): a managed allocation of percent_of_free of the free VRAM,
// filled by a kernel (the driver migrates or, past VRAM, evicts pages) and read back by the CPU
// at up to 4096 places. Native Linux is documented to oversubscribe; WSL2 is reported to fail at
// about VRAM (microsoft/WSL#7198). Bounded: what lies past free VRAM must fit in half of the
// available system memory. A failed step is a fact, not a probe failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "managed_past_vram.hpp"
#include "../process.hpp"

namespace cp {

void managedPastFreeVram(ProbeContext& ctx, Gpu& gpu, double percent) {
  Cuda& c = cuda();
  size_t freeB = 0, totalB = 0;
  CU(c.cuMemGetInfo_v2(&freeB, &totalB));
  double freeVram = static_cast<double>(freeB);
  double bytes = std::floor(percent / 100.0 * freeVram / kMiB) * kMiB;
  Obj attrs = Obj().num("percent_of_free", percent);
  emitMetric(ctx.probe, "free_vram_bytes", freeVram, "bytes", attrs);
  bool past = percent > 100;
  auto decide = [&](const char* value, const Obj& ev, const std::string& reason) {
    emitFact(ctx.probe, "large_roundtrip_ok", value, ev, reason);
    if (past) emitFact(ctx.probe, "oversubscription_ok", value, ev, reason);
    else emitFact(ctx.probe, "oversubscription_ok", "null", Obj(), "percent_of_free is at most 100: nothing past free VRAM was asked for");
  };
  Reading avail = systemAvailable();
  if (bytes - freeVram > 0 && (!avail.ok() || bytes - freeVram > 0.5 * avail.value)) {
    char why[200];
    if (avail.ok()) {
      std::snprintf(why, sizeof why, "%.2f GiB past free VRAM would need more than half of the %.2f GiB of system memory available",
                    (bytes - freeVram) / kGiB, avail.value / kGiB);
    } else {
      std::snprintf(why, sizeof why, "the available system memory is unknown (%s): nothing past free VRAM is asked for", avail.reason.c_str());
    }
    decide("null", Obj(), why);
    return;
  }
  Obj ev = Obj().num("managed_bytes", bytes).num("free_vram_bytes", freeVram);
  CUdeviceptr p = 0;
  CUresult rc = c.cuMemAllocManaged(&p, static_cast<size_t>(bytes), 1 /* CU_MEM_ATTACH_GLOBAL */);
  if (rc != 0) {
    decide("false", ev.str("failure", "cuMemAllocManaged: " + c.err(rc)), "");
    return;
  }
  emitMetric(ctx.probe, "managed_bytes", bytes, "bytes", attrs);
  Stream st;
  double t0 = nowSeconds();
  unsigned long long words = static_cast<unsigned long long>(bytes / 4);
  try {
    gpu.launchFill(st.s, p, words, 0xC0FFEEu);
    rc = c.cuStreamSynchronize(st.s);
  } catch (const ProbeFailure& e) {
    c.cuMemFree_v2(p);
    decide("false", ev.str("failure", e.message), "");
    return;
  }
  double t1 = nowSeconds();
  if (rc != 0) {
    c.cuMemFree_v2(p);
    decide("false", ev.str("failure", "the fill kernel: " + c.err(rc)), "");
    return;
  }
  emitMetric(ctx.probe, "large_gpu_fill_gbps", bytes / (t1 - t0) / 1e9, "GB/s", attrs);
  const auto* host = reinterpret_cast<const unsigned*>(p);
  unsigned long long wrong = 0, read = 0;
  // At most 4096 words spread evenly (at least a page apart): what the CPU touches migrates back
  // to host memory, a block at a time, and the whole allocation might not fit there.
  unsigned long long stride = std::max(1024ULL, words / 4096);
  for (unsigned long long i = 0; i < words; i += stride, ++read) wrong += host[i] != 0xC0FFEEu;
  double t2 = nowSeconds();
  emitMetric(ctx.probe, "large_cpu_read_back_ms", (t2 - t1) * 1000, "ms", attrs);
  c.cuMemFree_v2(p);
  decide(wrong == 0 ? "true" : "false", ev.num("words_read", static_cast<double>(read)).num("wrong_words", static_cast<double>(wrong)), "");
}

}  // namespace cp
