"""S8: two ways to make attention linear in n by giving up exactness.

`window_attention`: each query sees the `window` keys ending at itself plus the global tokens before it
(Longformer's sliding window with global attention, causal). Global attention is symmetric within causality: a
global token is a key every later query sees, and a query that sees its whole prefix. The global tokens are the
first `n_global` (whose prefix is only each other) or every `global_every`-th token (positions k-1, 2k-1, ...:
periodic summaries of everything before them). Computed by query blocks over only the keys a block can see, and
the global queries over their prefixes, so time and memory grow as n · (window + globals), not n².

`favor_attention`: softmax attention approximated with positive orthogonal random features (Performer's
FAVOR+): exp(q·k / √d) = E[φ(q)·φ(k)] with φ(x) = exp(ωx − |x|²/2) / √m over m random directions ω. Causal
attention is then a running sum over positions of φ(k) vᵀ; memory grows as n · m · d_v.

What each gives up, measured: `errors_against_exact` (one draw of inputs: each window's and each feature count's
relative error against exact attention), `summarise_errors` (several draws: per size the mean with its standard
error, the shrink from the first size to the last and the log-log rate). E6's sweep (attnlab.experiments.cost.producer) reads
them on Gaussian inputs, S8 (attnlab.experiments.approximation.producer) on a trained layer's.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.stats import log_fit, mean_se


def global_positions(n: int, n_global: int = 0, global_every: int | None = None, device=None) -> torch.Tensor:
    """True at the global tokens of a sequence of n: the first n_global, or positions k-1, 2k-1, ... for
    global_every=k. -> (n,)"""
    pos = torch.arange(n, device=device)
    return (pos < n_global) | ((pos + 1) % global_every == 0 if global_every else False)


def window_mask(n: int, window: int, n_global: int = 0, global_every: int | None = None, device=None) -> torch.Tensor:
    """True where query i may attend key j (j <= i always): j is in i's window (i - window < j), j is global, or
    i is global. -> (n, n)"""
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(n, device=device)[None, :]
    g = global_positions(n, n_global, global_every, device)
    return (j <= i) & ((j > i - window) | g[None, :] | g[:, None])


def window_attention(q, k, v, *, window: int, n_global: int = 0, global_every: int | None = None,
                     block: int = 128):
    """q, k: (B, H, n, d), v: (B, H, n, d_v) -> (B, H, n, d_v): causal attention restricted to window_mask,
    blockwise: each block of queries over the global keys before its window and the window's keys, then the
    global queries (every-k-th only: the first n_global see only globals anyway) over their prefixes."""
    if window < 1 or block < 1 or n_global < 0 or (global_every is not None and global_every < 1):
        raise AttnlabError(f"window attention needs window >= 1, block >= 1, n_global >= 0, global_every >= 1; "
                           f"got {window}, {block}, {n_global}, {global_every}")
    n, out = q.size(-2), q.new_empty(*q.shape[:-1], v.size(-1))  # (B, H, n, d_v): values may be wider than keys
    g = global_positions(n, n_global, global_every, q.device)
    globals_ = g.nonzero().squeeze(-1)
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        lo = min(max(n_global, i0 - window + 1), i1)  # the window's first key for the block's first query
        keys = torch.cat([globals_[globals_ < lo], torch.arange(lo, i1, device=q.device)])
        i = torch.arange(i0, i1, device=q.device)[:, None]
        j = keys[None, :]
        seen = (j <= i) & ((j > i - window) | g[j] | g[i])  # (bq, bk)
        out[..., i0:i1, :] = attention(q[..., i0:i1, :], k[..., keys, :], v[..., keys, :], causal=False,
                                       mask=seen, need_weights=False)[0]
    if global_every:  # their rows above missed the keys before the window: each global query sees its prefix
        for rows in globals_.split(block):
            seen = torch.arange(rows[-1] + 1, device=q.device)[None, :] <= rows[:, None]  # (bq, prefix)
            out[..., rows, :] = attention(q[..., rows, :], k[..., : rows[-1] + 1, :], v[..., : rows[-1] + 1, :],
                                          causal=False, mask=seen, need_weights=False)[0]
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


def favor_attention(q, k, v, *, features: int | None = None, seed: int = 0, omega: torch.Tensor | None = None,
                    causal: bool = True, eps: float = 1e-12, block: int = 128):
    """q, k, v: (B, H, n, d) -> (B, H, n, d): FAVOR+ approximation of softmax(q kᵀ / √d) v.
    omega: the random features (m, d) to use (a model's, fixed per layer); by default `features` of them are
    drawn from `seed`."""
    d = q.size(-1)
    if omega is None:
        if features is None or features < 1:
            raise AttnlabError(f"FAVOR+ needs at least 1 random feature, got {features}")
        omega = orthogonal_features(features, d, seed, q.device, q.dtype)
    q, k = q / d ** 0.25, k / d ** 0.25  # so that q·k becomes q·k / √d
    # stabilisers that cancel between numerator and denominator: one per query row, and for the keys one for
    # all of them, or, causal, a running max, so that no key's value reaches an earlier query even through eps
    q_exp, k_exp = (x @ omega.T - (x * x).sum(-1, keepdim=True) / 2 for x in (q, k))  # φ's exponents
    qf = favor_features(q, omega, q_exp.amax(-1, keepdim=True))                        # (B, H, n, m)
    if causal:
        shift = k_exp.amax(-1).cummax(-1).values                                       # (B, H, n)
        kf = favor_features(k, omega, shift[..., None])                                # (B, H, n, m)
        num, den = causal_linear_attention(qf, kf, v, block, shift)
    else:
        kf = favor_features(k, omega, k_exp.amax(dim=(-2, -1), keepdim=True))
        num = qf @ (kf.transpose(-2, -1) @ v)
        den = qf @ kf.sum(-2)[..., None]
    return num / (den + eps)


def causal_linear_attention(qf, kf, v, block: int, shift=None):
    """Σ_{j≤i} (φq_i·φk_j) v_j and Σ_{j≤i} φq_i·φk_j for qf, kf: (B, H, n, m), v: (B, H, n, d_v), a block of
    queries at a time: the keys of earlier blocks as a running (m, d_v) sum, those of its own block through a
    masked (block, block) product. Memory O(n·m + block² + m·d_v), never the (n, m, d_v) prefix sums.
    shift: (B, H, n), non-decreasing along n: key j's features are φk_j · e^-shift_j; query i's sums are then
    taken at e^-shift_i (every factor e^(shift_j - shift_i) <= 1), a scale the ratio of the two cancels."""
    n = qf.size(-2)
    shift = qf.new_zeros(qf.shape[:-1]) if shift is None else shift
    state = qf.new_zeros(*qf.shape[:-2], qf.size(-1), v.size(-1))   # (B, H, m, d_v): Σ φk_j v_jᵀ so far
    norm = qf.new_zeros(*qf.shape[:-2], qf.size(-1), 1)             # (B, H, m, 1): Σ φk_j so far
    at = shift[..., :1]                                             # (B, H, 1): the shift state and norm are at
    num, den = torch.empty_like(v), v.new_empty(*v.shape[:-1], 1)
    below = torch.ones(block, block, dtype=torch.bool, device=qf.device).tril()
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        qb, kb, vb, s = qf[..., i0:i1, :], kf[..., i0:i1, :], v[..., i0:i1, :], shift[..., i0:i1]
        rescale = torch.exp((s[..., None, :] - s[..., :, None]).clamp(max=0))           # (B, H, b, b)
        a = (qb @ kb.transpose(-2, -1) * rescale).masked_fill(~below[: i1 - i0, : i1 - i0], 0)
        earlier = torch.exp(at - s)[..., None]                                          # (B, H, b, 1)
        num[..., i0:i1, :] = (qb @ state) * earlier + a @ vb
        den[..., i0:i1, :] = (qb @ norm) * earlier + a.sum(-1, keepdim=True)
        last = s[..., -1:]
        kb = kb * torch.exp(s - last)[..., None]
        state = state * torch.exp(at - last)[..., None] + kb.transpose(-2, -1) @ vb
        norm = norm * torch.exp(at - last)[..., None] + kb.sum(-2)[..., None]
        at = last
    return num, den


# ----------------------------------------------------------------------------- what they give up

def relative_error(approx: torch.Tensor, exact: torch.Tensor) -> float:
    """||approx - exact|| / ||exact|| over every element (both of one shape)."""
    return ((approx - exact).norm() / exact.norm()).item()


def errors_against_exact(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, windows: Sequence[int],
                         features: Sequence[int], n_global: int, block: int, seed: int) -> dict[str, list[float]]:
    """q, k, v: (B, H, n, d) -> the relative error of each approximation's causal attention output against exact
    attention's: {"window": one per window (with n_global global tokens), "favor": one per feature count (FAVOR+'s
    random features drawn from `seed`)}. `block` is the window method's query block (any block gives the same)."""
    exact = attention(q, k, v, causal=True, need_weights=False)[0]  # (B, H, n, d)
    return {"window": [relative_error(window_attention(q, k, v, window=w, n_global=n_global, block=block), exact)
                       for w in windows],
            "favor": [relative_error(favor_attention(q, k, v, features=m, seed=seed), exact) for m in features]}


