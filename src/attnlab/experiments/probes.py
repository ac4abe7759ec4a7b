"""Attention probes: callbacks of the one training loop that watch what the softmax is doing (C3.5)."""
from __future__ import annotations

import math

import torch

from attnlab.nn.model import SelfAttention, attention_kept
from attnlab.train import windows

SATURATED = 0.99  # a row is saturated when one key takes more than this share of its weight


class AttentionProbe:
    """Every `every` steps, run a fixed batch and record, per attention layer:
    the std of the scores the softmax sees (visible positions only), the mean entropy of the
    attention rows (nats), and the fraction of rows whose largest weight exceeds SATURATED."""

    def __init__(self, tokens: torch.Tensor, context: int, every: int, n_windows: int = 8):
        self.batch, _ = windows(tokens, context, n_windows)
        self.every = every

    @torch.no_grad()
    def __call__(self, step: int, model, loss: float) -> dict | None:
        if step % self.every:
            return None
        if not any(isinstance(m, SelfAttention) for m in model.modules()):
            return None
        row = {"loss": loss if math.isfinite(loss) else None}
        for i, kept in enumerate(attention_kept(model, self.batch.to(next(model.parameters()).device))):
            row.update({f"{key}_{i}": value for key, value in summarise(kept).items()})
        return row


def summarise(kept: dict) -> dict:
    scores, weights, allowed = kept["scores"], kept["weights"], kept["allowed"]
    visible = scores if allowed is None else scores.masked_select(allowed.expand_as(scores))
    entropy = -(weights * weights.clamp_min(1e-30).log()).sum(-1)  # (B, H, T)
    return {
        "score_std": visible.float().std().item(),
        "entropy": entropy.mean().item(),
        "saturated": (weights.max(-1).values > SATURATED).float().mean().item(),
    }


def max_entropy(context: int) -> float:
    """Mean entropy of uniform causal rows: what an untrained, perfectly flat head would show."""
    return sum(math.log(t + 1) for t in range(context)) / context


class GradNormProbe:
    """Gradient norm of each block's parameters: at step 0 from one backward pass on a fixed batch
    (before any update), then from the gradients each of the first `first` steps left behind."""

    def __init__(self, tokens: torch.Tensor, context: int, first: int, n_windows: int = 8):
        self.x, self.y = windows(tokens, context, n_windows)
        self.first = first

    def __call__(self, step: int, model, loss: float) -> dict | None:
        if step > self.first:
            return None
        if step == 0:
            device = next(model.parameters()).device
            model.zero_grad(set_to_none=True)
            _, batch_loss = model(self.x.to(device), self.y.to(device))
            batch_loss.backward()
            row = block_grad_norms(model)
            model.zero_grad(set_to_none=True)
            return row
        return block_grad_norms(model)


def block_grad_norms(model) -> dict:
    """{'grad_block_1': ||grad||, ...} over each block's parameters, blocks numbered from 1."""
    out = {}
    for i, block in enumerate(model.blocks, start=1):
        grads = [p.grad.flatten() for p in block.parameters() if p.grad is not None]
        out[f"grad_block_{i}"] = torch.cat(grads).norm().item() if grads else float("nan")
    return out
