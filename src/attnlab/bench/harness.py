"""The one way attnlab times anything: warmup, device synchronisation, repeated samples until the spread is small
or a time cap is hit, then the median with its 20th/80th percentiles, the relative standard deviation and the
sample count; peak memory; FLOP/s against the device's peak; the GPU's clocks while it ran. It records; it
never asserts a time.

Peak memory: on CUDA, `torch.cuda.max_memory_allocated` after a reset, less what was allocated before. On the
CPU, the process's peak resident set size (Linux's VmHWM, reset through /proc/self/clear_refs) less its
resident size before: memory the region touched, as the operating system counts it. So that a tensor freed
earlier is not silently reused, glibc is told to serve every block of 64 KiB or more with its own mapping,
returned to the system when freed (mallopt M_MMAP_THRESHOLD); smaller blocks can still be reused, so the figure
is a lower bound, named as such on the page.
"""
from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

import torch

from attnlab.bench.nvml import LOW_CLOCK, Sampler

CPU_MEMORY = ("peak resident set size during the call less the size before (Linux VmHWM, glibc mapping every block "
              "of 64 KiB or more; a lower bound)")
M_MMAP_THRESHOLD, MAP_FROM = -3, 64 * 1024
CUDA_MEMORY = "torch.cuda.max_memory_allocated during the call less the memory allocated before"


def setup(cfg: dict) -> tuple[dict, torch.device]:
    """A benchmark job's settings with the schema's defaults filled, its device, and its torch threads set."""
    from attnlab.config import validate
    from attnlab.train import job_device

    cfg = validate(cfg, partial=True)
    return cfg, job_device(cfg)


