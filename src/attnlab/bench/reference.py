"""A plain eager one-block language model, the fastest plain PyTorch we could write: the yardstick for L9.

Self-contained on purpose: it uses no part of attnlab's attention core or model, only torch.
Fast as a user of PyTorch would write it: q, k and v from one fused projection, and
F.scaled_dot_product_attention with is_causal=True (no mask tensor, no weights materialised).
Same architecture as ladder row L9:
    token + learned position embeddings
    -> LayerNorm -> 4-head causal self-attention (fused q/k/v, out projections) -> + residual
    -> LayerNorm -> MLP (4x, GELU) -> + residual
    -> LayerNorm -> Linear to the vocabulary
"""
from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DESCRIPTION = "plain PyTorch reference (fused q/k/v projection, SDPA with is_causal, same weights)"


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, bias: bool = True):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # q, k, v in one matmul
        self.out = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads)  # (B, T, 3, H, hs)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # (B, H, T, hs) each
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, hs)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C): heads side by side
        return self.out(y)


class MLP(nn.Module):
    def __init__(self, d_model: int, ratio: int = 4, bias: bool = True):
        super().__init__()
        self.up = nn.Linear(d_model, ratio * d_model, bias=bias)
        self.down = nn.Linear(ratio * d_model, d_model, bias=bias)

    def forward(self, x):  # (B, T, C) -> (B, T, 4C) -> (B, T, C)
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int = 4, bias: bool = True):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, bias)
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
        self.block = Block(d_model, n_heads, mlp_ratio, bias)
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


FUSED = {"q": 0, "k": 1, "v": 2}  # attnlab's separate projections -> thirds of the reference's qkv rows


def ref_place(name: str) -> tuple[str, int | None]:
    """Where attnlab parameter `name` lives in the reference: a parameter name, and for q/k/v which third
    of the fused projection (None: the whole parameter)."""
    dst = ref_name(name)
    layer, _, kind = dst.removeprefix("block.attn.").partition(".")
    if dst.startswith("block.attn.") and layer in FUSED:
        return f"block.attn.qkv.{kind}", FUSED[layer]
    return dst, None


def ref_part(tensors: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    """The part of a reference tensor (parameter or gradient, by reference name) that holds attnlab's `name`."""
    dst, third = ref_place(name)
    return tensors[dst] if third is None else tensors[dst].chunk(3)[third]


def ref_places(ref: ReferenceLM) -> set[tuple[str, int | None]]:
    """Every place of the reference that a copy must fill: each parameter, each third of a fused one."""
    return {(name, third) for name, _ in ref.named_parameters()
            for third in ((0, 1, 2) if name.startswith("block.attn.qkv.") else (None,))}


@torch.no_grad()
def copy_weights(ref: ReferenceLM, lm: nn.Module) -> ReferenceLM:
    """Copy every parameter of an attnlab one-block LM into `ref`; each one must find its place exactly once."""
    ref_params = dict(ref.named_parameters())
    used = set()
    for name, p in lm.named_parameters():
        place = ref_place(name)
        if place[0] not in ref_params or place in used or ref_part(ref_params, name).shape != p.shape:
            raise KeyError(f"attnlab '{name}' {tuple(p.shape)} has no match in the reference "
                           f"(looked for '{place[0]}', part {place[1]})")
        ref_part(ref_params, name).copy_(p)
        used.add(place)
    missing = ref_places(ref) - used
    if missing:
        raise KeyError(f"reference parameters left uncopied: {sorted(missing, key=str)}")
    return ref


def best_step_seconds(spec, batch_size: int, threads: int, steps: int = 5) -> float:
    """The fastest of `steps` training steps of the reference at `spec`'s shape (forward, backward, torch's AdamW;
    after one untimed), on random tokens, at `threads` torch threads: the throughput benchmark's reference fp32
    step timed again. attnlab.eta scales the run times of a version that recorded no calibration figure by it.
    Seeded apart, so the global RNG and the thread count are as they were."""
    gen, before = torch.Generator().manual_seed(0), torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = from_spec(spec)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = (torch.randint(spec.vocab_size, (batch_size, spec.context), generator=gen) for _ in range(2))
        best = float("inf")
        for i in range(steps + 1):
            t0 = time.perf_counter()
            _, loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            best = best if i == 0 else min(best, time.perf_counter() - t0)
        return best
    finally:
        torch.set_num_threads(before)
