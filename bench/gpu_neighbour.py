"""A neighbour on the GPU for issue 32's device run: another process that allocates and frees
1-3 GiB of device memory every ~0.2 s (cudaMalloc through torch's allocator, emptied each
time so that the driver sees it), for --seconds, then prints what it did. Plain device
memory only, far below the card's free memory.

    python3 bench/gpu_neighbour.py --seconds 200
"""
import argparse
import random
import signal
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=200.0)
args = parser.parse_args()

stopped = False


def stop(*_):
    global stopped
    stopped = True


# SIGTERM (the run beside it is over) ends the loop, so that the summary is still printed.
signal.signal(signal.SIGTERM, stop)
random.seed(32)
rounds = 0
allocated = 0
start = time.monotonic()
while not stopped and time.monotonic() - start < args.seconds:
    size = random.randint(1, 3) << 30
    x = torch.empty(size, dtype=torch.uint8, device="cuda")
    x.fill_(1)
    torch.cuda.synchronize()
    del x
    torch.cuda.empty_cache()
    rounds += 1
    allocated += size
    time.sleep(0.2)
print(f"neighbour: {rounds} rounds, {allocated / 2**30:.0f} GiB allocated and freed in {time.monotonic() - start:.1f} s", flush=True)
