"""E9: the project's multi-head attention against PyTorch's, with the same weights.

One SelfAttention (the project's only attention core underneath) is built and seeded; its
weights are copied into `torch.nn.MultiheadAttention` and used by hand around
`F.scaled_dot_product_attention`. Each case feeds the three the same inputs and masks and
records the largest absolute difference between their outputs, next to the size of the
outputs. PyTorch's masks are written out independently of `attnlab.nn.attention.causal_mask`
(and with its opposite convention where PyTorch uses one), so a shared mistake cannot hide.

Two edges are measured rather than assumed: masking in float16 / bfloat16 (−inf against the
common −1e9), and rows whose every key is masked (the project documents zeros; what PyTorch
returns is recorded as found, for the torch version in the provenance).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.model import SelfAttention, recording

SETTINGS = {
    "d_model": 128, "n_heads": 4, "batch": 3,
    "t_self": 32,          # self-attention cases
    "t_q": 7, "t_k": 11,   # cross-attention: queries from one sequence, keys/values from another
    "pad_lengths": [32, 27, 19],  # key-padding cases: real tokens per batch row (the rest is padding)
    "dtype": "float32",
}
LOW_PRECISION = ("float32", "float16", "bfloat16")
# Low-precision outputs must stay within TOL_EPS * eps(dtype) * max|float32 output|: rounding the inputs,
# the weights and three chained products (projections, attention, output projection) to the dtype
# each cost about half an ulp; a wrong mask or a NaN would be off by the size of the output itself.
TOL_EPS = 4


# ------------------------------------------------------------------ weights

def make_attention(d_model: int = 128, n_heads: int = 4, seed: int = 0) -> SelfAttention:
    """The project's multi-head attention (biases and output projection), initialised from `seed`
    without touching the global random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        attn = SelfAttention(d_model, n_heads, out_proj=True, bias=True)
    return attn.eval()


def to_mha(attn: SelfAttention) -> nn.MultiheadAttention:
    """The same weights in `nn.MultiheadAttention`: in_proj = rows of W_q, W_k, W_v stacked; out_proj = W_o."""
    d_model = attn.v.in_features
    if not isinstance(attn.out, nn.Linear) or attn.q.bias is None or attn.out.bias is None:
        raise AttnlabError("to_mha needs SelfAttention(out_proj=True, bias=True): nn.MultiheadAttention "
                           "always has an output projection and (here) biases")
    if attn.d_k * attn.n_heads != d_model:
        raise AttnlabError(f"to_mha needs d_k * n_heads == d_model, got d_k={attn.d_k}, n_heads={attn.n_heads}, "
                           f"d_model={d_model}")
    mha = nn.MultiheadAttention(d_model, attn.n_heads, bias=True, batch_first=True,
                                dtype=attn.q.weight.dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([attn.q.weight, attn.k.weight, attn.v.weight]))
        mha.in_proj_bias.copy_(torch.cat([attn.q.bias, attn.k.bias, attn.v.bias]))
        mha.out_proj.weight.copy_(attn.out.weight)
        mha.out_proj.bias.copy_(attn.out.bias)
    return mha.eval()


def sdpa_forward(attn: SelfAttention, x, context=None, **sdpa_kwargs):
    """The same projections by hand, heads split, F.scaled_dot_product_attention, heads merged, W_o."""
    src = x if context is None else context
    h = attn.n_heads

    def heads(t):  # (B, T, h*w) -> (B, h, T, w)
        B, T, d = t.shape
        return t.view(B, T, h, d // h).transpose(1, 2)

    q = heads(F.linear(x, attn.q.weight, attn.q.bias))
    k = heads(F.linear(src, attn.k.weight, attn.k.bias))
    v = heads(F.linear(src, attn.v.weight, attn.v.bias))
    out = F.scaled_dot_product_attention(q, k, v, **sdpa_kwargs)  # (B, h, Tq, dv)
    B, _, T, dv = out.shape
    return F.linear(out.transpose(1, 2).reshape(B, T, h * dv), attn.out.weight, attn.out.bias)


def blocked_after(t_q: int, t_k: int) -> torch.Tensor:
    """PyTorch's convention (True = may NOT attend) for a causal mask whose last query sees the last key.
    Written with triu, independently of attnlab's causal_mask (tril)."""
    return torch.ones(t_q, t_k, dtype=torch.bool).triu(1 + t_k - t_q)


def padding(lengths: list[int], t: int) -> torch.Tensor:
    """(B, t) True where the key is a real token, False where it is padding."""
    return torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]


