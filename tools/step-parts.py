#!/usr/bin/env python3
"""The parts of a training step that count no FLOPs, or count them slowly, timed alone against what could
replace them: attention (SDPA's flash kernel, its math kernel, the explicit score-mask-softmax-mix), the loss and
GELU (eager, and compiled by inductor, which fuses their passes over memory). Forward and backward, one thread,
at L9's shapes by default, interleaved round by round; each alternative's speed is printed as a ratio to the
first of its group (the median of the per-round ratios), never as a lone time.

    python tools/step-parts.py                   # L9 at quick's batch: 32 x 128, width 128, 4 heads, vocab 1024
    python tools/step-parts.py --no-compile      # without inductor (it needs a C++ compiler and takes a minute)
    python tools/step-parts.py --batch 2 --context 16 --width 32 --vocab 64 --rounds 3   # a quick check
"""
from __future__ import annotations

import argparse
import math
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from attnlab.bench.harness import interleaved


def groups(B: int, T: int, d: int, H: int, V: int, compiled: bool) -> dict[str, dict]:
    """Each part's alternatives, as calls doing one forward and backward on fixed inputs."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, d // H, generator=gen).requires_grad_() for _ in range(3))
    g = torch.randn(B, H, T, d // H, generator=gen)
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    logits = torch.randn(B * T, V, generator=gen).requires_grad_()
    targets = torch.randint(V, (B * T,), generator=gen)
    hidden = torch.randn(B * T, 4 * d, generator=gen).requires_grad_()

    def sdpa(backend):
        def call():
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
        return call

    def explicit():
        scores = (q @ k.transpose(-2, -1)) / (d // H) ** 0.5
        (scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v).backward(g)

    out = {"attention": {"flash (SDPA)": sdpa(SDPBackend.FLASH_ATTENTION), "math (SDPA)": sdpa(SDPBackend.MATH),
                         "explicit": explicit},
           "loss": {"eager": lambda: F.cross_entropy(logits, targets).backward()},
           "gelu": {"eager": lambda: F.gelu(hidden).sum().backward()}}
    if compiled:
        loss, gelu = torch.compile(F.cross_entropy), torch.compile(lambda x: F.gelu(x).sum())
        out["loss"]["compiled"] = lambda: loss(logits, targets).backward()
        out["gelu"]["compiled"] = lambda: gelu(hidden).backward()
    return out


def main(argv=None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--no-compile", action="store_true")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    parts = groups(a.batch, a.context, a.width, a.heads, a.vocab, not a.no_compile)
    fns = {(part, name): call for part, alts in parts.items() for name, call in alts.items()}
    # one untimed round first: allocation, and compilation where it compiles
    seconds = interleaved(fns, "cpu", warmup=1, min_rounds=a.rounds, max_rounds=a.rounds,
                          max_seconds=math.inf)["rounds"]
    ratios = {}
    for part, alts in parts.items():
        first = seconds[part, next(iter(alts))]
        ratios[part] = {name: statistics.median(f / s for f, s in zip(first, seconds[part, name])) for name in alts}
        shown = ", ".join(f"{name} ×{r:.2f}" for name, r in ratios[part].items())
        print(f"{part} (forward and backward, {a.rounds} rounds, speed against the first): {shown}")
    return ratios


if __name__ == "__main__":
    main()
