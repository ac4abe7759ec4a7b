"""A training step against the machine's own limit: the FLOPs a step does, counted by torch's flop counter; the
rate a plain matmul reaches on the same threads (the peak, timed beside the steps); where one step's time goes,
by operator category, read from torch's profiler; and the step's matmuls and attention replayed alone at its own
shapes. It records; it never asserts a speed. (Whether the CPU computes bf16 natively: attnlab.precision.)

FLOPs are torch.utils.flop_counter's: 2 per multiply-add of every matmul, forward and backward, and of attention
counted in full (torch does not discount a causal mask). Norms, activations, the loss and AdamW count nothing.
torch registers no formula for the CPU's flash attention, so its forward and backward are counted here with
torch's own SDPA formulas.
"""
from __future__ import annotations

import math
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from functools import partial

import torch
from torch.utils import flop_counter
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from attnlab.bench.harness import interleaved, summary, sync

PEAK_N = {"cpu": 1024, "cuda": 8192}  # the square matmul whose rate is the peak, per device type
CATEGORIES = ["matmul", "attention", "normalisation", "activation", "loss", "optimiser", "rest"]
# (category, pattern) over an operator's short lower-case name; the first that matches names it
RULES = [("optimiser", r"^optimizer\."),  # torch.optim's own ranges: Optimizer.step#AdamW.step, ...zero_grad
         ("loss", r"cross_entropy|nll_?loss|log_?softmax"),
         ("attention", r"scaled_?dot_?product|softmax"),
         ("normalisation", r"(layer|rms|batch|group)_?norm"),
         ("activation", r"gelu|relu|silu|tanh|sigmoid|threshold_backward|softplus"),
         ("matmul", r"^(mm|addmm|bmm|baddbmm|matmul|linear|mv|addmv|dot)(backward\d*)?$")]
AUTOGRAD = "autograd::engine::evaluate_function: "
ALONE_REPEATS = 5  # replays of each matmul and attention call of a step, timed alone (alone())


def matmul(precision: str, device) -> tuple[callable, int, int]:
    """(call, FLOPs per call, n): one n x n by n x n matmul in `precision` into a preallocated output."""
    device = torch.device(device)
    n, dtype = PEAK_N[device.type], {"fp32": torch.float32, "bf16": torch.bfloat16}[precision]
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=gen).to(device, dtype) for _ in range(2))
    out = torch.empty(n, n, device=device, dtype=dtype)
    return (lambda: torch.mm(a, b, out=out)), 2 * n ** 3, n


def peak_record(precision: str, n: int, flops: int, seconds: list[float]) -> dict:
    """A peak from its calls' seconds: the median rate, the rates at the 80th and 20th percentile of time (slow
    and fast), and the spread of the times."""
    seconds = [round(x, 6) for x in seconds]  # as recorded: a share computed from the file is the same
    s = summary(seconds, flops=flops)
    return {"precision": precision, "n": n, "flops": flops, "seconds": seconds,
            "flops_per_s": s["flops_per_s"], "flops_per_s_p20": flops / (s["p80_ms"] / 1e3),
            "flops_per_s_p80": flops / (s["p20_ms"] / 1e3), "rsd": s["rsd"], "samples": s["samples"]}


def _cpu_attention(query, key, value, *args, out_shape=None, **kwargs) -> int:
    return flop_counter.sdpa_flop_count(query, key, value)


def _cpu_attention_backward(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return flop_counter.sdpa_backward_flop_count(grad_out, query, key, value)


def _cpu_attention_formulas() -> dict:
    aten = torch.ops.aten
    pairs = [("_scaled_dot_product_flash_attention_for_cpu", _cpu_attention),
             ("_scaled_dot_product_flash_attention_for_cpu_backward", _cpu_attention_backward)]
    return {getattr(aten, name): formula for name, formula in pairs if hasattr(aten, name)}


def count_flops(fn) -> tuple[int, dict[str, int]]:
    """The FLOPs of one call of fn, in total and by operator, as torch's flop counter counts them."""
    with flop_counter.FlopCounterMode(display=False, custom_mapping=_cpu_attention_formulas()) as counter:
        fn()
    by_op = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return int(counter.get_total_flops()), by_op


def category(name: str) -> str | None:
    """The category an operator's name puts it in (None: none of them)."""
    short = name.removeprefix(AUTOGRAD).removeprefix("aten::").lower()
    return next((cat for cat, rule in RULES if re.search(rule, short)), None)


def event_category(event) -> str:
    """An event's category: that of its outermost named caller, so that a matmul inside the loss or a copy inside
    AdamW's step counts where the caller's time goes; 'rest' where nothing in the chain is named."""
    chain = []
    while event is not None:
        chain.append(event)
        event = event.cpu_parent
    return next((cat for cat in map(category, (e.name for e in reversed(chain))) if cat), "rest")


def tally(events, wall_seconds: float, steps: int, on_device: bool = False) -> dict:
    """Per step, the milliseconds of each category (every operator's own time, on the device where `on_device`)
    and their shares of the step's wall time; `rest` is what no named category took, time outside any operator
    included. The five largest operators in the rest are named."""
    ms, rest = dict.fromkeys(CATEGORIES, 0.0), Counter()
    for e in events:
        if on_device and getattr(e, "device_type", None) != torch.autograd.DeviceType.CPU:
            continue  # a kernel's time is already its launching operator's self device time
        own = (e.self_device_time_total if on_device else e.self_cpu_time_total) / 1e3 / steps
        cat = event_category(e)
        ms[cat] += own
        if cat == "rest":
            rest[e.name] += own
    operators = sum(ms.values())
    step_ms = max(wall_seconds * 1e3 / steps, operators)
    ms["rest"] += step_ms - operators  # time outside any operator: Python, the batch's indexing, the profiler
    return {"steps": steps, "step_ms": step_ms, "operators_ms": operators,
            "categories": {cat: {"ms": v, "share": v / step_ms} for cat, v in ms.items()},
            "rest_operators": [[name, v] for name, v in rest.most_common(5)]}


def profile_step(step, device) -> dict:
    """One call of step() under torch's profiler, tallied by category (tally)."""
    from torch.profiler import ProfilerActivity, profile

    on_device = device.type == "cuda"
    sync(device)
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_device else [])) as prof:
        started = time.perf_counter()
        step()
        sync(device)
        wall = time.perf_counter() - started
    return tally(prof.events(), wall, 1, on_device)