# -------------------------------------------------------------------- cases

def cases(settings: dict, seed: int) -> list[dict]:
    """Each case: inputs plus how to call the project, nn.MultiheadAttention and SDPA."""
    g = torch.Generator().manual_seed(seed + 1)
    B, d, T = settings["batch"], settings["d_model"], settings["t_self"]
    tq, tk = settings["t_q"], settings["t_k"]
    x = torch.randn(B, T, d, generator=g)
    y = torch.randn(B, tq, d, generator=g)    # decoder-side sequence (queries)
    mem = torch.randn(B, tk, d, generator=g)  # encoder-side sequence (keys and values)
    real = padding(settings["pad_lengths"], T)  # (B, T)
    pad4 = real[:, None, None, :]               # (B, 1, 1, T): broadcasts over heads and queries
    causal_blocked = blocked_after(T, T)
    return [
        {"name": "causal self-attention", "kind": "self", "x": x, "context": None,
         "project": {"causal": True},
         "mha": {"attn_mask": causal_blocked},
         "sdpa": {"is_causal": True}},
        {"name": "unmasked self-attention", "kind": "self", "x": x, "context": None,
         "project": {"causal": False}, "mha": {}, "sdpa": {}},
        {"name": f"cross-attention ({tq} queries, {tk} keys)", "kind": "cross", "x": y, "context": mem,
         "project": {"causal": False}, "mha": {}, "sdpa": {}},
        {"name": "key padding (self, unmasked)", "kind": "masked", "x": x, "context": None,
         "project": {"causal": False, "mask": pad4.expand(B, 1, T, T)},
         "mha": {"key_padding_mask": ~real},
         "sdpa": {"attn_mask": pad4}},
        {"name": "key padding + causal (self)", "kind": "masked", "x": x, "context": None,
         "project": {"causal": True, "mask": pad4.expand(B, 1, T, T)},
         "mha": {"attn_mask": causal_blocked, "key_padding_mask": ~real},
         "sdpa": {"attn_mask": pad4 & ~causal_blocked}},
        {"name": f"causal cross-attention ({tq} queries, {tk} keys)", "kind": "cross", "x": y, "context": mem,
         "project": {"causal": True},
         "mha": {"attn_mask": blocked_after(tq, tk)},
         "sdpa": {"attn_mask": ~blocked_after(tq, tk)}},
    ]


def run_case(attn: SelfAttention, mha: nn.MultiheadAttention, case: dict, dtype=torch.float32):
    """(project, mha, sdpa) outputs for one case, all in `dtype`."""
    x = case["x"].to(dtype)
    ctx = None if case["context"] is None else case["context"].to(dtype)
    src = x if ctx is None else ctx
    with torch.no_grad():
        ours = attn(x, context=ctx, **case["project"])
        theirs, _ = mha(x, src, src, need_weights=False, **case["mha"])
        sdpa = sdpa_forward(attn, x, ctx, **case["sdpa"])
    return ours, theirs, sdpa


def _max(t) -> float:
    return t.abs().max().item()


