"""The peer of bench/memory-checks: issue 24's memory measurements made again without cudaprobe,
through the CUDA driver and runtime libraries themselves (ctypes: no compiler, no torch), the
same way: one fresh process per series (as cudaprobe's subjects), the same chunk sizes, caps
and bisection. Prints one JSON object.

  python3 bench/memory_peer.py meminfo
  python3 bench/memory_peer.py attributes
  python3 bench/memory_peer.py alloc API CHUNK_BYTES CAP_BYTES GRANULARITY_BYTES   (API: driver|runtime|async)
  python3 bench/memory_peer.py register CHUNK_BYTES CAP_BYTES                     (malloc + cuMemHostRegister)
  python3 bench/memory_peer.py managed PERCENT_OF_FREE                             (cuMemAllocManaged, GPU memset, CPU read back)
  python3 bench/memory_peer.py write CHUNK_BYTES                                   (cuMemsetD32 bandwidth of one chunk)

Without a driver it prints {"skipped": reason} and exits 0.
"""
import ctypes
import ctypes.util
import glob
import json
import os
import statistics
import sys
import time

c_size = ctypes.c_size_t
ptr = ctypes.c_uint64


def load_driver():
    for name in ("libcuda.so.1", "libcuda.so", "/usr/lib/wsl/lib/libcuda.so.1"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def load_runtime():
    candidates = [os.environ.get("CUDAPROBE_CUDART", "")]
    candidates += ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    candidates += sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so.*"), reverse=True)
    for name in candidates:
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def out(obj):
    print(json.dumps(obj))
    sys.exit(0)


cu = load_driver()
if cu is None:
    out({"skipped": "no CUDA driver library (libcuda.so.1)"})


def check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else rc}")


rc = cu.cuInit(0)
if rc != 0:
    out({"skipped": f"cuInit failed ({rc})"})
