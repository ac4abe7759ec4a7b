"""S8: two ways to make attention linear in n by giving up exactness.

`window_attention`: each query sees the `window` keys ending at itself plus `n_global` global tokens at the
start of the sequence (Longformer's sliding window with global attention, causal). Computed by query blocks
over only the keys a block can see, so time and memory grow as n · (window + n_global), not n².

`favor_attention`: softmax attention approximated with positive orthogonal random features (Performer's
FAVOR+): exp(q·k / √d) = E[φ(q)·φ(k)] with φ(x) = exp(ωx − |x|²/2) / √m over m random directions ω. Causal
attention is then a running sum over positions of φ(k) vᵀ; memory grows as n · m · d_v.
"""
from __future__ import annotations

import math

import torch

from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention


def window_mask(n: int, window: int, n_global: int = 0, device=None) -> torch.Tensor:
    """True where query i may attend key j: i - window < j <= i, or j < n_global (and j <= i). -> (n, n)"""
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(n, device=device)[None, :]
    return (j <= i) & ((j > i - window) | (j < n_global))


def window_attention(q, k, v, *, window: int, n_global: int = 0, block: int = 128):
    """q, k: (B, H, n, d), v: (B, H, n, d_v) -> (B, H, n, d_v): causal attention restricted to window_mask,
    blockwise."""
    if window < 1 or block < 1 or n_global < 0:
        raise AttnlabError(f"window attention needs window >= 1, block >= 1, n_global >= 0; got {window}, "
                           f"{block}, {n_global}")
    n, out = q.size(-2), q.new_empty(*q.shape[:-1], v.size(-1))  # (B, H, n, d_v): values may be wider than keys
    g = min(n_global, n)
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        lo = max(g, i0 - window + 1)  # the first key of the window of this block's first query
        keys = torch.cat([torch.arange(g, device=q.device), torch.arange(lo, i1, device=q.device)])
        i = torch.arange(i0, i1, device=q.device)[:, None]
        j = keys[None, :]
        seen = (j <= i) & ((j > i - window) | (j < g))  # (bq, bk)
        out[..., i0:i1, :] = attention(q[..., i0:i1, :], k[..., keys, :], v[..., keys, :], causal=False,
                                       mask=seen, need_weights=False)[0]
    return out


def orthogonal_features(m: int, d: int, seed: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """m random directions in R^d, orthogonal within each block of d, with lengths of Gaussian vectors. (m, d)"""
    g = torch.Generator().manual_seed(seed)
    blocks = []
    for _ in range(math.ceil(m / d)):
        q, r = torch.linalg.qr(torch.randn(d, d, generator=g))
        blocks.append((q * torch.sign(torch.diagonal(r))).T)  # the sign fix makes q uniformly (Haar) distributed
    directions = torch.cat(blocks)[:m]
    lengths = torch.randn(m, d, generator=g).norm(dim=1, keepdim=True)
    return (directions * lengths).to(device=device, dtype=dtype)


def favor_features(x: torch.Tensor, omega: torch.Tensor, stabiliser: torch.Tensor) -> torch.Tensor:
    """φ(x) = exp(ω·x - |x|²/2 - stabiliser) / √m for x: (..., n, d), ω: (m, d) -> (..., n, m)."""
    proj = x @ omega.T
    return torch.exp(proj - (x * x).sum(-1, keepdim=True) / 2 - stabiliser) / math.sqrt(omega.size(0))


def favor_attention(q, k, v, *, features: int, seed: int = 0, causal: bool = True, eps: float = 1e-6,
                    block: int = 128):
    """q, k, v: (B, H, n, d) -> (B, H, n, d): FAVOR+ approximation of softmax(q kᵀ / √d) v."""
    if features < 1:
        raise AttnlabError(f"FAVOR+ needs at least 1 random feature, got {features}")
    d = q.size(-1)
    omega = orthogonal_features(features, d, seed, q.device, q.dtype)
    q, k = q / d ** 0.25, k / d ** 0.25  # so that q·k becomes q·k / √d
    # one stabiliser per query row and one for all keys: they cancel between numerator and denominator
    q_proj, k_proj = q @ omega.T, k @ omega.T
    qf = favor_features(q, omega, q_proj.amax(-1, keepdim=True))                       # (B, H, n, m)
    kf = favor_features(k, omega, k_proj.amax(dim=(-2, -1), keepdim=True))             # (B, H, n, m)
    if causal:
        num, den = causal_linear_attention(qf, kf, v, block)
    else:
        num = qf @ (kf.transpose(-2, -1) @ v)
        den = qf @ kf.sum(-2)[..., None]
    return num / (den + eps)


def causal_linear_attention(qf, kf, v, block: int):
    """Σ_{j≤i} (φq_i·φk_j) v_j and Σ_{j≤i} φq_i·φk_j for qf, kf: (B, H, n, m), v: (B, H, n, d_v), a block of
    queries at a time: the keys of earlier blocks as a running (m, d_v) sum, those of its own block through a
    masked (block, block) product. Memory O(n·m + block² + m·d_v), never the (n, m, d_v) prefix sums."""
    n = qf.size(-2)
    state = qf.new_zeros(*qf.shape[:-2], qf.size(-1), v.size(-1))   # (B, H, m, d_v): Σ φk_j v_jᵀ so far
    norm = qf.new_zeros(*qf.shape[:-2], qf.size(-1), 1)             # (B, H, m, 1): Σ φk_j so far
    num, den = torch.empty_like(v), v.new_empty(*v.shape[:-1], 1)
    below = torch.ones(block, block, dtype=torch.bool, device=qf.device).tril()
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        qb, kb, vb = qf[..., i0:i1, :], kf[..., i0:i1, :], v[..., i0:i1, :]
        a = (qb @ kb.transpose(-2, -1)).masked_fill(~below[: i1 - i0, : i1 - i0], 0)  # (B, H, b, b)
        num[..., i0:i1, :] = qb @ state + a @ vb
        den[..., i0:i1, :] = qb @ norm + a.sum(-1, keepdim=True)
        state = state + kb.transpose(-2, -1) @ vb
        norm = norm + kb.sum(-2)[..., None]
    return num, den
