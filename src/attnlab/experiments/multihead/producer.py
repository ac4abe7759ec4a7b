"""S4: h heads of width d/h cost about what one head of width d costs - FLOPs counted, forward time measured.

One attention layer (the model's SelfAttention, with output projection) of width d on a batch of B
sequences of T tokens, for each head count h. The matrix products do the same arithmetic whatever h is:

    projections  q, k, v, out: 4 x 2 B T d^2
    scores       h heads x 2 B T^2 (d/h) = 2 B T^2 d
    mix          h heads x 2 B T^2 (d/h) = 2 B T^2 d

What does grow with h is the softmax: it runs over B h T^2 scores (`softmax_elements`), so many narrow
heads pay a little more elementwise work and launch the same kernels on smaller matrices.

Timing (attnlab.bench.harness.interleaved): every round runs one forward of every head count, and one of
the attention core alone on the same q, k, v, in an order rotated each round, so a slow spell of the
machine falls on all of them; the figure per h is the median over rounds. Layer minus core splits the time
into the h-independent projections and the core whose elementwise work grows with h. Under
torch.inference_mode; on CUDA timed with CUDA events, with NVML sampled over the rounds.

Output (results/<profile>/multihead/result.json):

    rows       one per h: {heads, head_dim, flops, flops_projections, flops_scores, flops_mix,
               softmax_elements, ms_median, ms_min, ms_max, ratio_to_one_head, ms_core_median}
               ms_median/min/max: milliseconds per forward of the whole layer (ratio_to_one_head is relative to
               h = 1, or to the first head count when 1 is not run); ms_core_median is the attention
               core alone (scores, mask, softmax, mix) on the layer's own q, k, v
    flops_equal        every row has the same matmul FLOPs (bool)
    time_ratio_max_min slowest median / fastest median across h
    time_ratio_se      its standard error: a bootstrap over the timed rounds (each resample keeps a round's head
                       counts together)
    d_model, context, batch_size, heads, repeats, warmup, inner, causal, device, threads,
    nvml (the GPU's clocks and throttle reasons over the rounds; None off a GPU), method, provenance
"""
from __future__ import annotations

import math
import statistics

import torch

from attnlab import provenance
from attnlab.bench.harness import interleaved, setup
from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.model import SelfAttention
from attnlab.stats import bootstrap_se



CORE = "the fast path the layer takes when no weights are kept (F.scaled_dot_product_attention)"


def flops(d: int, T: int, B: int, h: int) -> dict[str, int]:
    """Matmul FLOPs (2 per multiply-add) of one forward; h cancels out of every term."""
    proj = 4 * 2 * B * T * d * d
    scores = h * 2 * B * T * T * (d // h)
    mix = h * 2 * B * T * T * (d // h)
    return {"flops": proj + scores + mix, "flops_projections": proj, "flops_scores": scores, "flops_mix": mix}


def layers(d: int, heads: list[int], device, seed: int) -> dict[int, SelfAttention]:
    out = {}
    for h in heads:
        if d % h:
            raise AttnlabError(f"multihead bench: {h} heads do not divide d_model={d}")
        torch.manual_seed(seed)
        out[h] = SelfAttention(d, h, out_proj=True).to(device).eval()
    return out


def time_heads(mods: dict[int, SelfAttention], x: torch.Tensor, repeats: int, warmup: int,
               inner: int) -> tuple[dict, dict, dict | None]:
    """Seconds per forward for each head count, of the whole layer and of the attention core alone, per round.

    The harness interleaves every head count's layer and core in each round, in an order rotated by one each
    round. The core is timed on the layer's own q, k, v (B, h, T, d/h), so layer minus core is the four
    projections and the reshapes. Each timed call is `inner` back-to-back forwards.
    """
    with torch.inference_mode():
        qkv = {h: (m.split(m.q(x)), m.split(m.k(x)), m.split(m.v(x))) for h, m in mods.items()}

    def repeated(fn):
        def call():
            with torch.inference_mode():
                for _ in range(inner):
                    fn()
        return call

    fns = {}
    for h, m in mods.items():
        fns[("layer", h)] = repeated(lambda m=m: m(x))
        # the core as the layer calls it (no weights wanted: the fast path), so layer - core is the rest
        fns[("core", h)] = repeated(lambda h=h: attention(*qkv[h], causal=True, scale=True, need_weights=False))
    timed = interleaved(fns, x.device, warmup=warmup, min_rounds=repeats, max_rounds=repeats, max_seconds=math.inf)
    per_call = {key: [t / inner for t in ts] for key, ts in timed["rounds"].items()}
    return ({h: per_call[("layer", h)] for h in mods}, {h: per_call[("core", h)] for h in mods}, timed["nvml"])


def ratio_max_min(secs: dict) -> float:
    """Slowest median time / fastest median time across head counts."""
    med = [statistics.median(v) for v in secs.values()]
    return max(med) / min(med)


def run(s: dict, device, seed: int = 0) -> dict:
    """Time every head count of the profile's `multihead` section (defaults filled by the schema)."""
    d, T, B, heads = s["d_model"], s["context"], s["batch_size"], list(s["heads"])
    mods = layers(d, heads, device, seed)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, d, generator=gen).to(device)  # (B, T, d)
    secs, core, nvml = time_heads(mods, x, s["repeats"], s["warmup"], s["inner"])

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
        "time_ratio_max_min": ratio_max_min(secs),
        "time_ratio_se": bootstrap_se(secs, ratio_max_min, seed=seed),
        "device": provenance.device_name(device),
        "threads": torch.get_num_threads(),
        "nvml": nvml,  # the GPU's clocks, power and throttle reasons over the timed rounds (None off a GPU)
        "core": CORE,
        "method": (f"SelfAttention(d={d}, h, out_proj=True), causal, float32, input (B={B}, T={T}, d={d}). "
                   f"{s['warmup']} untimed then {s['repeats']} timed rounds (attnlab.bench.harness.interleaved); "
                   f"each round times one forward (mean of {s['inner']} back-to-back) of every head count and of "
                   "the attention core alone on that layer's q, k, v, in an order rotated by one each round; "
                   "ms_median is the "
                   "median over rounds. FLOPs count the matrix products only (2 per multiply-add); the "
                   "softmax's B*h*T^2 elementwise work is listed apart. time_ratio_se: bootstrap over rounds."),
    }


def main(cfg: dict, out_path) -> dict:
    cfg, device = setup(cfg)  # the schema's defaults filled, the device chosen, threads set
    result = provenance.measured(cfg, out_path, lambda: run(cfg["multihead"], device, seed=cfg["seed"]),
                                 device=device)
    for r in result["rows"]:
        print(f"  {r['heads']:>3} heads of {r['head_dim']:>4}: {r['flops'] / 1e9:.3f} GFLOP, "
              f"{r['ms_median']:8.3f} ms (x{r['ratio_to_one_head']:.2f} of one head)")
    return result
