"""How fast this machine is, as one figure: a fixed small workload timed here.

Every run file's provenance records it (`calibration`), so a run time recorded on one machine scales to another by
the ratio of their figures (attnlab.eta). The workload is a training step's kind of arithmetic at one thread: an
MLP block's matmuls, forward and backward, at a width and a batch of windows like quick's. Its name is recorded
with its figure: a figure of another workload is not comparable and is not used.
"""
from __future__ import annotations

import functools
import time

import torch

WORKLOAD = "mlp-fwd-bwd-4096x128x512-fp32-1thread-cpu-time"
REPEATS = 7  # the best of them: other work on a shared machine only ever makes one slower


def workload_once(x: torch.Tensor, w: torch.Tensor) -> None:
    h = torch.relu(x @ w)
    y = h @ w.T
    y.sum().backward()


def measure(repeats: int = REPEATS) -> dict:
    """The workload's best CPU time of `repeats` runs (seconds of this thread's CPU time, which one torch thread
    runs it on): the machine's speed, not how busy it is, which a shared machine's wall clock would add (a run's
    recorded wall time carries that itself). The global RNG is untouched."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 128, generator=gen)
    w = torch.randn(128, 512, generator=gen).mul_(0.05).requires_grad_()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        workload_once(x, w)  # warm-up: allocations and kernels' first use
        best = float("inf")
        for _ in range(repeats):
            w.grad = None
            t0 = time.thread_time()
            workload_once(x, w)
            best = min(best, time.thread_time() - t0)
    finally:
        torch.set_num_threads(threads)
    return {"workload": WORKLOAD, "seconds": round(best, 6)}


@functools.lru_cache(maxsize=1)
def here() -> dict:
    """This process's figure, measured once."""
    return measure()