dev = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def meminfo():
    free, total = c_size(), c_size()
    check(cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
    return free.value, total.value


class Allocator:
    """cuMemAlloc, cudaMalloc or cudaMallocAsync (synchronised, so that a failure shows at once)."""

    def __init__(self, api):
        self.api = api
        self.rt = load_runtime() if api != "driver" else None
        if api != "driver" and self.rt is None:
            out({"skipped": "no CUDA runtime library"})
        if self.rt is not None:
            self.rt.cudaSetDevice(0)

    def alloc(self, n):
        if self.api == "driver":
            p = ptr()
            return p.value if cu.cuMemAlloc_v2(ctypes.byref(p), c_size(n)) == 0 else None
        p = ctypes.c_void_p()
        if self.api == "runtime":
            rc = self.rt.cudaMalloc(ctypes.byref(p), c_size(n))
        else:
            rc = self.rt.cudaMallocAsync(ctypes.byref(p), c_size(n), None)
            if rc == 0:
                rc = self.rt.cudaStreamSynchronize(None)
        if rc != 0:
            self.rt.cudaGetLastError()
            return None
        return p.value

    def free(self, p):
        if self.api == "driver":
            cu.cuMemFree_v2(ptr(p))
        elif self.api == "runtime":
            self.rt.cudaFree(ctypes.c_void_p(p))
        else:
            self.rt.cudaFreeAsync(ctypes.c_void_p(p), None)
            self.rt.cudaStreamSynchronize(None)


def alloc_series(api, chunk, cap, gran):
    a = Allocator(api)
    free0, total = meminfo()
    # The largest single allocation: the cap, or a bisection to the granularity.
    lo, hi = 0, cap
    p = a.alloc(cap)
    if p is not None:
        a.free(p)
        lo = cap
    else:
        while hi - lo > gran:
            mid = (lo + (hi - lo) // 2) // gran * gran
            if mid <= lo:
                mid = lo + gran
            p = a.alloc(mid)
            if p is not None:
                a.free(p)
                lo = mid
            else:
                hi = mid
    held, failed = [], False
    while (len(held) + 1) * chunk <= cap:
        p = a.alloc(chunk)
        if p is None:
            failed = True
            break
        held.append(p)
    free_after = meminfo()[0]
    for p in held:
        a.free(p)
    return {"api": api, "free_vram_bytes": free0, "total_vram_bytes": total, "largest_single_bytes": lo, "largest_capped": lo == cap,
            "cumulative_bytes": len(held) * chunk, "cumulative_failed": failed, "free_after_fill_bytes": free_after}


def register_series(chunk, cap):
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    held, failed = [], False
    times = []
    while (len(held) + 1) * chunk <= cap:
        p = libc.malloc(c_size(chunk))
        if not p:
            failed = True
            break
        ctypes.memset(p, 0, chunk)  # touched first, as cudaprobe's subject does
        t0 = time.perf_counter()
        if cu.cuMemHostRegister_v2(ctypes.c_void_p(p), c_size(chunk), 0) != 0:
            libc.free(ctypes.c_void_p(p))
            failed = True
            break
        times.append((time.perf_counter() - t0) * 1000)
        held.append(p)
    for p in held:
        cu.cuMemHostUnregister(ctypes.c_void_p(p))
        libc.free(ctypes.c_void_p(p))
    return {"ceiling_bytes": len(held) * chunk, "failed": failed, "chunk_ms_median": statistics.median(times) if times else None}


def attributes():
    names = {"host_register_supported": 99, "host_pointer_for_registered_mem": 91, "pageable_memory_access": 88, "memory_pools_supported": 115}
    result = {}
    for k, attr in names.items():
        v = ctypes.c_int()
        result[k] = bool(v.value) if cu.cuDeviceGetAttribute(ctypes.byref(v), attr, dev) == 0 else None
    return result


def write_gbps(p, n):
    # As cudaprobe's subject: four memsets and one synchronize per timing, the median of three.
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(4):
            check(cu.cuMemsetD32_v2(ptr(p), 0x5A5A5A5A, c_size(n // 4)), "cuMemsetD32")
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        times.append(time.perf_counter() - t0)
    return 4 * n / statistics.median(times) / 1e9


def managed(percent):
    free0, _ = meminfo()
    n = int(percent / 100 * free0 // (1 << 20)) * (1 << 20)
    p = ptr()
    rc = cu.cuMemAllocManaged(ctypes.byref(p), c_size(n), 1)
    if rc != 0:
        return {"free_vram_bytes": free0, "managed_bytes": n, "ok": False, "failure": f"cuMemAllocManaged {rc}"}
    t0 = time.perf_counter()
    check(cu.cuMemsetD32_v2(p, 0xC0FFEE, c_size(n // 4)), "cuMemsetD32")
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    t1 = time.perf_counter()
    words = n // 4
    stride = max(1024, words // 4096)
    view = ctypes.cast(ctypes.c_void_p(p.value), ctypes.POINTER(ctypes.c_uint32))
    wrong = sum(1 for i in range(0, words, stride) if view[i] != 0xC0FFEE)
    t2 = time.perf_counter()
    cu.cuMemFree_v2(p)
    return {"free_vram_bytes": free0, "managed_bytes": n, "ok": wrong == 0, "gpu_fill_gbps": n / (t1 - t0) / 1e9, "cpu_read_back_ms": (t2 - t1) * 1000}


def write(chunk):
    p = ptr()
    check(cu.cuMemAlloc_v2(ctypes.byref(p), c_size(chunk)), "cuMemAlloc")
    try:
        return {"write_gbps": write_gbps(p.value, chunk)}
    finally:
        cu.cuMemFree_v2(p)


what = sys.argv[1] if len(sys.argv) > 1 else ""
try:
    if what == "meminfo":
        f, t = meminfo()
        out({"free_vram_bytes": f, "total_vram_bytes": t})
    if what == "attributes":
        out(attributes())
    if what == "alloc":
        out(alloc_series(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
    if what == "register":
        out(register_series(int(sys.argv[2]), int(sys.argv[3])))
    if what == "managed":
        out(managed(float(sys.argv[2])))
    if what == "write":
        out(write(int(sys.argv[2])))
except RuntimeError as e:
    print(json.dumps({"error": str(e)}))
    sys.exit(1)
print(__doc__, file=sys.stderr)
sys.exit(2)
