"""Every model of the chapter, built from a ModelSpec: embeddings -> blocks -> linear to the vocabulary."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.spec import ModelSpec


class Average(nn.Module):
    """Uniform causal average of the prefix: attention whose scores are all equal (zero)."""

    def forward(self, x):  # (B, T, d) -> (B, T, d)
        B, T, _ = x.shape
        zeros = x.new_zeros(B, 1, T, 1)
        out, _ = attention(zeros, zeros, x.unsqueeze(1), causal=True, scale=False)
        return out.squeeze(1)


class SelfAttention(nn.Module):
    """h learned heads; with out_proj=False and one head it is the chapter's single head.

    Queries and keys have width d_k per head (default d_model / h); values keep d_model / h, so the
    heads concatenate back to d_model whatever d_k is.
    """

    def __init__(self, d_model: int, n_heads: int, out_proj: bool, scale: bool = True, bias: bool = True,
                 d_k: int | None = None, qkv_bias: bool | None = None):
        super().__init__()
        if d_model % n_heads:
            raise AttnlabError(f"n_heads={n_heads} does not divide d_model={d_model}")
        self.n_heads, self.scale, self.d_k = n_heads, scale, d_k or d_model // n_heads
        qkv_bias = bias if qkv_bias is None else qkv_bias
        self.q = nn.Linear(d_model, n_heads * self.d_k, bias=qkv_bias)
        self.k = nn.Linear(d_model, n_heads * self.d_k, bias=qkv_bias)
        self.v = nn.Linear(d_model, d_model, bias=qkv_bias)
        self.out = nn.Linear(d_model, d_model, bias=bias) if out_proj else nn.Identity()
        self.kept = None  # scores and weights of the last call, only while keep_weights is set (probes)
        self.keep_weights = False

    def split(self, x):  # (B, T, H*w) -> (B, H, T, w)
        B, T, d = x.shape
        return x.view(B, T, self.n_heads, d // self.n_heads).transpose(1, 2)

    def forward(self, x, context=None, causal=True, mask=None):
        src = x if context is None else context  # cross-attention reads keys/values from `context`
        self.kept = {} if self.keep_weights else None
        out, _ = attention(self.split(self.q(x)), self.split(self.k(src)), self.split(self.v(src)),
                           causal=causal, scale=self.scale, mask=mask, keep=self.kept)
        B, H, T, dh = out.shape
        return self.out(out.transpose(1, 2).reshape(B, T, H * dh))


class MLP(nn.Module):
    def __init__(self, d_model: int, ratio: int, bias: bool = True):
        super().__init__()
        self.up = nn.Linear(d_model, ratio * d_model, bias=bias)
        self.down = nn.Linear(ratio * d_model, d_model, bias=bias)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def make_mixer(spec: ModelSpec) -> nn.Module | None:
    if spec.mixer == "none":
        return None
    if spec.mixer == "average":
        return Average()
    return SelfAttention(spec.d_model, spec.heads, out_proj=spec.mixer == "multihead", scale=spec.scale,
                         bias=spec.bias, d_k=spec.d_k, qkv_bias=spec.qkv_bias)


def make_norm(spec: ModelSpec) -> nn.Module:
    return nn.LayerNorm(spec.d_model) if spec.norm == "pre" else nn.Identity()


class Block(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.residual = spec.residual
        self.mixer = make_mixer(spec)
        self.norm1 = make_norm(spec) if self.mixer is not None else nn.Identity()
        self.mlp = MLP(spec.d_model, spec.mlp_ratio, spec.bias) if spec.mlp else None
        self.norm2 = make_norm(spec) if self.mlp is not None else nn.Identity()

    def forward(self, x):  # (B, T, d) -> (B, T, d)
        if self.mixer is not None:
            mixed = self.mixer(self.norm1(x))
            x = x + mixed if self.residual else mixed
        if self.mlp is not None:
            x = x + self.mlp(self.norm2(x))
        return x


class LM(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        self.tok = nn.Embedding(spec.vocab_size, spec.d_model)
        self.pos = nn.Embedding(spec.positions, spec.d_model) if spec.position == "learned" else None
        self.blocks = nn.ModuleList(Block(spec) for _ in range(spec.n_blocks))
        self.norm = make_norm(spec)
        self.head = nn.Linear(spec.d_model, spec.vocab_size, bias=not spec.tie_embeddings)
        if spec.tie_embeddings:
            self.head.weight = self.tok.weight

    def forward(self, idx, targets=None):
        """idx: (B, T) token ids -> logits (B, T, V), and the mean cross-entropy when targets are given."""
        T = idx.size(1)
        x = self.tok(idx)  # (B, T, d)
        if self.pos is not None:
            if T > self.pos.num_embeddings:
                raise AttnlabError(f"sequence of {T} tokens is longer than the position table "
                                   f"({self.pos.num_embeddings} rows)")
            x = x + self.pos(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def build(spec: ModelSpec) -> LM:
    return LM(spec)


def param_breakdown(model: LM) -> dict[str, int]:
    """Parameters by role; sums to the model's total."""
    parts = {"embedding": 0, "position": 0, "mixer": 0, "mlp": 0, "norm": 0, "head": 0}
    for name, p in model.named_parameters():
        if name.startswith("tok."):
            key = "embedding"
        elif name.startswith("pos."):
            key = "position"
        elif name.startswith("head."):
            key = "head"
        elif ".mixer." in name:
            key = "mixer"
        elif ".mlp." in name:
            key = "mlp"
        else:
            key = "norm"
        parts[key] += p.numel()
    return parts
