"""S5 and S6 at inference: what a KV cache saves when decoding, and what sharing key/value heads saves in it.

Greedy decoding (attnlab.nn.model.generate) of n new tokens after a prompt, for n through the profile's
lengths, with the cache (each step feeds one token) and without (each step recomputes the whole sequence),
timed by attnlab.bench.harness, for two models: the chapter's width, and a wider, deeper one where the cache
is large. The wide model is also decoded with grouped (GQA) and shared (MQA) key/value heads. For each model
the cache's bytes per token are computed from the formula (2 · blocks · kv-heads · d_head · bytes) and
measured from the cache itself after decoding.

Output (results/<profile>/decode/result.json): rows (model, kv_heads, n, cached, tokens_per_s, ...),
cache (bytes per token, formula and measured, per model and kv-head count), speedup (cached / recomputed
tokens/s at the longest n), settings, method, provenance.
"""
from __future__ import annotations

import torch

from attnlab import provenance
from attnlab.bench.harness import measure, setup
from attnlab.bench.settings import check_decode
from attnlab.nn.model import build, generate
from attnlab.nn.spec import ModelSpec


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


def run(s: dict, device: torch.device, seed: int = 0) -> dict:
    check_decode(s)
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
    speedup = {}
    for r in rows:
        if r["cached"] and r["n"] == lengths[-1]:
            full = next(f for f in rows if not f["cached"] and f["n"] == r["n"] and f["model"] == r["model"]
                        and f["kv_heads"] == r["kv_heads"])
            speedup[f"{r['model']}/{r['kv_heads']}"] = r["tokens_per_s"] / full["tokens_per_s"]
    return {"settings": s, "rows": rows, "cache": caches, "speedup_at_longest": speedup,
            "device": provenance.device_name(device), "threads": torch.get_num_threads(),
            "method": ("greedy decoding (attnlab.nn.model.generate) of n tokens after a random prompt, with the KV "
                       "cache and by full recomputation, timed by attnlab.bench.harness.measure under no_grad; "
                       "tokens/s = batch · n / median seconds; cache bytes per token measured from the cache's "
                       "tensors after decoding, beside 2 · blocks · kv-heads · d_head · 4 bytes")}


def main(cfg: dict, out_path) -> dict:
    cfg, device = setup(cfg)  # the schema's defaults filled, the device chosen, threads set
    return provenance.measured(cfg, out_path, lambda: run(cfg["decode"], device, seed=cfg["seed"]), device=device)