def error_rate(sizes: Sequence[int], draws: list[list[float]]) -> dict | None:
    """How fast an error falls: per draw, the least-squares slope of log error on log size (sizes where the
    error is 0, a window as long as the sequence, left out); their mean, with its standard error over the
    draws (None from one draw). None where a draw has fewer than two sizes to fit."""
    fits = [log_fit(list(sizes), errs) for errs in draws]
    if None in fits:
        return None
    mean, se = mean_se([f["slope"] for f in fits])
    return {"slope": mean, "se": se if len(fits) > 1 else None, "per_draw": [f["slope"] for f in fits]}


def per_size(key: str, sizes: Sequence[int], draws: list[list[float]]) -> list[dict]:
    """Per size (named `key` in each row): the mean relative error over the draws, its standard error (None from
    one draw), min and max."""
    out = []
    for i, size in enumerate(sizes):
        errs = [d[i] for d in draws]
        mean, se = mean_se(errs)
        out.append({key: size, "relative_error": mean, "se": se if len(errs) > 1 else None,
                    "min": min(errs), "max": max(errs)})
    return out


def summarise_errors(draws: list[dict[str, list[float]]], windows: Sequence[int], features: Sequence[int]) -> dict:
    """errors_against_exact() of several draws, per method (window, favor): per size the mean over draws with its
    standard error (per_size); the ratio of the last size's error to the first's (`<method>_shrink`) and the
    log-log slope of error on size (`<method>_rate`), each a mean over draws with its standard error (None from
    one)."""
    out = {}
    for method, key, sizes in (("window", "window", windows), ("favor", "features", features)):
        errors = [d[method] for d in draws]  # one list of errors (one per size) a draw
        out[method] = per_size(key, sizes, errors)
        ratio, ratio_se = mean_se([errs[-1] / errs[0] for errs in errors])
        out[f"{method}_shrink"] = {"ratio": ratio, "se": ratio_se if len(errors) > 1 else None}
        out[f"{method}_rate"] = error_rate(sizes, errors)
    return out
