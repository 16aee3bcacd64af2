"""The peer of bench/probe-accuracy: the same measurements as cudaprobe's timing probes, made
through PyTorch on the same GPU in the same run, in the same order. Prints one JSON object.
bench/probe-accuracy starts it as a fresh process once per round (after one warm-up run),
alternating with cudaprobe, with the same sizes, repetitions and warm-up copies per series.

  python3 bench/peer_torch.py --sizes-mib 16,256,1024 --reps 20 --warmup 3 --targets-us 1,2,5,10,20 --iterations 10000
"""
import argparse
import json
import statistics
import time

import torch


# A short spin ahead of each timed operation keeps the stream busy while Python enqueues it, so
# that the events bracket the operation alone (cudaprobe does the same).
LEAD_CYCLES = 40_000  # about 20 us at H200 clocks


def bandwidth(sizes_mib, reps, warmup, pageable=True):
    """cudaprobe's transfer-bandwidth, step by step: one device buffer, one pinned and one
    pageable host buffer of the largest size, touched first; then for each size, for each
    direction, a pageable series and then a pinned one, each of `warmup` untimed and `reps` timed
    copies, the median reported. The same sequence matters: a process's first series is its
    GPU's and link's warm-up, and in cudaprobe the pageable series warms the pinned one (measured
    on the H200: PyTorch's pinned H2D at 16 MiB as the first series read 39-53 GB/s, after other
    traffic 53-54 GB/s as cudaprobe's)."""
    out = []
    largest = max(int(mib * 1024 * 1024) for mib in sizes_mib)
    dev = torch.empty(largest, dtype=torch.uint8, device="cuda")
    pinned = torch.ones(largest, dtype=torch.uint8).pin_memory()
    plain = torch.ones(largest, dtype=torch.uint8) if pageable else None
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for mib in sizes_mib:
        n = int(mib * 1024 * 1024)
        for direction in ("h2d", "d2h"):
            for memory, host in (("pageable", plain), ("pinned", pinned)):
                if host is None:
                    continue
                h, d = host[:n], dev[:n]
                times = []
                for i in range(warmup + reps):
                    torch.cuda._sleep(LEAD_CYCLES)
                    start.record()
                    if direction == "h2d":
                        d.copy_(h, non_blocking=True)
                    else:
                        h.copy_(d, non_blocking=True)
                    end.record()
                    end.synchronize()
                    if i >= warmup:
                        times.append(start.elapsed_time(end))
                out.append({"direction": direction, "memory": memory, "size_bytes": n, "gbps": n / (statistics.median(times) / 1000) / 1e9})
    return out


def event_resolution(targets_us, reps):
    # torch.cuda._sleep spins for a number of cycles: calibrate cycles per microsecond first.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(20_000_000)
    rates = []
    for _ in range(5):
        start.record()
        torch.cuda._sleep(20_000_000)
        end.record()
        end.synchronize()
        rates.append(20_000_000 / (start.elapsed_time(end) * 1000))
    cycles_per_us = statistics.median(rates)
    distinct = set()
    medians = {}
    for t in targets_us:
        vals = []
        for _ in range(reps):
            torch.cuda._sleep(int(20 * cycles_per_us))
            start.record()
            torch.cuda._sleep(int(t * cycles_per_us))
            end.record()
            end.synchronize()
            v = start.elapsed_time(end) * 1000
            vals.append(v)
            distinct.add(v)
        medians[str(t)] = statistics.median(vals)
    d = sorted(distinct)
    steps = [b - a for a, b in zip(d, d[1:]) if b - a > 1e-6]
    return {"resolution_us": min(steps) if steps else None, "distinct_values": len(d), "elapsed_us": medians, "cycles_per_us": cycles_per_us}


def sync_latency(iterations):
    stream = torch.cuda.current_stream()
    for _ in range(200):
        torch.cuda._sleep(0)
        stream.synchronize()
    us = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        torch.cuda._sleep(0)
        stream.synchronize()
        us.append((time.perf_counter() - t0) * 1e6)
    us.sort()
    return {"p50_us": statistics.median(us), "p99_us": us[int(0.99 * (len(us) - 1))], "min_us": us[0]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes-mib", default="16,256,1024")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--targets-us", default="1,2,5,10,20")
    p.add_argument("--event-reps", type=int, default=50)
    p.add_argument("--iterations", type=int, default=10000)
    p.add_argument("--no-pageable", action="store_true", help="pinned series only (not cudaprobe's sequence)")
    a = p.parse_args()
    torch.cuda.init()
    # No extra warm-up pass: the series run in cudaprobe's order, so each process warms up as
    # cudaprobe's does (bench/probe-accuracy also runs one whole discarded run of each first).
    result = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "bandwidth": bandwidth([float(x) for x in a.sizes_mib.split(",")], a.reps, a.warmup, not a.no_pageable),
        "events": event_resolution([float(x) for x in a.targets_us.split(",")], a.event_reps),
        "sync": sync_latency(a.iterations),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
