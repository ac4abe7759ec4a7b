"""E6, S7 and S8: what one attention layer costs as the sequence grows, computed five ways.

One causal SelfAttention (width d, h heads, batch B) forward, for n doubling through the profile's sizes:
    naive   the core's explicit path: scores, mask, softmax, mix; the (h, n, n) weights exist in memory
    sdpa    F.scaled_dot_product_attention, PyTorch's fused kernel (flash or memory-efficient on a GPU)
    tiled   attnlab.nn.tiled: exact attention in tiles with an online softmax, never holding n x n
    window  attnlab.nn.approx: a sliding window plus global tokens (Longformer), approximate
    favor   attnlab.nn.approx: positive orthogonal random features (Performer's FAVOR+), approximate
and, apart, the four projections alone (q, k, v, out), which grow linearly in n. Every timing goes through
attnlab.bench.harness (median, 20th/80th percentiles, spread, peak memory, FLOP/s, NVML on a GPU). A method
that runs out of memory gets a row saying so, with the bytes its score matrix would have taken, and is not
tried at larger n; the others go on. On the CPU a size above `cost.max_n_cpu` is not run: every method (and the
projections) gets a row saying so, with the reason, as an out-of-memory row does, and no number.

Output (results/<profile>/cost/result.json): rows (one per n and method; `oom`, or `not_run` with the reason, where
nothing was measured), projections (one per n), not_run (why the sizes above the CPU's cap were not run, or
null), slopes
(log-log, over the last four rows each method completed; time with its standard error from the residuals),
longest (the largest n each method reached), approximation_errors (S8: the two approximations' relative error
as their window or features grow, over several draws of the inputs: per size the mean with its standard
error; per method the shrink from the first size to the last and the log-log rate, each with its error),
settings, device facts, method, provenance.
"""
from __future__ import annotations

import torch

from attnlab import provenance
from attnlab.bench.harness import attention_flops, measure, setup
from attnlab.bench.nvml import device_facts
from attnlab.experiments.cost.settings import COST_METHODS, SLOPE_ROWS, check_section, ran
from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.model import SelfAttention
from attnlab.nn.approx import errors_against_exact, favor_attention, summarise_errors, window_attention
from attnlab.nn.tiled import tiled_attention
from attnlab.stats import log_fit


def core(method: str, s: dict):
    """The attention core of one method, with the profile's `cost` settings: (q, k, v) -> out, (B, h, n, d/h)."""
    block = s["block"]
    if method == "naive":
        return lambda q, k, v: attention(q, k, v, causal=True, need_weights=True)[0]
    if method == "sdpa":
        return lambda q, k, v: attention(q, k, v, causal=True, need_weights=False)[0]
    if method == "tiled":
        return lambda q, k, v: tiled_attention(q, k, v, causal=True, block=block)
    if method == "window":
        return lambda q, k, v: window_attention(q, k, v, window=s["window"], n_global=s["n_global"], block=block)
    if method == "favor":
        return lambda q, k, v: favor_attention(q, k, v, features=s["features"], seed=0, block=block)
    raise AttnlabError(f"cost.methods: unknown method '{method}' (known: {', '.join(COST_METHODS)})")


def layer_forward(attn: SelfAttention, x: torch.Tensor, method: str, s: dict) -> torch.Tensor:
    q, k, v = attn.project(x, x)                       # (B, h, n, d/h) each
    out = core(method, s)(q, k, v)                     # (B, h, n, d/h)
    B, H, n, dh = out.shape
    return attn.out(out.transpose(1, 2).reshape(B, n, H * dh))  # (B, n, d)


