"""The one attention core: score, mask, normalise, mix. Every mixer, block and benchmark uses it.

Relative positions live here, as options of the core: `rope` rotates queries and keys (Su et al.),
`alibi` adds a per-head linear distance penalty to the scores (Press et al.).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnlab.errors import AttnlabError

ROPE_BASE = 10000.0


def causal_mask(t_q: int, t_k: int, device=None) -> torch.Tensor:
    """True where query i may see key j: j <= i (+ offset when keys run ahead of queries)."""
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(t_k - t_q)


def query_positions(t_q: int, t_k: int, device=None) -> torch.Tensor:
    """Positions of the queries, aligned so the last query sits at the last key: t_k - t_q + i."""
    return torch.arange(t_k - t_q, t_k, device=device)


def rope_rotate(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """RoPE: rotate each 2-D pair (x[2i], x[2i+1]) of x by the angle position * base^(-2i/d).

    x: (..., T, d) with d even, positions: (T,) -> (..., T, d). A rotation: norms are unchanged, and the
    dot product of a rotated query at position m with a rotated key at position n depends on m - n only.
    """
    d = x.size(-1)
    if d % 2:
        raise AttnlabError(f"RoPE needs an even query/key width, got {d}")
    freqs = ROPE_BASE ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)  # (d/2,)
    angles = positions.to(torch.float32)[:, None] * freqs[None, :]  # (T, d/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


def alibi_slopes(n_heads: int, device=None) -> torch.Tensor:
    """Press et al.'s head slopes 2^(-8k/n), k = 1..n, defined here for n a power of two only. -> (n,)"""
    if n_heads < 1 or n_heads & (n_heads - 1):
        raise AttnlabError(f"ALiBi has no slopes for n_heads={n_heads} (use a power of two)")
    k = torch.arange(1, n_heads + 1, device=device, dtype=torch.float32)
    return 2.0 ** (-8.0 * k / n_heads)


def alibi_bias(n_heads: int, t_q: int, t_k: int, device=None) -> torch.Tensor:
    """-slope_h * (i - j) for query position i and key position j -> (H, Tq, Tk).

    Zero on the diagonal, -slope * distance below it. Above it (keys in the query's future, seen only
    without a causal mask) the distance is taken as |i - j|, so the penalty stays a penalty.
    """
    i = query_positions(t_q, t_k, device)
    j = torch.arange(t_k, device=device)
    distance = (i[:, None] - j[None, :]).abs().to(torch.float32)  # (Tq, Tk)
    return -alibi_slopes(n_heads, device)[:, None, None] * distance


def attention(q, k, v, *, causal: bool = True, scale: bool | float = True, mask=None, bias=None,
              rope: bool = False, alibi: bool = False, dropout_p: float = 0.0, training: bool = False,
              keep=None, need_weights: bool = True, weights=None):
    """Scaled dot-product attention.

    q: (B, H, Tq, dk), k: (B, H, Tk, dk), v: (B, H, Tk, dv) -> (out (B, H, Tq, dv), weights (B, H, Tq, Tk)).
    scale: True divides by sqrt(dk), False leaves scores raw, a float multiplies them.
    mask: bool, broadcastable to (B, H, Tq, Tk), True = may attend. bias: added to scores.
    rope: rotate q and k by their positions first (query i at t_k - t_q + i, key j at j).
    alibi: add alibi_bias(H, Tq, Tk) to the scores (H must be a power of two).
    dropout_p, training: dropout on the weights after softmax, only when training; the weights
    returned and kept are the ones before dropout.
    Masked scores are -inf, never a large negative constant: -inf survives a cast to float16.
    A row with every key masked yields zeros instead of NaN.
    keep: a dict to receive q, k and v as scored and mixed (q and k after rope), the scores (after scaling and
    bias, before masking) and the weights, for probes and for S8's approximations on a trained layer.
    need_weights=False with keep=None takes the fast path, F.scaled_dot_product_attention, the same
    computation without materialising the weights; weights is then None.
    weights: (B, H, Tq, Tk) to mix the values with instead of the softmax's own (S9 puts permuted and
    adversarial attention in a trained model); its rows should sum to 1 over the keys that may be seen.
    """
    t_q, t_k = q.size(-2), k.size(-2)
    if mask is not None and (mask.dim() < 2 or mask.shape[-2:] != (t_q, t_k)):
        raise AttnlabError(f"attention mask has shape {tuple(mask.shape)}, expected (..., {t_q}, {t_k})")
    if rope:
        q = rope_rotate(q, query_positions(t_q, t_k, q.device))
        k = rope_rotate(k, torch.arange(t_k, device=k.device))
    if keep is not None:
        keep["q"], keep["k"], keep["v"] = q.detach(), k.detach(), v.detach()
    added = added_scores(q, t_k, alibi, bias)
    dropout_p = dropout_p if training else 0.0
    fast = not need_weights and keep is None and weights is None
    if fast and causal and mask is None and added is None and t_q == t_k:
        # the plain causal case, the model's: SDPA masks by itself, no (Tq, Tk) mask is built
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True,
                                              scale=sdpa_scale(scale)), None
    allowed = causal_mask(t_q, t_k, q.device) if causal else None
    if mask is not None:
        allowed = mask if allowed is None else allowed & mask
    if fast:
        return masked_sdpa(q, k, v, scale, allowed, added, dropout_p), None
    return explicit(q, k, v, scale, allowed, added, dropout_p, keep, weights)


def added_scores(q, t_k: int, alibi: bool, bias):
    """What is added to the scores: the ALiBi penalty and `bias`, or None when neither is asked for."""
    added = alibi_bias(q.size(-3), q.size(-2), t_k, q.device).to(q.dtype) if alibi else None
    if bias is not None:
        added = bias if added is None else added + bias
    return added


def sdpa_scale(scale: bool | float) -> float | None:
    """The core's scale as SDPA's: None is SDPA's own 1/sqrt(dk)."""
    if scale is True:
        return None
    return 1.0 if scale is False else scale


def masked_sdpa(q, k, v, scale, allowed, added, dropout_p: float):
    """The fast path with a mask or added scores: one attn_mask for SDPA, boolean when nothing is added."""
    sees = None
    if allowed is not None:
        # a row that sees nothing is NaN in some torch versions, zeros in others: let it see every key,
        # then zero it, so it is zeros (and its gradients zero) whatever the version
        sees = allowed.any(-1, keepdim=True)  # (..., Tq, 1)
        allowed = allowed | ~sees
    attn_mask = allowed
    if added is not None:
        attn_mask = added if allowed is None else added.masked_fill(~allowed, float("-inf"))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                                         scale=sdpa_scale(scale))
    return out if sees is None else out.masked_fill(~sees, 0.0)


def explicit(q, k, v, scale, allowed, added, dropout_p: float, keep, replaced=None):
    """Score, mask, normalise, mix, step by step -> (out, weights); `keep` receives scores and weights (the
    softmax's own); `replaced` are weights to mix with instead."""
    scores = q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if scale is True:
        scores = scores / math.sqrt(q.size(-1))
    elif scale is not False:
        scores = scores * scale
    if added is not None:
        scores = scores + added
    if keep is not None:
        keep["scores"], keep["allowed"] = scores.detach(), allowed
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    if allowed is not None:
        weights = weights.nan_to_num(0.0)  # softmax of an all -inf row is NaN; such a row sees nothing
    if keep is not None:
        keep["weights"] = weights.detach()
    if replaced is not None:
        weights = replaced
    dropped = F.dropout(weights, dropout_p, training=True) if dropout_p > 0 else weights
    return dropped @ v, weights
