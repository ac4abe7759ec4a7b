"""S4: h heads of width d/h cost about what one head of width d costs - FLOPs counted, forward time measured.

One attention layer (the model's SelfAttention, with output projection) of width d on a batch of B
sequences of T tokens, for each head count h. The matrix products do the same arithmetic whatever h is:

    projections  q, k, v, out: 4 x 2 B T d^2
    scores       h heads x 2 B T^2 (d/h) = 2 B T^2 d
    mix          h heads x 2 B T^2 (d/h) = 2 B T^2 d

What does grow with h is the softmax: it runs over B h T^2 scores (`softmax_elements`), so many narrow
heads pay a little more elementwise work and launch the same kernels on smaller matrices.

Timing: every round runs one forward of every head count in turn (a rotated order each round), so a slow
spell of the machine falls on all of them; the figure per h is the median over rounds. Each forward of
the layer is followed by one of the attention core alone on the same q, k, v, which splits the time into
the h-independent projections and the core whose elementwise work grows with h. Under
torch.inference_mode; on CUDA each forward is bracketed by synchronize and the NVML clocks are recorded
before and after.

Output (results/<profile>/multihead/result.json):

    rows       one per h: {heads, head_dim, flops, flops_projections, flops_scores, flops_mix,
               softmax_elements, ms_median, ms_min, ms_max, ratio_to_one_head, ms_core_median}
               ms_median/min/max: milliseconds per forward of the whole layer (ratio_to_one_head is relative to
               h = 1, or to the first head count when 1 is not run); ms_core_median is the attention
               core alone (scores, mask, softmax, mix) on the layer's own q, k, v
    flops_equal        every row has the same matmul FLOPs (bool)
    time_ratio_max_min slowest median / fastest median across h
    d_model, context, batch_size, heads, repeats, warmup, inner, causal, device, threads,
    clocks_before, clocks_after, method, provenance
"""
from __future__ import annotations

import statistics
import time

import torch

from attnlab import provenance
from attnlab.config import validate
from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.model import SelfAttention
from attnlab.train import pick_device



CORE = "the fast path the layer takes when no weights are kept (F.scaled_dot_product_attention)"


def flops(d: int, T: int, B: int, h: int) -> dict[str, int]:
    """Matmul FLOPs (2 per multiply-add) of one forward; h cancels out of every term."""
    proj = 4 * 2 * B * T * d * d
    scores = h * 2 * B * T * T * (d // h)
    mix = h * 2 * B * T * T * (d // h)
    return {"flops": proj + scores + mix, "flops_projections": proj, "flops_scores": scores, "flops_mix": mix}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def layers(d: int, heads: list[int], device, seed: int) -> dict[int, SelfAttention]:
    out = {}
    for h in heads:
        if d % h:
            raise AttnlabError(f"multihead bench: {h} heads do not divide d_model={d}")
        torch.manual_seed(seed)
        out[h] = SelfAttention(d, h, out_proj=True).to(device).eval()
    return out


def timed(fn, device, inner: int) -> float:
    """Seconds per call of fn, the mean of `inner` back-to-back calls."""
    sync(device)
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    sync(device)
    return (time.perf_counter() - t0) / inner


def time_heads(mods: dict[int, SelfAttention], x: torch.Tensor, repeats: int, warmup: int,
               inner: int) -> tuple[dict, dict]:
    """Seconds per forward for each head count, of the whole layer and of the attention core alone.

    Rounds interleave the head counts, in an order rotated by one each round. The core is timed on the
    layer's own q, k, v (B, h, T, d/h), so layer minus core is the four projections and the reshapes.
    """
    device = x.device
    order = list(mods)
    layer_s, core_s = {h: [] for h in order}, {h: [] for h in order}
    with torch.inference_mode():
        qkv = {h: (m.split(m.q(x)), m.split(m.k(x)), m.split(m.v(x))) for h, m in mods.items()}
        for r in range(warmup + repeats):
            shift = r % len(order)
            for h in order[shift:] + order[:shift]:
                t_layer = timed(lambda: mods[h](x), device, inner)
                # the core as the layer calls it (no weights wanted: the fast path), so layer - core is the rest
                t_core = timed(lambda: attention(*qkv[h], causal=True, scale=True, need_weights=False), device,
                               inner)
                if r >= warmup:
                    layer_s[h].append(t_layer)
                    core_s[h].append(t_core)
    return layer_s, core_s


def run(s: dict, device, seed: int = 0) -> dict:
    """Time every head count of the profile's `multihead` section (defaults filled by the schema)."""
    d, T, B, heads = s["d_model"], s["context"], s["batch_size"], list(s["heads"])
    mods = layers(d, heads, device, seed)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, d, generator=gen).to(device)  # (B, T, d)
    clocks_before = provenance.gpu_clocks(device)
    secs, core = time_heads(mods, x, s["repeats"], s["warmup"], s["inner"])
    clocks_after = provenance.gpu_clocks(device)

    med = {h: statistics.median(v) * 1e3 for h, v in secs.items()}
    base = med.get(1, med[heads[0]])
    rows = [{"heads": h, "head_dim": d // h, **flops(d, T, B, h), "softmax_elements": B * h * T * T,
             "ms_median": med[h], "ms_min": min(secs[h]) * 1e3, "ms_max": max(secs[h]) * 1e3,
             "ratio_to_one_head": med[h] / base, "ms_core_median": statistics.median(core[h]) * 1e3}
            for h in heads]
    return {
        "d_model": d, "context": T, "batch_size": B, "heads": heads, "repeats": s["repeats"],
        "warmup": s["warmup"], "inner": s["inner"], "causal": True,
        "rows": rows,
        "flops_equal": len({r["flops"] for r in rows}) == 1,
        "time_ratio_max_min": max(med.values()) / min(med.values()),
        "device": provenance.device_name(device),
        "threads": torch.get_num_threads(),
        "clocks_before": clocks_before, "clocks_after": clocks_after,
        "core": CORE,
        "method": (f"SelfAttention(d={d}, h, out_proj=True), causal, float32, input (B={B}, T={T}, d={d}). "
                   f"{s['warmup']} untimed then {s['repeats']} timed rounds; each round times one forward "
                   f"(mean of {s['inner']} back-to-back) of every head count, in an order rotated by one each "
                   "round, each followed by the attention core alone on that layer's q, k, v; ms_median is the "
                   "median over rounds. FLOPs count the matrix products only (2 per multiply-add); the "
                   "softmax's B*h*T^2 elementwise work is listed apart."),
    }


def main(cfg: dict, out_path) -> dict:
    cfg = validate(cfg, partial=True)  # the schema holds the defaults
    device = pick_device(cfg.get("device", "auto"))
    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    result = provenance.measured(cfg, out_path, lambda: run(cfg["multihead"], device, seed=cfg["seed"]),
                                 device=device)
    for r in result["rows"]:
        print(f"  {r['heads']:>3} heads of {r['head_dim']:>4}: {r['flops'] / 1e9:.3f} GFLOP, "
              f"{r['ms_median']:8.3f} ms (x{r['ratio_to_one_head']:.2f} of one head)")
    return result