def compare(attn: SelfAttention, case_list: list[dict]) -> list[dict]:
    mha = to_mha(attn)
    attn64 = copy_as(attn, torch.float64)
    mha64 = to_mha(attn64)
    out = []
    for case in case_list:
        ours, theirs, sdpa = run_case(attn, mha, case)
        exact = run_case(attn64, mha64, case, torch.float64)[0]  # the project in float64: the reference
        errs = [(o.double() - exact) for o in (ours, theirs, sdpa)]
        out.append({
            "name": case["name"], "kind": case["kind"],
            "t_q": case["x"].size(1), "t_k": (case["context"] if case["context"] is not None else case["x"]).size(1),
            "output_shape": list(ours.shape),
            "shapes_agree": ours.shape == theirs.shape == sdpa.shape,
            "max_abs_diff_mha": _max(ours - theirs),
            "max_abs_diff_sdpa": _max(ours - sdpa),
            "max_abs_diff_mha_vs_sdpa": _max(theirs - sdpa),  # PyTorch against itself: the noise floor
            "max_abs_err_vs_float64": {"project": _max(errs[0]), "mha": _max(errs[1]), "sdpa": _max(errs[2])},
            "mean_abs_output": ours.abs().mean().item(),
            "max_abs_output": _max(ours),
        })
    return out


def copy_as(attn: SelfAttention, dtype: torch.dtype) -> SelfAttention:
    """The same layer (same weights, rounded to `dtype`) in another dtype; the original is left alone."""
    twin = SelfAttention(attn.v.in_features, attn.n_heads, out_proj=True, bias=True).to(dtype).eval()
    twin.load_state_dict(attn.state_dict())
    return twin


def causal_alignment(attn: SelfAttention, case: dict) -> dict:
    """With Tq != Tk the project's causal mask aligns the last query with the last key; PyTorch's
    is_causal aligns the first query with the first key. Measure how far apart they land."""
    with torch.no_grad():
        ours = attn(case["x"], context=case["context"], causal=True)
        top_left = sdpa_forward(attn, case["x"], case["context"], is_causal=True)
    return {"t_q": case["x"].size(1), "t_k": case["context"].size(1),
            "project_vs_sdpa_is_causal_max_abs_diff": _max(ours - top_left),
            "note": "is_causal=True lets query i see keys 0..i; attnlab lets it see keys 0..i+(t_k-t_q)"}


def leakage(attn: SelfAttention, x: torch.Tensor, cut: int) -> dict:
    """Causal self-attention: weights above the diagonal, and whether changing tokens after `cut`
    moves any output at or before it."""
    with torch.no_grad(), recording(attn) as kept:
        out = attn(x, causal=True)
        weights = kept()[0]["weights"]
        changed = x.clone()
        changed[:, cut + 1:] = torch.randn(changed[:, cut + 1:].shape, generator=torch.Generator().manual_seed(7))
        out2 = attn(changed, causal=True)
    T = x.size(1)
    above = torch.ones(T, T, dtype=torch.bool).triu(1)
    return {"above_diagonal_weight_max": weights[..., above].abs().max().item(),
            "future_perturbation_max_diff": _max(out[:, : cut + 1] - out2[:, : cut + 1]),
            "later_positions_changed": _max(out[:, cut + 1:] - out2[:, cut + 1:]) > 0, "cut": cut}


# ------------------------------------------------------------ low precision

def low_precision(attn: SelfAttention, case: dict) -> list[dict]:
    """The project in float16 / bfloat16 on a masked case (causal + key padding), against float32."""
    rows = []
    ref = None
    for name in LOW_PRECISION:
        dtype = getattr(torch, name)
        twin = copy_as(attn, dtype)
        with torch.no_grad(), recording(twin) as kept:
            out = twin(case["x"].to(dtype), **case["project"])
            record = kept()[0]
        w, allowed = record["weights"], record["allowed"].expand_as(record["weights"])
        if ref is None:
            ref = out.float()
        eps = torch.finfo(dtype).eps
        tol = TOL_EPS * eps * _max(ref)
        diff = _max(out.float() - ref)
        minus_1e9 = torch.tensor(-1e9, dtype=dtype)
        rows.append({
            "dtype": name, "eps": eps,
            "max_abs_diff_vs_fp32": diff, "tolerance": tol, "within_tolerance": diff <= tol,
            "mean_abs_output": out.float().abs().mean().item(),
            "masked_weight_max": w[~allowed].abs().max().item(),
            "masked_weights_exactly_zero": bool((w[~allowed] == 0).all()),
            "has_nan": bool(torch.isnan(out).any() or torch.isnan(w).any()),
            "row_sum_max_error": (w.float().sum(-1) - 1).abs().max().item(),
            "minus_inf_stays_inf": bool(torch.isneginf(torch.tensor(float("-inf")).to(dtype))),
            "minus_1e9_cast": repr(float(minus_1e9)),
            "minus_1e9_is_inf": bool(torch.isneginf(minus_1e9)),
            **fully_masked_fill(dtype),
        })
    return rows