def median_tally(tallies: list[dict]) -> dict:
    """Several steps' tallies as one: each named category's median milliseconds, the median step, and the rest
    what the named categories leave of it; so a moment the machine took from one step moves no category."""
    named = {cat: statistics.median(t["categories"][cat]["ms"] for t in tallies) for cat in CATEGORIES[:-1]}
    step_ms = max(statistics.median(t["step_ms"] for t in tallies), sum(named.values()))
    ms = {**named, "rest": step_ms - sum(named.values())}
    rest = Counter()
    for t in tallies:
        rest.update({name: v / len(tallies) for name, v in t["rest_operators"]})
    return {"steps": len(tallies), "step_ms": step_ms, "step_ms_each": [t["step_ms"] for t in tallies],
            "operators_ms": statistics.median(t["operators_ms"] for t in tallies),
            "categories": {cat: {"ms": v, "share": v / step_ms} for cat, v in ms.items()},
            "rest_operators": [[name, v] for name, v in rest.most_common(5)]}


def breakdown(step, device, steps: int = 5) -> dict:
    """Where the time of a call of step() goes, by category: `steps` calls, each profiled on its own, their
    median (median_tally)."""
    return median_tally([profile_step(step, torch.device(device)) for _ in range(steps)])


@dataclass(frozen=True)
class Shape:
    """A tensor argument as a replay needs it: its layout, not its values (a leaf to tree_map, not a tuple)."""
    shape: tuple
    stride: tuple
    dtype: torch.dtype
    device: torch.device


class _Recorder(TorchDispatchMode):
    """Counts the calls of the operators in `ops` (aten overload packets), each by its arguments' layouts."""

    def __init__(self, ops: set):
        super().__init__()
        self.ops, self.calls, self.args = ops, Counter(), {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket in self.ops:
            laid = tree_map(lambda a: Shape(tuple(a.shape), a.stride(), a.dtype, a.device)
                            if isinstance(a, torch.Tensor) else a, (args, kwargs))
            key = (func, repr(laid))
            self.calls[key] += 1
            self.args[key] = laid
        return func(*args, **kwargs)


def _materialise(arg, gen: torch.Generator):
    """A tensor laid out as `arg` (a Shape) says, filled with standard normals (zeros for integers); any other
    argument as it is."""
    if not isinstance(arg, Shape):
        return arg
    size = 1 + sum((n - 1) * st for n, st in zip(arg.shape, arg.stride)) if all(arg.shape) else 0
    if arg.dtype.is_floating_point:
        flat = torch.randn(size, generator=gen).to(arg.device, arg.dtype)
    else:
        flat = torch.zeros(size, dtype=arg.dtype, device=arg.device)
    return flat.as_strided(arg.shape, arg.stride)


def alone(step, device, peak=None, repeats: int = ALONE_REPEATS) -> dict:
    """The counted operators of one call of step() (those torch's flop counter counts: matmuls, attention), each
    call replayed alone on fresh tensors of the same layout, nothing else running between: the time they take at
    the step's own shapes. Per category (matmul, attention): the calls, the distinct layouts, their FLOPs, and
    the seconds per step (each layout's median of `repeats` replays, times its calls). `peak` (as matmul()
    returns it) takes its turn in every repeat, so that a share of it is read from the same stretch of time:
    `peak_seconds` is its median, `peak_flops` its FLOPs."""
    device = torch.device(device)
    counter = flop_counter.FlopCounterMode(display=False, custom_mapping=_cpu_attention_formulas())
    with counter, _Recorder(set(counter.flop_registry)) as recorder:
        step()
    flops = Counter()
    for op, n in counter.get_flop_counts().get("Global", {}).items():
        flops[category(str(op).split(".")[-1]) or "rest"] += int(n)
    gen, calls = torch.Generator().manual_seed(0), []
    for key, n in recorder.calls.items():
        args, kwargs = tree_map(lambda a: _materialise(a, gen), recorder.args[key])
        calls.append((category(key[0].overloadpacket.__name__) or "rest", n, key[0], args, kwargs))
    fns = {i: partial(func, *args, **kwargs) for i, (_, _, func, args, kwargs) in enumerate(calls)}
    if peak is not None:
        fns["peak"] = peak[0]
    rounds = interleaved(fns, device, warmup=0, min_rounds=repeats, max_rounds=repeats, max_seconds=math.inf)["rounds"]
    timed, peak_seconds = [rounds[i] for i in range(len(calls))], rounds.get("peak", [])
    out = {}
    for (cat, n, _, _, _), seconds in zip(calls, timed):
        row = out.setdefault(cat, {"calls": 0, "layouts": 0, "flops": flops[cat], "seconds": 0.0})
        row["calls"] += n
        row["layouts"] += 1
        row["seconds"] += n * statistics.median(seconds)
    return {"repeats": repeats, "categories": out,
            "peak_seconds": statistics.median(peak_seconds) if peak_seconds else None,
            "peak_flops": peak[1] if peak is not None else None}
