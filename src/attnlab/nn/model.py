"""Every model of the chapter, built from a ModelSpec: embeddings -> blocks -> linear to the vocabulary."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.errors import AttnlabError
from attnlab.nn.approx import favor_attention, orthogonal_features, window_mask
from attnlab.nn.attention import alibi_slopes, attention, query_positions, rope_rotate
from attnlab.nn.spec import ModelSpec


def sinusoidal_positions(T: int, d: int, device=None, start: int = 0) -> torch.Tensor:
    """Vaswani et al.'s fixed table, any length: PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(...).

    -> (T, d) float32 for positions start ... start + T - 1; no parameters, so nothing limits T.
    """
    t = torch.arange(start, start + T, device=device, dtype=torch.float32)[:, None]  # (T, 1)
    freqs = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, device=device, dtype=torch.float32) / d)
    pe = torch.zeros(T, d + d % 2, device=device)
    pe[:, 0::2] = torch.sin(t * freqs)
    pe[:, 1::2] = torch.cos(t * freqs)
    return pe[:, :d]


class Average(nn.Module):
    """Uniform causal average of the prefix: attention whose scores are all equal (zero).

    It has no scores to rotate or bias and no weights worth dropping, so rope, alibi and attention
    dropout do not apply (ModelSpec refuses rope/alibi with this mixer).
    """

    def forward(self, x):  # (B, T, d) -> (B, T, d)
        B, T, _ = x.shape
        zeros = x.new_zeros(B, 1, T, 1)
        out, _ = attention(zeros, zeros, x.unsqueeze(1), causal=True, scale=False, need_weights=False)
        return out.squeeze(1)


class SelfAttention(nn.Module):
    """h learned heads; with out_proj=False and one head it is the chapter's single head.

    Queries and keys have width d_k per head (default d_model / h); values keep d_model / h, so the
    heads concatenate back to d_model whatever d_k is.
    attention (causal self-attention only): 'full'; 'window', the core with each query seeing the `window` keys
    ending at itself and the global tokens (the first `n_global`, or every `global_every`-th, which sees its
    whole prefix); 'favor', FAVOR+ with `features` random features drawn once from
    `seed` and kept as a buffer (a checkpoint restores them). FAVOR+ forms no weights: there is nothing for
    attention dropout, probes or S9's replaced weights to act on, and no KV cache.
    """

    def __init__(self, d_model: int, n_heads: int, out_proj: bool, scale: bool = True, bias: bool = True,
                 d_k: int | None = None, qkv_bias: bool | None = None, rope: bool = False, alibi: bool = False,
                 dropout: float = 0.0, n_kv_heads: int | None = None, attention: str = "full",
                 window: int | None = None, n_global: int = 0, global_every: int | None = None,
                 features: int | None = None, seed: int = 0):
        super().__init__()
        if d_model % n_heads:
            raise AttnlabError(f"n_heads={n_heads} does not divide d_model={d_model}")
        self.n_kv_heads = n_kv_heads or n_heads  # groups of n_heads / n_kv_heads query heads share keys and values
        if n_heads % self.n_kv_heads:
            raise AttnlabError(f"n_kv_heads={self.n_kv_heads} does not divide n_heads={n_heads}")
        if alibi:
            alibi_slopes(n_heads)  # raises now, not at forward, for a head count without slopes
        self.n_heads, self.scale, self.d_k = n_heads, scale, d_k or d_model // n_heads
        self.rope, self.alibi, self.dropout = rope, alibi, dropout  # options of the core; dropout on weights
        qkv_bias = bias if qkv_bias is None else qkv_bias
        self.q = nn.Linear(d_model, n_heads * self.d_k, bias=qkv_bias)
        self.k = nn.Linear(d_model, self.n_kv_heads * self.d_k, bias=qkv_bias)
        self.v = nn.Linear(d_model, self.n_kv_heads * (d_model // n_heads), bias=qkv_bias)
        self.out = nn.Linear(d_model, d_model, bias=bias) if out_proj else nn.Identity()
        # set only by recording() and replaced() below, which put them back as they found them
        self.kept = None  # scores and weights of the last call, only while keep_weights is set (probes)
        self.keep_weights = False
        self.replace = None  # (B, H, T, T) weights to mix with instead of the softmax's (S9), while set
        self.approx, self.window, self.n_global, self.global_every = attention, window, n_global, global_every
        if attention == "favor":
            self.register_buffer("omega", orthogonal_features(features, self.d_k, seed))

    def split(self, x, heads: int | None = None):  # (B, T, H*w) -> (B, H, T, w)
        B, T, d = x.shape
        heads = heads or self.n_heads
        return x.view(B, T, heads, d // heads).transpose(1, 2)

    def project(self, x, src):
        """Queries from x, keys and values from src -> (B, H, T, w) each.

        For self-attention the three weights are stacked for one matmul, as a fused q/k/v layer would:
        the parameters stay three separate layers (their names and counts are what E7 and E9 read).
        """
        layers, heads = (self.q, self.k, self.v), (self.n_heads, self.n_kv_heads, self.n_kv_heads)
        if src is not x:
            return tuple(self.split(layer(inp), h) for layer, inp, h in zip(layers, (x, src, src), heads))
        weight = torch.cat([layer.weight for layer in layers])  # (2*H*d_k + d_model, d_model)
        bias = None if self.q.bias is None else torch.cat([layer.bias for layer in layers])
        qkv = F.linear(x, weight, bias).split([layer.out_features for layer in layers], dim=-1)
        return tuple(self.split(t, h) for t, h in zip(qkv, heads))

    def forward(self, x, context=None, causal=True, mask=None, cache: dict | None = None):
        """cache: a dict that keeps this layer's keys and values (B, n_kv_heads, T, w) between calls, so that a
        decoder feeds only its new tokens; their queries sit after every cached key."""
        src = x if context is None else context  # cross-attention reads keys/values from `context`
        if self.approx != "full":
            self.refuse(context is not None or not causal, cache is not None)
        self.kept = {} if self.keep_weights else None  # a probe needs the weights: the explicit path
        q, k, v = self.project(x, src)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        if self.n_kv_heads != self.n_heads:  # each key/value head serves its group of query heads
            group = self.n_heads // self.n_kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        if self.approx == "favor":
            if self.rope:  # as the core would: each rotated by its position
                t_q, t_k = q.size(-2), k.size(-2)
                q = rope_rotate(q, query_positions(t_q, t_k, q.device))
                k = rope_rotate(k, torch.arange(t_k, device=k.device))
            out = favor_attention(q, k, v, omega=self.omega.to(q.dtype), causal=True)
        else:
            if self.approx == "window":  # the rows of the last queries: a decoder's new tokens sit after the cache
                band = window_mask(k.size(-2), self.window, self.n_global, self.global_every,
                                   q.device)[k.size(-2) - q.size(-2):]
                mask = band if mask is None else mask & band
            out, _ = attention(q, k, v, causal=causal, scale=self.scale, mask=mask, rope=self.rope,
                               alibi=self.alibi, dropout_p=self.dropout, training=self.training, keep=self.kept,
                               need_weights=False, weights=self.replace)
        B, H, T, dh = out.shape
        return self.out(out.transpose(1, 2).reshape(B, T, H * dh))

    def refuse(self, not_causal_self: bool, cached: bool):
        """What an approximation cannot do, named before anything is computed."""
        name = {"window": "window attention", "favor": "FAVOR+ attention"}[self.approx]
        if not_causal_self:
            raise AttnlabError(f"{name} is causal self-attention only (no cross-attention, no causal=False)")
        if self.approx != "favor":
            return
        if cached:
            raise AttnlabError("FAVOR+ attention has no KV cache: generate with use_cache=False")
        if self.keep_weights or self.replace is not None:
            raise AttnlabError("FAVOR+ attention forms no weights to keep (attention_kept) or to replace (S9)")


def attention_layers(model: nn.Module) -> list[SelfAttention]:
    """Every SelfAttention in `model` (the module itself if it is one), in order."""
    return [m for m in model.modules() if isinstance(m, SelfAttention)]


@contextmanager
def recording(model: nn.Module) -> Iterator[Callable[[], list[dict]]]:
    """While open, every SelfAttention in `model` keeps what its core scored and mixed on its last call (the
    explicit path: see attention's `keep`); the context gives a function that returns those records, one dict a
    layer. Each layer is left as it was found, even when the block raises (a recording inside another leaves the
    outer one on).

        with recording(model) as kept:
            model(idx)
            weights = [layer["weights"] for layer in kept()]
    """
    layers = attention_layers(model)
    found = [m.keep_weights for m in layers]
    for m in layers:
        m.keep_weights = True
    try:
        yield lambda: [m.kept for m in layers]
    finally:
        for m, keep in zip(layers, found):  # inside an outer recording, the last call's record stays its
            m.keep_weights, m.kept = keep, m.kept if keep else None


@contextmanager
def replaced(layer: SelfAttention, weights: torch.Tensor | None) -> Iterator[None]:
    """While open, `layer` mixes its values with `weights` (B, H, T, T) instead of its softmax's (S9; None: its
    own). The layer is left as it was found, even when the block raises."""
    found = layer.replace
    layer.replace = weights
    try:
        yield
    finally:
        layer.replace = found


@torch.no_grad()
def attention_kept(model: nn.Module, idx: torch.Tensor) -> list[dict]:
    """What the core of every SelfAttention in `model` kept on tokens idx (B, T), one dict a layer: q, k, v
    (B, H, T, width) as it scored and mixed them (queries and keys after any rotation, keys and values repeated
    to every query head of their group), the scores, `allowed` and the weights (see attention's `keep`).
    attention(q, k, v) with the layer's own options is the layer's attention before its output projection (S8
    puts the approximations in its place). The model is left as it was found."""
    was_training = model.training
    model.eval()
    try:
        with recording(model) as kept:
            model(idx)
            return kept()
    finally:
        model.train(was_training)


class MLP(nn.Module):
    def __init__(self, d_model: int, ratio: int, bias: bool = True):
        super().__init__()
        self.up = nn.Linear(d_model, ratio * d_model, bias=bias)
        self.down = nn.Linear(ratio * d_model, d_model, bias=bias)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def make_mixer(spec: ModelSpec, layer: int = 0) -> nn.Module | None:
    """The mixer of block `layer` (its index seeds FAVOR+'s features, so each layer draws its own)."""
    if spec.mixer == "none":
        return None
    if spec.mixer == "average":
        return Average()
    return SelfAttention(spec.d_model, spec.heads, out_proj=spec.mixer == "multihead", scale=spec.scale,
                         bias=spec.bias, d_k=spec.d_k, qkv_bias=spec.qkv_bias, rope=spec.position == "rope",
                         alibi=spec.position == "alibi", dropout=spec.dropout, n_kv_heads=spec.n_kv_heads,
                         attention=spec.attention, window=spec.window, n_global=spec.n_global,
                         global_every=spec.global_every, features=spec.features, seed=layer)


def make_norm(spec: ModelSpec) -> nn.Module:
    return nn.LayerNorm(spec.d_model) if spec.norm in ("pre", "post") else nn.Identity()


class Block(nn.Module):
    """pre-norm: x + f(LN(x)) for each sublayer f; post-norm: LN(x + f(x)). Dropout on f's output."""

    def __init__(self, spec: ModelSpec, layer: int = 0):
        super().__init__()
        self.residual, self.post = spec.residual, spec.norm == "post"
        self.mixer = make_mixer(spec, layer)
        self.norm1 = make_norm(spec) if self.mixer is not None else nn.Identity()
        self.mlp = MLP(spec.d_model, spec.mlp_ratio, spec.bias) if spec.mlp else None
        self.norm2 = make_norm(spec) if self.mlp is not None else nn.Identity()
        self.drop = nn.Dropout(spec.dropout)  # each sublayer's output, before the residual add

    def forward(self, x, cache: dict | None = None):  # (B, T, d) -> (B, T, d)
        if self.mixer is not None:
            inp = x if self.post else self.norm1(x)
            mixed = self.drop(self.mixer(inp) if cache is None else self.mixer(inp, cache=cache))
            x = x + mixed if self.residual else mixed
            x = self.norm1(x) if self.post else x
        if self.mlp is not None:
            x = x + self.drop(self.mlp(x if self.post else self.norm2(x)))
            x = self.norm2(x) if self.post else x
        return x


class LM(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        self.tok = nn.Embedding(spec.vocab_size, spec.d_model)
        self.pos = nn.Embedding(spec.positions, spec.d_model) if spec.position == "learned" else None
        self.drop = nn.Dropout(spec.dropout)  # on the embedding sum
        self.blocks = nn.ModuleList(Block(spec, i) for i in range(spec.n_blocks))
        self.norm = make_norm(spec) if spec.norm == "pre" else nn.Identity()  # post-norm has no final LN
        self.head = nn.Linear(spec.d_model, spec.vocab_size, bias=not spec.tie_embeddings)
        if spec.tie_embeddings:
            self.head.weight = self.tok.weight

    def forward(self, idx, targets=None, cache: dict | None = None):
        """idx: (B, T) token ids -> logits (B, T, V), and the mean cross-entropy when targets are given.

        cache (decoding): a dict, empty at first, that keeps every block's keys and values; pass the same dict
        with only the new tokens each time, and they are placed after the ones it has seen.
        """
        T = idx.size(1)
        start = 0
        if cache is not None:
            if any(not isinstance(b.mixer, SelfAttention) for b in self.blocks):
                raise AttnlabError("a KV cache needs attention in every block (this model's mixer is "
                                   f"'{self.spec.mixer}')")
            start = cache.setdefault("length", 0)
            cache.setdefault("blocks", [{} for _ in self.blocks])
        x = self.tok(idx)  # (B, T, d)
        if self.pos is not None:
            if start + T > self.pos.num_embeddings:
                raise AttnlabError(f"sequence of {start + T} tokens is longer than the position table "
                                   f"({self.pos.num_embeddings} rows)")
            x = x + self.pos(torch.arange(start, start + T, device=idx.device))
        if self.spec.position == "sinusoidal":
            x = x + sinusoidal_positions(T, x.size(-1), idx.device, start).to(x.dtype)
        x = self.drop(x)  # rope and alibi act inside attention; none adds nothing
        for i, block in enumerate(self.blocks):
            x = block(x) if cache is None else block(x, cache=cache["blocks"][i])
        if cache is not None:
            cache["length"] = start + T
        logits = self.head(self.norm(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def build(spec: ModelSpec) -> LM:
    return LM(spec)


@torch.no_grad()
def generate(model: LM, idx: torch.Tensor, n_new: int, use_cache: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy decoding of n_new tokens after idx (B, T0) -> (tokens (B, T0 + n_new), logits (B, n_new, V)).
    With use_cache, each step feeds only the newest token and reads the rest from the KV cache; without, each
    step recomputes the whole sequence. The two must agree (tests/test_kv_cache.py)."""
    cache = {} if use_cache else None
    tokens, steps = idx, []
    logits, _ = model(idx, cache=cache) if use_cache else model(idx)
    for i in range(n_new):
        last = logits[:, -1]  # (B, V)
        steps.append(last)
        nxt = last.argmax(-1, keepdim=True)  # (B, 1)
        tokens = torch.cat([tokens, nxt], dim=1)
        if i + 1 < n_new:
            logits, _ = model(nxt, cache=cache) if use_cache else model(tokens)
    return tokens, torch.stack(steps, dim=1)


def param_breakdown(model: nn.Module) -> dict[str, int]:
    """Parameters by role; sums to the model's total. A model that is not an LM has one role: total."""
    if not isinstance(model, LM):
        return {"total": sum(p.numel() for p in model.parameters())}
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


def pool_kv_heads(state: dict, source: ModelSpec, target: ModelSpec) -> dict:
    """A trained model's weights for a model with fewer key/value heads (Ainslie et al.'s up-training): each
    group's key and value projections are the mean of the source heads it replaces. Everything else is kept."""
    if source.kv_heads % target.kv_heads or dict(source.to_dict(), n_kv_heads=None) != dict(target.to_dict(),
                                                                                          n_kv_heads=None):
        raise AttnlabError(f"cannot start a model with {target.kv_heads} key/value heads from one with "
                           f"{source.kv_heads}: only the key/value head count may differ, and it must divide")
    group, out = source.kv_heads // target.kv_heads, dict(state)
    for name, tensor in state.items():
        if name.endswith((".mixer.k.weight", ".mixer.k.bias", ".mixer.v.weight", ".mixer.v.bias")):
            heads = tensor.view(target.kv_heads, group, -1, *tensor.shape[1:])  # (kv, group, w[, d])
            out[name] = heads.mean(dim=1).reshape(-1, *tensor.shape[1:])
    return out