def fully_masked_fill(dtype) -> dict:
    """A row with every key masked, in `dtype`: the project core (−inf, then zeros) against the common
    −1e9 additive mask, built in float32 and cast with the model, and against masked_fill(-1e9) in `dtype`."""
    g = torch.Generator().manual_seed(11)
    q, k, v = (torch.randn(1, 1, t, 8, generator=g).to(dtype) for t in (3, 5, 5))
    allowed = torch.ones(3, 5, dtype=torch.bool)
    allowed[1] = False
    out, w = attention(q, k, v, causal=False, mask=allowed)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(8)
    additive = torch.zeros(3, 5).masked_fill(~allowed, -1e9).to(dtype)  # a float32 buffer, cast with the model
    row = F.softmax(scores + additive, dim=-1)[0, 0, 1]
    if torch.isnan(row).any():
        outcome = "NaN (−1e9 became −inf)"
    elif (row > 0).all() and row.max() == row.min():
        outcome = "uniform over the masked keys (they leak)"
    elif (row > 0).any():
        outcome = "spread over the masked keys (they leak)"
    else:
        outcome = "zeros"
    try:
        scores.masked_fill(~allowed, -1e9)
        fill = "accepted"
    except RuntimeError as err:  # float16 refuses a constant it cannot hold
        fill = f"error: {err}"
    return {"minus_1e9_fully_masked_row": outcome,
            "minus_1e9_row_leaks": bool((row > 0).any() and not torch.isnan(row).any()),
            "minus_1e9_masked_fill": fill,
            "project_fully_masked_row_zero": bool((out[0, 0, 1] == 0).all() and (w[0, 0, 1] == 0).all()),
            "project_fully_masked_has_nan": bool(torch.isnan(out).any())}


# ------------------------------------------------------------ fully masked

def _row(t: torch.Tensor, bias: torch.Tensor | None = None) -> dict:
    """NaN or not, and whether the row is what a row that sees nothing should give: zeros from the
    attention itself, W_o's bias from a whole layer."""
    if bias is None:
        return {"has_nan": bool(torch.isnan(t).any()), "is_zero": bool((t == 0).all())}
    return {"has_nan": bool(torch.isnan(t).any()), "equals_out_bias": bool(torch.equal(t, bias))}


