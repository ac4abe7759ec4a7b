"""A plain eager one-block language model, written the obvious way: the yardstick for attnlab's L9.

Self-contained on purpose: it uses no part of attnlab's attention core or model, only torch.
Same architecture as ladder row L9:
    token + learned position embeddings
    -> LayerNorm -> 4-head causal self-attention (q, k, v, out projections) -> + residual
    -> LayerNorm -> MLP (4x, GELU) -> + residual
    -> LayerNorm -> Linear to the vocabulary
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, context: int, bias: bool = True):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model, bias=bias)
        self.k = nn.Linear(d_model, d_model, bias=bias)
        self.v = nn.Linear(d_model, d_model, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        # lower-triangular mask: a buffer, not a parameter
        self.register_buffer("mask", torch.tril(torch.ones(context, context, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_heads
        q = self.q(x).view(B, T, self.n_heads, hs).transpose(1, 2)  # (B, H, T, hs)
        k = self.k(x).view(B, T, self.n_heads, hs).transpose(1, 2)  # (B, H, T, hs)
        v = self.v(x).view(B, T, self.n_heads, hs).transpose(1, 2)  # (B, H, T, hs)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)  # (B, H, T, T)
        att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B, H, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C): heads side by side
        return self.out(y)


class MLP(nn.Module):
    def __init__(self, d_model: int, ratio: int = 4, bias: bool = True):
        super().__init__()
        self.up = nn.Linear(d_model, ratio * d_model, bias=bias)
        self.down = nn.Linear(ratio * d_model, d_model, bias=bias)

    def forward(self, x):  # (B, T, C) -> (B, T, 4C) -> (B, T, C)
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, context: int, mlp_ratio: int = 4, bias: bool = True):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, context, bias)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, mlp_ratio, bias)

    def forward(self, x):  # (B, T, C) -> (B, T, C)
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class ReferenceLM(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, context: int, n_heads: int = 4, mlp_ratio: int = 4,
                 bias: bool = True, positions: int | None = None):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(positions or context, d_model)  # the table may hold more rows than the context
        self.block = Block(d_model, n_heads, context, mlp_ratio, bias)
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, idx, targets=None):
        """idx: (B, T) -> logits (B, T, V), and the mean cross-entropy when targets are given."""
        B, T = idx.shape
        assert T <= self.context, f"sequence of {T} tokens is longer than the context {self.context}"
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))  # (B, T, C)
        x = self.block(x)
        logits = self.head(self.ln_f(x))  # (B, T, V)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


def from_spec(spec) -> ReferenceLM:
    """The reference for an attnlab ModelSpec; only the one-block pre-norm multihead model is supported."""
    wanted = {"n_blocks": 1, "mixer": "multihead", "residual": True, "position": "learned", "mlp": True,
              "norm": "pre", "scale": True}
    wrong = {k: getattr(spec, k) for k, v in wanted.items() if getattr(spec, k) != v}
    if wrong:
        raise ValueError(f"the eager reference is the one-block model only; spec differs in {wrong}")
    return ReferenceLM(spec.vocab_size, spec.d_model, spec.context, spec.n_heads, spec.mlp_ratio, spec.bias,
                       spec.positions)


# attnlab LM parameter name -> reference parameter name
NAME_MAP = {
    "tok.": "tok.",
    "pos.": "pos.",
    "blocks.0.norm1.": "block.ln1.",
    "blocks.0.mixer.": "block.attn.",
    "blocks.0.norm2.": "block.ln2.",
    "blocks.0.mlp.": "block.mlp.",
    "norm.": "ln_f.",
    "head.": "head.",
}


def ref_name(name: str) -> str:
    for src, dst in NAME_MAP.items():
        if name.startswith(src):
            return dst + name[len(src):]
    raise KeyError(f"no reference parameter for attnlab parameter '{name}'")


@torch.no_grad()
def copy_weights(ref: ReferenceLM, lm: nn.Module) -> ReferenceLM:
    """Copy every parameter of an attnlab one-block LM into `ref`; each one must find its place exactly once."""
    ref_params = dict(ref.named_parameters())
    used = set()
    for name, p in lm.named_parameters():
        dst = ref_name(name)
        if dst not in ref_params or ref_params[dst].shape != p.shape:
            raise KeyError(f"attnlab '{name}' {tuple(p.shape)} has no match in the reference (looked for '{dst}')")
        ref_params[dst].copy_(p)
        used.add(dst)
    missing = set(ref_params) - used
    if missing:
        raise KeyError(f"reference parameters left uncopied: {sorted(missing)}")
    return ref