def attention_flops(batch: int, n: int, heads: int, head_dim: int, causal: bool = False, backward: bool = False) -> float:
    """FlashAttention's convention: a forward is 4·B·n²·h·d (two matmuls, 2 FLOPs per multiply-add), halved when
    causal; a backward is 2.5 forwards."""
    forward = 4 * batch * n * n * heads * head_dim / (2 if causal else 1)
    return forward * (2.5 if backward else 1)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _status(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_bytes(fn, device: torch.device) -> tuple[int | None, str]:
    """(bytes, method): the peak extra memory one call of fn takes."""
    if device.type == "cuda":
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        sync(device)
        return torch.cuda.max_memory_allocated(device) - before, CUDA_MEMORY
    _map_large_blocks()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident size
    except OSError:
        return None, "unavailable: this system has no /proc/self/clear_refs"
    before = _status("VmRSS")
    fn()
    peak = _status("VmHWM")
    return (None if before is None or peak is None else max(0, peak - before)), CPU_MEMORY


_LIBC = []


def _map_large_blocks() -> None:
    """Blocks of MAP_FROM bytes or more get their own mapping, unmapped when freed, and free heap memory goes
    back to the system now (glibc's mallopt and malloc_trim), so the next allocation shows in the resident size."""
    try:
        import ctypes

        if not _LIBC:
            _LIBC.append(ctypes.CDLL("libc.so.6"))
            _LIBC[0].mallopt(M_MMAP_THRESHOLD, MAP_FROM)
        _LIBC[0].malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: the figure stays a lower bound all the same


def is_oom(err: BaseException) -> bool:
    return isinstance(err, (MemoryError, torch.OutOfMemoryError)) or (
        isinstance(err, RuntimeError) and ("out of memory" in str(err).lower() or "not enough memory" in str(err).lower()))


def measure(fn, device="cpu", *, warmup: int = 2, min_samples: int = 5, max_samples: int = 100,
            target_rsd: float = 0.02, max_seconds: float = 2.0, flops: float | None = None,
            peak_flops: float | None = None, memory: bool = True) -> dict:
    """Time `fn()` as described above. Out of memory is a result ({"oom": True, ...}), never an exception."""
    device = torch.device(device)
    timer = _CudaTimer(device) if device.type == "cuda" else _WallTimer()
    sampler = Sampler(device.index or 0) if device.type == "cuda" else None
    try:
        for _ in range(warmup):
            fn()
        sync(device)
        times, low, started = [], 0, time.perf_counter()
        with sampler or _Nothing():
            while len(times) < max_samples:
                clock_before = sampler.sample()["sm_mhz"] if sampler and not sampler.error else None
                seconds = timer.time(fn)
                clock_after = sampler.sample()["sm_mhz"] if sampler and not sampler.error else None
                if sampler and sampler.max_sm_mhz and min(clock_before, clock_after) < LOW_CLOCK * sampler.max_sm_mhz:
                    low += 1  # nvbench's rule: a sample at a throttled clock is left out of the statistics
                else:
                    times.append(seconds)
                enough = len(times) >= min_samples and _rsd(times) <= target_rsd
                if enough or (len(times) >= min(2, min_samples) and time.perf_counter() - started > max_seconds):
                    break
                if low > 4 * max_samples:
                    break
        peak, method = peak_bytes(fn, device) if memory else (None, "not measured")
    except Exception as err:
        if not is_oom(err):
            raise
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return {"oom": True, "error": f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"}
    return {"oom": False, **summary(times, low, flops, peak_flops), "peak_bytes": peak, "memory_method": method,
            "nvml": sampler.record() if sampler else None}


def interleaved(fns: dict, device="cpu", *, warmup: int = 2, min_rounds: int = 5, max_rounds: int = 100,
                target_rsd: float = 0.02, max_seconds: float = 10.0, flops: dict | None = None,
                peak_flops: float | None = None) -> dict:
    """Time several functions side by side: each round calls every one once, in an order rotated by one from
    round to round, so a slow spell of the machine falls on all of them and none always runs on a warmer cache.
    Returns {"by": {name: statistics}, "rounds": {name: [seconds per round]}, "order": "..."}; the per-round
    lists let a caller take paired ratios. Stops when every spread is below target_rsd, or at the caps."""
    device = torch.device(device)
    timer = _CudaTimer(device) if device.type == "cuda" else _WallTimer()
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    sync(device)
    rounds, started = {name: [] for name in names}, time.perf_counter()
    sampler = Sampler(device.index or 0) if device.type == "cuda" else None
    with sampler or _Nothing():
        for r in range(max_rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                rounds[name].append(timer.time(fns[name]))
            done = r + 1 >= min_rounds and all(_rsd(t) <= target_rsd for t in rounds.values())
            if done or (r + 1 >= min(2, min_rounds) and time.perf_counter() - started > max_seconds):
                break
    flops = flops or {}
    return {"by": {name: summary(t, 0, flops.get(name), peak_flops) for name, t in rounds.items()},
            "rounds": rounds, "nvml": sampler.record() if sampler else None,
            "order": "every function once per round, the order rotated by one each round"}


def summary(times: list[float], low: int = 0, flops: float | None = None, peak_flops: float | None = None) -> dict:
    """Median, 20th and 80th percentiles (ms), relative standard deviation, counts, and FLOP/s where counted."""
    if not times:
        return {"samples": 0, "left_out_low_clock": low, "median_ms": None}
    ms = sorted(t * 1e3 for t in times)
    q = statistics.quantiles(ms, n=5, method="inclusive") if len(ms) > 1 else [ms[0]] * 4
    out = {"median_ms": statistics.median(ms), "p20_ms": q[0], "p80_ms": q[3], "rsd": _rsd(times),
           "samples": len(ms), "left_out_low_clock": low}
    if flops:
        out["flops"] = flops
        out["flops_per_s"] = flops / (out["median_ms"] / 1e3)
        out["share_of_peak"] = out["flops_per_s"] / peak_flops if peak_flops else None
    return out


def _rsd(times: list[float]) -> float:
    if len(times) < 2:
        return math.inf
    mean = statistics.fmean(times)
    return statistics.stdev(times) / mean if mean else math.inf


class _WallTimer:
    def time(self, fn) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0


class _CudaTimer:
    """CUDA events around the call: the GPU's own time, not the host's launch time."""

    def __init__(self, device):
        self.device = device

    def time(self, fn) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
