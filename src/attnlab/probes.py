"""Attention probes: callbacks of the one training loop that watch what the softmax is doing (C3.5)."""
from __future__ import annotations

import math

import torch

from attnlab.nn.model import SelfAttention, attention_kept
from attnlab.experiments.depth import settings as depth
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


# Which of a block's parameters (by name inside the block) each definition of settings.depth.GRAD_DEFINITIONS
# takes; the norm of their gradients, concatenated, is the block's gradient norm under it.
QKV = ("mixer.q.weight", "mixer.k.weight", "mixer.v.weight")
TAKES = {"grad_block_": lambda name: True, "grad_qkv_": lambda name: name in QKV,
         "grad_wo_": lambda name: name == "mixer.out.weight"}
GRAD_DEFINITIONS = {prefix: (what, TAKES[prefix]) for prefix, what in depth.GRAD_DEFINITIONS.items()}
STEP0_WINDOWS = 64  # the chapter's batch: the step-0 gradient is read on as many windows as it trains on
CANDIDATES = {**GRAD_DEFINITIONS,  # what else "a block's gradient" could be: tried against the chapter's numbers
              "grad_attn_": ("every attention parameter", lambda name: name.startswith("mixer.")),
              "grad_mlp_": ("every MLP parameter", lambda name: name.startswith("mlp.")),
              "grad_weights_": ("every weight matrix (no biases, no LayerNorm)",
                                lambda name: name.endswith("weight") and not name.startswith("norm")),
              "grad_up_": ("the MLP's up projection (weight)", lambda name: name == "mlp.up.weight"),
              "grad_down_": ("the MLP's down projection (weight; Xiong et al.'s W^2)",
                             lambda name: name == "mlp.down.weight"),
              "grad_norms_": ("the two LayerNorms", lambda name: name.startswith("norm"))}


class GradNormProbe:
    """Gradient norm of each block under every definition of GRAD_DEFINITIONS: at step 0 from one backward pass
    on a fixed batch of `n_windows` windows (before any update), then from the gradients each of the first
    `first` steps left behind."""

    def __init__(self, tokens: torch.Tensor, context: int, first: int, n_windows: int = STEP0_WINDOWS):
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


def init_grad_norms(spec, tokens: torch.Tensor, seed: int, n_windows: int = STEP0_WINDOWS,
                    definitions: dict = CANDIDATES) -> dict:
    """A fresh model of `spec` at `seed` (the training loop's initialisation), one backward pass on the first
    `n_windows` windows of `tokens`: each block's gradient norm under every definition, as the probe records it."""
    from attnlab.train import make_model

    torch.manual_seed(seed)
    model = make_model(spec).train()
    x, y = windows(tokens, spec.context, n_windows)
    model(x, y)[1].backward()
    return block_grad_norms(model, definitions)


def block_grad_norms(model, definitions: dict = GRAD_DEFINITIONS) -> dict:
    """{'grad_block_1': ||grad||, ..., 'grad_qkv_1': ..., 'grad_wo_1': ...}: each block's gradient norm under every
    definition (GRAD_DEFINITIONS), blocks numbered from 1; a definition that takes none of a block's parameters
    (a block without attention or without W_o) records nothing for it, the whole block NaN without gradients."""
    out = {}
    for prefix, (_, takes) in definitions.items():
        for i, block in enumerate(model.blocks, start=1):
            taken = [p for name, p in block.named_parameters() if takes(name)]
            grads = [p.grad.flatten() for p in taken if p.grad is not None]
            if taken or prefix == "grad_block_":
                out[f"{prefix}{i}"] = torch.cat(grads).norm().item() if grads else float("nan")
    return out
