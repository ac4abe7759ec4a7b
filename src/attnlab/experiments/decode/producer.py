"""S5 and S6 at inference: what a KV cache saves when decoding, and what sharing key/value heads saves in it.

Greedy decoding (attnlab.nn.model.generate) of n new tokens after a prompt, for n through the profile's
lengths, with the cache (each step feeds one token) and without (each step recomputes the whole sequence),
timed by attnlab.bench.harness, for two models: the chapter's width, and a wider, deeper one where the cache
is large. The wide model is also decoded with grouped (GQA) and shared (MQA) key/value heads. For each model
the cache's bytes per token are computed from the formula (2 · blocks · kv-heads · d_head · bytes) and
measured from the cache itself after decoding.

Whether the cache's speedup grows with length is a fitted slope: per configuration, the log of the speedup
against the log of n, by least squares. Each speedup's error comes from the repeats of its two timings (the
median's standard error, 1.25 · rsd / √samples, of each); the slope's error is the larger of the fit's residual
error (with three lengths or more) and those timing errors carried through the fit.

Output (results/<profile>/decode/result.json): rows (model, kv_heads, n, cached, tokens_per_s, ...),
cache (bytes per token, formula and measured, per model and kv-head count), speedup_at_longest (cached /
recomputed tokens/s at the longest n) with speedup_se_at_longest, speedup_slope (per configuration: slope,
se, se_fit, se_timing, lengths, speedups), settings, method, provenance.
"""
from __future__ import annotations

import math

import torch

from attnlab import provenance
from attnlab.bench.harness import measure, setup
from attnlab.experiments.decode.settings import check_section
from attnlab.nn.model import build, generate
from attnlab.nn.spec import ModelSpec
from attnlab.stats import fit_line

MEDIAN_SE = math.sqrt(math.pi / 2)  # a median's standard error over a mean's, for normal samples


def spec_of(model: dict, kv_heads: int | None, vocab: int, longest: int) -> ModelSpec:
    return ModelSpec(**{"vocab_size": vocab, "position": "rope", "mixer": "multihead", "norm": "pre", **model,
                        "context": longest, "n_kv_heads": kv_heads})


def cache_bytes(lm, prompt: torch.Tensor, n: int) -> int:
    """Bytes the KV cache holds after decoding n tokens after `prompt`, divided by the tokens it covers."""
    cache = {}
    with torch.no_grad():
        lm(prompt, cache=cache)
        for _ in range(n):
            lm(prompt[:, -1:], cache=cache)
    held = sum(t.numel() * t.element_size() for block in cache["blocks"] for t in (block["k"], block["v"]))
    return held // (cache["length"] * prompt.size(0))


def log_time_se(row: dict) -> float | None:
    """Standard error of the log of a timing's median, from its repeats (None from a single sample)."""
    return MEDIAN_SE * row["rsd"] / math.sqrt(row["samples"]) if row["samples"] > 1 else None


def speedup_at(rows: list[dict]) -> dict[str, dict[int, tuple[float, float | None]]]:
    """Configuration ('model/kv_heads') -> n -> (cached over recomputed tokens/s, the standard error of its log);
    a length where either timing ran out of memory is left out."""
    out = {}
    for r in rows:
        if not r["cached"] or r["tokens_per_s"] is None:
            continue
        full = next(f for f in rows if not f["cached"] and f["n"] == r["n"] and f["model"] == r["model"]
                    and f["kv_heads"] == r["kv_heads"])
        if full["tokens_per_s"] is None:
            continue
        ses = [log_time_se(r), log_time_se(full)]
        se = math.hypot(*ses) if None not in ses else None
        out.setdefault(f"{r['model']}/{r['kv_heads']}", {})[r["n"]] = (r["tokens_per_s"] / full["tokens_per_s"], se)
    return out


