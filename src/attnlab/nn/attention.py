"""The one attention core: score, mask, normalise, mix. Every mixer, block and benchmark uses it."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnlab.errors import AttnlabError


def causal_mask(t_q: int, t_k: int, device=None) -> torch.Tensor:
    """True where query i may see key j: j <= i (+ offset when keys run ahead of queries)."""
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(t_k - t_q)


def attention(q, k, v, *, causal: bool = True, scale: bool | float = True, mask=None, bias=None, keep=None):
    """Scaled dot-product attention.

    q: (B, H, Tq, dk), k: (B, H, Tk, dk), v: (B, H, Tk, dv) -> (out (B, H, Tq, dv), weights (B, H, Tq, Tk)).
    scale: True divides by sqrt(dk), False leaves scores raw, a float multiplies them.
    mask: bool, broadcastable to (B, H, Tq, Tk), True = may attend. bias: added to scores (e.g. ALiBi).
    Masked scores are -inf, never a large negative constant: -inf survives a cast to float16.
    A row with every key masked yields zeros instead of NaN.
    keep: a dict to receive the scores (after scaling and bias, before masking) and the weights, for probes.
    """
    t_q, t_k = q.size(-2), k.size(-2)
    scores = q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if scale is True:
        scores = scores / math.sqrt(q.size(-1))
    elif scale is not False:
        scores = scores * scale
    if bias is not None:
        scores = scores + bias
    allowed = causal_mask(t_q, t_k, q.device) if causal else None
    if mask is not None:
        if mask.dim() < 2 or mask.shape[-2:] != (t_q, t_k):
            raise AttnlabError(f"attention mask has shape {tuple(mask.shape)}, expected (..., {t_q}, {t_k})")
        allowed = mask if allowed is None else allowed & mask
    if keep is not None:
        keep["scores"], keep["allowed"] = scores.detach(), allowed
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    if allowed is not None:
        weights = weights.nan_to_num(0.0)  # softmax of an all -inf row is NaN; such a row sees nothing
    if keep is not None:
        keep["weights"] = weights.detach()
    return weights @ v, weights
