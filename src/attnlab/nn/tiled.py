"""S7: exact attention computed in tiles with an online softmax (FlashAttention's algorithm, in PyTorch).

The same function as the core's scaled dot-product attention, but the (Tq, Tk) score matrix never exists:
queries are taken `block` rows at a time, keys and values `block` columns at a time, and each query tile keeps
only a running maximum m, a running normaliser l and an unnormalised output, rescaled whenever a new tile
raises the maximum. The backward pass recomputes each tile's probabilities from the saved log-sum-exp
(m and l per query row) instead of storing them, so memory grows with T, not T². Causal tiles wholly above the
diagonal are skipped.
"""
from __future__ import annotations

import math

import torch

from attnlab.errors import AttnlabError


def tiled_attention(q, k, v, *, causal: bool = True, scale: float | None = None, block: int = 128):
    """q: (B, H, Tq, d), k, v: (B, H, Tk, d) -> (B, H, Tq, d). scale: None is 1/sqrt(d).
    With causal, query i (aligned to the last key, as the core does) sees keys j <= Tk - Tq + i."""
    if block < 1:
        raise AttnlabError(f"tiled attention: block must be at least 1, got {block}")
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    return _Tiled.apply(q, k, v, causal, scale, block)


def _tiles(n: int, block: int):
    return [(s, min(s + block, n)) for s in range(0, n, block)]


def _visible(i0: int, i1: int, j0: int, j1: int, offset: int, device) -> torch.Tensor | None:
    """The causal mask of one tile (True = may attend), or None when the whole tile is visible."""
    if j1 - 1 <= i0 + offset:
        return None
    i = torch.arange(i0, i1, device=device)[:, None] + offset
    j = torch.arange(j0, j1, device=device)[None, :]
    return j <= i


class _Tiled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal: bool, scale: float, block: int):
        Tq, Tk = q.size(-2), k.size(-2)
        offset = Tk - Tq  # the last query sits at the last key
        out = torch.empty_like(q)
        row_max = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)  # m per query (B, H, Tq)
        row_sum = torch.empty_like(row_max)                                           # l per query
        for i0, i1 in _tiles(Tq, block):
            qi = q[..., i0:i1, :].float()
            m = torch.full(qi.shape[:-1], -math.inf, device=q.device)  # running max      (B, H, bq)
            l = torch.zeros_like(m)                                     # running sum      (B, H, bq)
            acc = torch.zeros(*qi.shape[:-1], v.size(-1), device=q.device)  # unnormalised output
            for j0, j1 in _tiles(Tk, block):
                if causal and j0 > i1 - 1 + offset:
                    break  # this and every later key tile lies wholly in the future
                s = qi @ k[..., j0:j1, :].float().transpose(-2, -1) * scale  # (B, H, bq, bk)
                seen = _visible(i0, i1, j0, j1, offset, q.device) if causal else None
                if seen is not None:
                    s = s.masked_fill(~seen, -math.inf)
                m_new = torch.maximum(m, s.amax(-1))
                safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # a row with nothing yet
                p = torch.exp(s - safe[..., None])
                correction = torch.exp(m - safe)
                l = l * correction + p.sum(-1)
                acc = acc * correction[..., None] + p @ v[..., j0:j1, :].float()
                m = m_new
            out[..., i0:i1, :] = (acc / l.clamp_min(1e-30)[..., None]).to(q.dtype)
            row_max[..., i0:i1], row_sum[..., i0:i1] = m, l
        ctx.save_for_backward(q, k, v, out, row_max, row_sum)
        ctx.causal, ctx.scale, ctx.block = causal, scale, block
        return out

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, out, row_max, row_sum = ctx.saved_tensors
        causal, scale, block = ctx.causal, ctx.scale, ctx.block
        Tq, Tk = q.size(-2), k.size(-2)
        offset = Tk - Tq
        dq, dk, dv = torch.zeros_like(q, dtype=torch.float32), torch.zeros_like(k, dtype=torch.float32), \
            torch.zeros_like(v, dtype=torch.float32)
        delta = (d_out.float() * out.float()).sum(-1)  # D_i = rowsum(dO ∘ O)   (B, H, Tq)
        # a row that sees no key has m = -inf, l = 0: take m = 0, l = 1 there, and its masked p is 0 anyway
        row_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
        row_sum = torch.where(row_sum > 0, row_sum, torch.ones_like(row_sum))
        for i0, i1 in _tiles(Tq, block):
            qi, doi = q[..., i0:i1, :].float(), d_out[..., i0:i1, :].float()
            for j0, j1 in _tiles(Tk, block):
                if causal and j0 > i1 - 1 + offset:
                    break
                kj, vj = k[..., j0:j1, :].float(), v[..., j0:j1, :].float()
                s = qi @ kj.transpose(-2, -1) * scale
                seen = _visible(i0, i1, j0, j1, offset, q.device) if causal else None
                if seen is not None:
                    s = s.masked_fill(~seen, -math.inf)
                # the tile's probabilities, recomputed from the saved max and sum (not their log-sum-exp,
                # which would add the rounding of a large m to every p)
                p = torch.exp(s - row_max[..., i0:i1, None]) / row_sum[..., i0:i1, None]
                dv[..., j0:j1, :] += p.transpose(-2, -1) @ doi
                dp = doi @ vj.transpose(-2, -1)
                ds = p * (dp - delta[..., i0:i1, None])
                dq[..., i0:i1, :] += ds @ kj * scale
                dk[..., j0:j1, :] += ds.transpose(-2, -1) @ qi * scale
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None, None