def growth(points: dict[int, tuple[float, float | None]]) -> dict | None:
    """The slope of log speedup against log n, with its standard error: the larger of the fit's residual error
    and the timings' errors carried through the fit (Σ (x − x̄)² σ² / Sxx²). None with fewer than two lengths."""
    ns = sorted(points)
    if len(ns) < 2:
        return None
    xs, ys = [math.log(n) for n in ns], [math.log(points[n][0]) for n in ns]
    fit = fit_line(xs, ys)
    mx = sum(xs) / len(xs)
    sxx = sum((x - mx) ** 2 for x in xs)
    sigmas = [points[n][1] for n in ns]
    timing = (math.sqrt(sum((x - mx) ** 2 * sg ** 2 for x, sg in zip(xs, sigmas))) / sxx
              if None not in sigmas else None)
    known = [e for e in (fit["se"], timing) if e is not None]
    return {"slope": fit["slope"], "se": max(known) if known else None, "se_fit": fit["se"], "se_timing": timing,
            "lengths": ns, "speedups": [points[n][0] for n in ns]}


def run(s: dict, device: torch.device, seed: int = 0) -> dict:
    check_section(s)
    lengths, longest = s["lengths"], s["prompt"] + s["lengths"][-1]
    timing = {k: s[k] for k in ("warmup", "min_samples", "max_samples", "target_rsd", "max_seconds")}
    prompt = torch.randint(0, s["vocab_size"], (s["batch_size"], s["prompt"]),
                           generator=torch.Generator().manual_seed(seed)).to(device)  # (B, prompt)
    rows, caches = [], []
    for name, model in s["models"].items():
        for kv in s["kv_heads"].get(name) or [None]:
            torch.manual_seed(seed)
            spec = spec_of(model, kv, s["vocab_size"], longest)
            lm = build(spec).to(device).eval()
            caches.append({"model": name, "kv_heads": spec.kv_heads, "formula_bytes": spec.cache_bytes_per_token(),
                           "measured_bytes": cache_bytes(lm, prompt, 4)})
            for n in lengths:
                for cached in (True, False):
                    r = measure(lambda: generate(lm, prompt, n, use_cache=cached), device, **timing, memory=False)
                    r.update(model=name, kv_heads=spec.kv_heads, n=n, cached=cached,
                             tokens_per_s=s["batch_size"] * n / (r["median_ms"] / 1e3) if not r["oom"] else None)
                    rows.append(r)
            print(f"  {name}, {spec.kv_heads} kv heads: " + ", ".join(
                f"n={r['n']} {'cache' if r['cached'] else 'full'} {r['tokens_per_s']:.0f} tok/s"
                for r in rows[-2 * len(lengths):] if r["n"] == lengths[-1]), flush=True)
    at = speedup_at(rows)
    longest = {key: pts[lengths[-1]] for key, pts in at.items() if lengths[-1] in pts}
    return {"settings": s, "rows": rows, "cache": caches,
            "speedup_at_longest": {key: v for key, (v, _) in longest.items()},
            "speedup_se_at_longest": {key: v * se if se is not None else None for key, (v, se) in longest.items()},
            "speedup_slope": {key: growth(pts) for key, pts in at.items()},
            "device": provenance.device_name(device), "threads": torch.get_num_threads(),
            "method": ("greedy decoding (attnlab.nn.model.generate) of n tokens after a random prompt, with the KV "
                       "cache and by full recomputation, timed by attnlab.bench.harness.measure under no_grad; "
                       "tokens/s = batch · n / median seconds; cache bytes per token measured from the cache's "
                       "tensors after decoding, beside 2 · blocks · kv-heads · d_head · 4 bytes; the speedup's "
                       "growth is the least-squares slope of log speedup on log n, its error the larger of the "
                       "residuals' and the timings' (1.25 · rsd / √samples per median)")}


def main(cfg: dict, out_path) -> dict:
    cfg, device = setup(cfg)  # the schema's defaults filled, the device chosen, threads set
    return provenance.measured(cfg, out_path, lambda: run(cfg["decode"], device, seed=cfg["seed"]), device=device)
