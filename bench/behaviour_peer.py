"""The peer of bench/behaviour-checks: issue 24's event, watchdog, initialisation and busy-card
measurements made again without cudaprobe: the driver and runtime libraries through ctypes, and
the copies through PyTorch. The same quantity the same way (the same calls, the same sleep, a
fresh process per initialisation). Prints one JSON object.

  python3 bench/behaviour_peer.py event-gap SLEEP_MS REPETITIONS   (cuEventRecord, sleep, cuEventRecord; as is and with cuStreamQuery)
  python3 bench/behaviour_peer.py attributes                       (CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)
  python3 bench/behaviour_peer.py init-driver                      (cuInit, timed, in this fresh process)
  python3 bench/behaviour_peer.py init-runtime LIBRARY             (cudaGetDeviceCount, timed, in this fresh process)
  python3 bench/behaviour_peer.py runtime-dirs                     (folders of the CUDA runtimes Python's packages carry)
  python3 bench/behaviour_peer.py copies SIZE_BYTES FILL_BYTES REPS (torch: pinned H2D/D2H, idle and with FILL_BYTES held)

Without a driver it prints {"skipped": reason} and exits 0.
"""
import ctypes
import json
import os
import statistics
import sys
import time


def out(obj):
    print(json.dumps(obj))
    sys.exit(0)


def load_driver():
    for name in ("libcuda.so.1", "libcuda.so", "/usr/lib/wsl/lib/libcuda.so.1"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def check(rc, what):
    if rc != 0:
        out({"error": f"{what} returned {rc}"})


def context(cu):
    check(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return dev


cmd = sys.argv[1] if len(sys.argv) > 1 else ""

if cmd == "init-runtime":
    # No driver loaded first: the runtime loads it, as in cudaprobe's init-child.
    try:
        rt = ctypes.CDLL(sys.argv[2])
    except OSError as e:
        out({"result": f"not loaded: {e}"})
    version = ctypes.c_int()
    rt.cudaRuntimeGetVersion(ctypes.byref(version))
    count = ctypes.c_int()
    t0 = time.perf_counter()
    rc = rt.cudaGetDeviceCount(ctypes.byref(count))
    ms = (time.perf_counter() - t0) * 1e3
    rt.cudaGetErrorName.restype = ctypes.c_char_p
    name = "cudaSuccess" if rc == 0 else f"{rt.cudaGetErrorName(rc).decode()} ({rc})"  # as cudaprobe writes it
    out({"version": version.value, "rc": rc, "result": name, "first_call_ms": ms})

if cmd == "runtime-dirs":
    dirs = []
    try:
        import nvidia.cuda_runtime  # the runtime pip's torch wheels carry

        for base in nvidia.cuda_runtime.__path__:
            if os.path.isdir(os.path.join(base, "lib")):
                dirs.append(os.path.join(base, "lib"))
    except ImportError:
        pass
    out({"dirs": dirs})

if cmd == "copies":
    try:
        import torch
    except ImportError:
        out({"skipped": "no torch"})
    if not torch.cuda.is_available():
        out({"skipped": "torch sees no GPU"})
    size, fill, reps = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True).fill_(1)
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def rates():
        r = {}
        for direction in ("h2d", "d2h"):
            ms = []
            for i in range(reps + 2):
                start.record()
                if direction == "h2d":
                    dev.copy_(host, non_blocking=True)
                else:
                    host.copy_(dev, non_blocking=True)
                end.record()
                end.synchronize()
                if i >= 2:
                    ms.append(start.elapsed_time(end))
            r[direction] = size / (statistics.median(ms) / 1e3) / 1e9
        return r

    idle = rates()
    try:
        held = torch.zeros(fill, dtype=torch.uint8, device="cuda")  # written, as cudaprobe's fill
    except RuntimeError as e:  # another user of the card took memory meanwhile
        out({"error": f"could not hold {fill} bytes: {e}"})
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    filled = rates()
    del held
    out({"idle_gbps": idle, "filled_gbps": filled, "vram_used_fraction": 1 - free / total,
         "filled_idle_ratio": {d: filled[d] / idle[d] for d in idle}})

cu = load_driver()
if cu is None:
    out({"skipped": "no CUDA driver library (libcuda.so.1)"})

if cmd == "init-driver":
    t0 = time.perf_counter()
    rc = cu.cuInit(0)
    ms = (time.perf_counter() - t0) * 1e3
    name = ctypes.c_char_p()
    cu.cuGetErrorName(rc, ctypes.byref(name))
    out({"rc": rc, "result": "CUDA_SUCCESS" if rc == 0 else f"{(name.value or b'CUDA_ERROR').decode()} ({rc})", "init_ms": ms})

if cmd == "attributes":
    dev = context(cu)
    v = ctypes.c_int()
    check(cu.cuDeviceGetAttribute(ctypes.byref(v), 17, dev), "cuDeviceGetAttribute(KERNEL_EXEC_TIMEOUT)")
    out({"kernel_exec_timeout": v.value == 1})

if cmd == "event-gap":
    sleep_ms, reps = float(sys.argv[2]), int(sys.argv[3])
    context(cu)
    stream = ctypes.c_void_p()
    check(cu.cuStreamCreate(ctypes.byref(stream), 0), "cuStreamCreate")
    a, b = ctypes.c_void_p(), ctypes.c_void_p()
    check(cu.cuEventCreate(ctypes.byref(a), 0), "cuEventCreate")
    check(cu.cuEventCreate(ctypes.byref(b), 0), "cuEventCreate")
    result = {}
    for flush in ("none", "query"):
        elapsed, gaps = [], []
        for _ in range(reps):
            check(cu.cuEventRecord(a, stream), "cuEventRecord")
            if flush == "query":
                cu.cuStreamQuery(stream)
            h0 = time.perf_counter()
            time.sleep(sleep_ms / 1e3)
            h1 = time.perf_counter()
            check(cu.cuEventRecord(b, stream), "cuEventRecord")
            check(cu.cuEventSynchronize(b), "cuEventSynchronize")
            ms = ctypes.c_float()
            check(cu.cuEventElapsedTime(ctypes.byref(ms), a, b), "cuEventElapsedTime")
            elapsed.append(ms.value)
            gaps.append((h1 - h0) * 1e3)
        result[flush] = {"elapsed_ms": statistics.median(elapsed), "host_gap_ms": statistics.median(gaps)}
    out(result)

out({"error": f"unknown command {cmd!r}"})