def fully_masked(attn: SelfAttention, seed: int) -> dict:
    """One query row with every key masked: the project core, SDPA (each CPU backend), and nn.MultiheadAttention."""
    g = torch.Generator().manual_seed(seed + 2)
    h, dh, tq, tk, row = attn.n_heads, attn.d_k, 5, 6, 2
    q, k, v = (torch.randn(1, h, t, dh, generator=g) for t in (tq, tk, tk))
    allowed = torch.ones(tq, tk, dtype=torch.bool)
    allowed[row] = False
    ours, _ = attention(q, k, v, causal=False, mask=allowed)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    additive = torch.zeros(tq, tk).masked_fill(~allowed, float("-inf"))
    sdpa_float = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    backends = {}
    for name, backend in (("math", SDPBackend.MATH), ("flash_attention", SDPBackend.FLASH_ATTENTION),
                          ("efficient_attention", SDPBackend.EFFICIENT_ATTENTION)):
        try:
            with sdpa_kernel([backend]):
                backends[name] = _row(F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)[0, :, row])
        except RuntimeError:
            backends[name] = "not available on this device"
    others = torch.ones(tq, dtype=torch.bool)
    others[row] = False

    # Module level (self-attention, so T x T): the row becomes the output projection's bias,
    # unless something turns it into NaN.
    x = torch.randn(1, tq, attn.v.in_features, generator=g)
    square = torch.ones(tq, tq, dtype=torch.bool)
    square[row] = False
    mha = to_mha(attn)
    with torch.no_grad():
        mod = attn(x, causal=False, mask=square)
        fast, _ = mha(x, x, x, attn_mask=~square, need_weights=False)    # eval + no_grad: fused fast path
        weighed, _ = mha(x, x, x, attn_mask=~square, need_weights=True)  # returns weights: plain softmax
    with torch.enable_grad():
        slow, _ = mha(x, x, x, attn_mask=~square, need_weights=False)    # autograd on: the SDPA path
    bias = attn.out.bias.detach()
    return {
        "t_q": tq, "t_k": tk, "row": row,
        "project_row": ours[0, 0, row].tolist(),
        "project_row_is_zero": bool((ours[0, :, row] == 0).all()),
        "project_has_nan": bool(torch.isnan(ours).any()),
        "sdpa_row": [None if math.isnan(a) else a for a in sdpa[0, 0, row].tolist()],
        "sdpa_row_has_nan": bool(torch.isnan(sdpa[0, :, row]).any()),
        "sdpa_row_is_zero": bool((sdpa[0, :, row] == 0).all()),
        "sdpa_float_mask_row": _row(sdpa_float[0, :, row]),
        "sdpa_backends": backends,
        "other_rows_max_abs_diff": _max(ours[..., others, :] - sdpa[..., others, :]),
        "module": {
            "project_row_equals_out_bias": bool(torch.equal(mod[0, row], bias)),
            "project_has_nan": bool(torch.isnan(mod).any()),
            "mha_fast_path": _row(fast[0, row], bias),
            "mha_need_weights": _row(weighed[0, row], bias),
            "mha_sdpa_path": _row(slow.detach()[0, row], bias),
        },
    }


# --------------------------------------------------------------------- main

def permutation(attn: SelfAttention, x: torch.Tensor, seed: int) -> dict:
    """C5.5: unmasked self-attention without positions commutes with shuffling the tokens; with RoPE it does not.
    Returns max |attn(x[perm]) - attn(x)[perm]| for both."""
    perm = torch.randperm(x.size(1), generator=torch.Generator().manual_seed(seed))
    out = {}
    with torch.no_grad():
        for label, rope in (("no_position", False), ("rope", True)):
            attn.rope = rope
            out[f"max_abs_diff_{label}"] = _max(attn(x[:, perm], causal=False) - attn(x, causal=False)[:, perm])
    attn.rope = False
    out["mean_abs_output"] = attn(x, causal=False).abs().mean().item()
    return out


def run(seed: int = 0, settings: dict | None = None) -> dict:
    settings = {**SETTINGS, **(settings or {})}
    attn = make_attention(settings["d_model"], settings["n_heads"], seed)
    case_list = cases(settings, seed)
    measured = compare(attn, case_list)
    masked = next(c for c in case_list if c["name"].startswith("key padding + causal"))
    causal_cross = next(c for c in case_list if c["name"].startswith("causal cross"))
    return {
        "cases": measured,
        "causal": leakage(attn, case_list[0]["x"], cut=settings["t_self"] // 2),
        "causal_alignment": causal_alignment(attn, causal_cross),
        "low_precision": low_precision(attn, masked),
        "low_precision_case": masked["name"],
        "fully_masked": fully_masked(attn, seed),
        "permutation": permutation(attn, case_list[0]["x"], seed),
        "float32_eps": torch.finfo(torch.float32).eps,
        "settings": {**settings, "seed": seed, "n_params": sum(p.numel() for p in attn.parameters()),
                     "torch": torch.__version__},
    }


def main(cfg: dict, out_path) -> dict:
    from attnlab import provenance

    return provenance.measured(cfg, out_path, lambda: run(seed=cfg["seed"]))