def time_method(attn: SelfAttention, x: torch.Tensor, method: str, s: dict, timing: dict,
                peak_flops: float | None) -> dict:
    """The harness's record of one method's layer forward at this x (an out-of-memory record included)."""
    B, n, d = x.shape
    return measure(lambda: layer_forward(attn, x, method, s), x.device, **timing,
                   flops=attention_flops(B, n, attn.n_heads, d // attn.n_heads, causal=True), peak_flops=peak_flops)


def projections(attn: SelfAttention, x: torch.Tensor) -> torch.Tensor:
    q, k, v = attn.project(x, x)
    return attn.out(v.transpose(1, 2).reshape(x.shape))  # the same four matmuls, no attention between


def max_diffs(attn: SelfAttention, s: dict, device, dtype, seed: int) -> dict:
    """Each method's largest |output - naive output| at the first size: the exact ones compute the same layer
    (the approximations' differences are their error, measured properly by approximation_errors)."""
    x = torch.randn(s["batch_size"], s["sizes"][0], s["d_model"], generator=torch.Generator().manual_seed(seed + 1))
    x = x.to(device, dtype)
    with torch.inference_mode():
        want = layer_forward(attn, x, "naive", s)
        return {m: (layer_forward(attn, x, m, s) - want).abs().max().item() for m in s["methods"]}


def approximation_errors(s: dict, seed: int) -> dict:
    """S8: ||approx - exact|| / ||exact|| of the attention outputs, as the window and the number of random
    features grow, over `errors.seeds` draws: each draw a new random (q, k, v) and, for FAVOR+, new features.
    Inputs: unit Gaussian entries, so that the scaled scores have standard deviation 1, in float64 on the CPU
    (the error is the method's, not the arithmetic's). Per size the mean over draws with its standard error;
    per method the ratio of the last size's error to the first's and the log-log slope of error on size, each a
    mean over draws with its standard error."""
    e, dh = s["errors"], s["d_model"] // s["heads"]
    draws = []
    for r in range(e["seeds"]):
        g = torch.Generator().manual_seed(seed + r)
        q, k, v = (torch.randn(1, s["heads"], e["n"], dh, generator=g, dtype=torch.float64) for _ in range(3))
        draws.append(errors_against_exact(q, k, v, windows=e["windows"], features=e["features"],
                                          n_global=s["n_global"], block=s["block"], seed=seed + r))
    return {"n": e["n"], "head_dim": dh, "heads": s["heads"], "draws": e["seeds"],
            "inputs": "q, k, v with unit Gaussian entries, float64, causal; new inputs and features at every draw",
            **summarise_errors(draws, e["windows"], e["features"])}


def slope(ns: list[int], ys: list[float]) -> dict | None:
    """Log-log slope over the last SLOPE_ROWS points with y > 0, with its standard error from the residuals
    ({"slope", "se"}; se None from two points; None with fewer than two)."""
    fit = log_fit(ns, ys, SLOPE_ROWS)
    return None if fit is None else {"slope": fit["slope"], "se": fit["se"]}


def slopes(rows: list[dict]) -> dict:
    """A method's log-log slopes over its last SLOPE_ROWS sizes: time with its standard error, and memory."""
    ns = [r["n"] for r in rows]
    t, mem = slope(ns, [r["median_ms"] for r in rows]), slope(ns, [r["peak_bytes"] for r in rows])
    return {"time": t and t["slope"], "time_se": t and t["se"], "memory": mem and mem["slope"]}


def cap(s: dict, device: torch.device) -> int | None:
    """The largest n this device is asked to run: `cost.max_n_cpu` on a CPU, no cap on a GPU."""
    return s["max_n_cpu"] if device.type == "cpu" else None


def above_cap(n: int, most: int) -> str:
    """Why size n is not run on this CPU."""
    return f"n = {n} is above cost.max_n_cpu = {most}, the largest n a CPU is asked to run"


def not_run_rows(n: int, methods: list[str], most: int, score_bytes: int) -> list[dict]:
    """One row per method at a size the CPU does not run, shaped as an out-of-memory row: no numbers, the reason."""
    why = above_cap(n, most)
    return [{"oom": False, "not_run": why, "n": n, "method": m, "score_bytes": score_bytes} for m in methods]


def skipped(sizes: list[int], most: int | None) -> str | None:
    """The sizes a CPU did not run and why, in one sentence (None where it ran them all)."""
    over = [n for n in sizes if most is not None and n > most]
    if not over:
        return None
    listed = ", ".join(map(str, over[:-1])) + (" and " if len(over) > 1 else "") + str(over[-1])
    return (f"n = {listed} {'are' if len(over) > 1 else 'is'} above cost.max_n_cpu = {most}, the largest n a CPU "
            "is asked to run")


def sweep_size(attn: SelfAttention, x: torch.Tensor, s: dict, timing: dict, peak_flops: float | None,
               stopped: set) -> tuple[dict, list[dict]]:
    """The projections' record and each method's row at one input x (B, n, d); a method that runs out of memory
    joins `stopped` (larger n would only fail again)."""
    (B, n, d), h, device = x.shape, s["heads"], x.device
    rows = []
    with torch.inference_mode():
        p = measure(lambda: projections(attn, x), device, **timing, flops=4 * 2 * B * n * d * d)
        for method in (m for m in s["methods"] if m not in stopped):
            r = time_method(attn, x, method, s, timing, peak_flops)
            r.update(n=n, method=method, score_bytes=B * h * n * n * x.element_size())
            rows.append(r)
            if r["oom"]:
                stopped.add(method)
    shown = [f"{r['method']} " + ("out of memory" if r["oom"] else f"{r['median_ms']:.2f} ms") for r in rows]
    print(f"  n={n:6d}: projections {p['median_ms']:.2f} ms; " + ", ".join(shown), flush=True)
    return {"n": n, **p}, rows


def run(s: dict, device: torch.device, seed: int = 0, peak_flops: float | None = None) -> dict:
    check_section(s, on_cpu=device.type == "cpu")
    most = cap(s, device)
    d, h, B, dtype = s["d_model"], s["heads"], s["batch_size"], getattr(torch, s["dtype"])
    torch.manual_seed(seed)
    attn = SelfAttention(d, h, out_proj=True).to(device, dtype).eval()
    timing = {k: s[k] for k in ("warmup", "min_samples", "max_samples", "target_rsd", "max_seconds")}
    rows, proj, stopped = [], [], set()
    agreement = max_diffs(attn, s, device, dtype, seed)
    for n in s["sizes"]:
        if most is not None and n > most:
            rows += not_run_rows(n, [m for m in s["methods"] if m not in stopped], most,
                                 B * h * n * n * torch.empty((), dtype=dtype).element_size())
            proj.append({"oom": False, "not_run": above_cap(n, most), "n": n})
            print(f"  n={n:6d}: not run here ({above_cap(n, most)})", flush=True)
            continue
        x = torch.randn(B, n, d, generator=torch.Generator().manual_seed(seed)).to(device, dtype)  # (B, n, d)
        p, measured_rows = sweep_size(attn, x, s, timing, peak_flops, stopped)
        proj.append(p)
        rows += measured_rows
    for method in s["methods"]:  # ratio to the previous n, for time and memory
        prev = None
        for r in (r for r in rows if r["method"] == method and ran(r)):
            if prev:
                r["time_ratio"] = r["median_ms"] / prev["median_ms"]
                r["memory_ratio"] = (r["peak_bytes"] / prev["peak_bytes"]) if r["peak_bytes"] and prev["peak_bytes"] else None
            prev = r
    memory = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None
    done = {m: [r for r in rows if r["method"] == m and ran(r)] for m in s["methods"]}
    measured = [p for p in proj if ran(p)]
    return {
        "settings": s, "rows": rows, "projections": proj,
        "slopes": {m: slopes(rs) for m, rs in done.items()},
        "projection_slope": (slope([p["n"] for p in measured], [p["median_ms"] for p in measured]) or {}).get("slope"),
        "not_run": skipped(s["sizes"], most),
        "longest": {m: max((r["n"] for r in rs), default=None) for m, rs in done.items()},
        "oom": {m: next((r["n"] for r in rows if r["method"] == m and r["oom"]), None) for m in s["methods"]},
        # the bytes of the (B, h, n, n) scores at the first n a method ran out of memory, over the device's memory
        "oom_score_share": {m: next((r["score_bytes"] / memory for r in rows if r["method"] == m and r["oom"]), None)
                            if memory else None for m in s["methods"]},
        "device_memory_bytes": memory,
        "max_abs_diff_vs_naive": agreement,
        "approximation_errors": approximation_errors(s, seed),
        "device": provenance.device_name(device), "gpu": device_facts() if device.type == "cuda" else None,
        "threads": torch.get_num_threads(), "peak_flops": peak_flops,
        "method": (f"one causal SelfAttention(d={d}, h={h}, out_proj=True) forward in {s['dtype']}, batch {B}, "
                   "under torch.inference_mode, timed by attnlab.bench.harness.measure; FLOPs by FlashAttention's "
                   "convention (4·B·n²·h·d_head, halved as causal); peak memory as the harness names it"),
    }


def main(cfg: dict, out_path) -> dict:
    cfg, device = setup(cfg)  # the schema's defaults filled, the device chosen, threads set
    s = cfg["cost"]
    peak = peak_flops(cfg, device, s["dtype"])
    return provenance.measured(cfg, out_path, lambda: run(s, device, seed=cfg["seed"], peak_flops=peak),
                               device=device)


def peak_flops(cfg: dict, device: torch.device, dtype: str) -> float | None:
    """The device's peak FLOP/s for `dtype` from the profile's `devices` table (None when it is not listed)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for key, entry in (cfg.get("devices") or {}).items():
        if key.lower() in name.lower() and entry.get(f"{dtype}_tflops"):
            return entry[f"{dtype}_tflops"] * 1e12
    return None
