"""E9 (C9.1, C9.2, S3): the project's multi-head attention against nn.MultiheadAttention and SDPA."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.experiments.equivalence import derive
from attnlab.report.charts import fit_page
from attnlab.report.format import chart, fmt, md_table
from attnlab.report.readings import rounding_steps
from attnlab.report.context import experiment_page

NAME = "equivalence"
FLOAT32_EPS = 2.0 ** -23
SOURCES = {"max_abs_diff_mha": "vs nn.MultiheadAttention", "max_abs_diff_sdpa": "vs F.scaled_dot_product_attention",
           "max_abs_diff_mha_vs_sdpa": "PyTorch vs PyTorch (MHA vs SDPA)"}


def _sci(v) -> str:
    return "0" if v == 0 else f"{v:.3g}"


def _yes(v) -> str:
    return "yes" if v is True else "no" if v is False else fmt(v)


def tolerance(site) -> float:
    """The C9.1 bound from the registry (so the chart shows the bound the verdict uses)."""
    try:
        return float(site.registry.by_id("C9.1").checks["max_abs_diff"]["abs_le"])
    except (StopIteration, KeyError, TypeError, ValueError):
        return 1e-5


def chapter_diff(site) -> float | None:
    diff = site.chapter_parts("C9.1").get("max_abs_diff")
    return float(diff) if isinstance(diff, (int, float)) and not isinstance(diff, bool) else None


def diff_chart(e9: dict, bound: float, chapter: float | None) -> dict:
    """Max |diff| per case on a log axis, against float32 eps, the chapter's number and the claim's bound; exact
    zeros drawn apart, at its left edge, since a log scale has no place for 0."""
    long = derive.diff_long(e9).replace({"comparison": SOURCES})
    order = [c["name"] for c in e9["cases"]]
    lines = pd.DataFrame([("float32 eps", e9.get("float32_eps", FLOAT32_EPS)), ("bound checked (C9.1, S3)", bound)]
                         + ([(f"chapter: {chapter:.3g}", chapter)] if chapter else []), columns=["line", "value"])
    drawn = [*(v for v in long["max_abs_diff"] if v > 0), *lines["value"]]  # a log axis: exact zeros drawn apart
    lo, hi = min(drawn) / 3, max(drawn) * 3
    long = long.assign(drawn_at=long["max_abs_diff"].where(~long["exact"], lo))
    scale = alt.Scale(type="log", domain=[lo, hi])
    x = alt.X("drawn_at:Q", title="max |difference| of outputs (float32, log scale)", scale=scale,
              axis=alt.Axis(format=".0e", tickCount=6))
    legend = alt.Legend(orient="bottom", direction="vertical", title=None, labelLimit=0)
    kinds = list(SOURCES.values())
    point = dict(
        x=x, y=alt.Y("case:N", sort=order, title=None, axis=alt.Axis(labelLimit=0)),
        yOffset=alt.YOffset("comparison:N", scale=alt.Scale(domain=kinds)),
        color=alt.Color("comparison:N", scale=alt.Scale(domain=kinds), legend=legend),
        shape=alt.Shape("comparison:N", scale=alt.Scale(domain=kinds), legend=legend),
        tooltip=["case", "comparison", alt.Tooltip("max_abs_diff:Q", format=".3g")])
    points = alt.Chart(long[~long["exact"]]).mark_point(size=80, filled=True, opacity=0.9).encode(**point)
    zeros = alt.Chart(long[long["exact"]]).mark_point(size=80, filled=False, strokeWidth=2).encode(**point)
    rules = alt.Chart(lines).mark_rule(strokeDash=[4, 3]).encode(
        x=alt.X("value:Q", scale=scale),
        color=alt.value("#777"), tooltip=["line", alt.Tooltip("value:Q", format=".3g")])
    labels = alt.Chart(lines).mark_text(angle=270, align="left", dx=4, dy=-4, fontSize=10, color="#555").encode(
        x=alt.X("value:Q", scale=scale), y=alt.value(0), text="line:N")
    title = ["Project vs PyTorch, same weights: largest output difference per case"] + (
        ["hollow, at the left edge: exactly 0"] if long["exact"].any() else [])
    layered = alt.layer(rules, labels, points, zeros).properties(width=520, height=40 * max(len(order), 1),
                                                                 title=title)
    with alt.data_transformers.disable_max_rows():
        return fit_page(layered.to_dict())


def low_precision_table(e9: dict) -> pd.DataFrame:
    return pd.DataFrame([{
        "dtype": r["dtype"], "diff": r["max_abs_diff_vs_fp32"], "tol": r["tolerance"],
        "masked": r["masked_weight_max"], "nan": r["has_nan"],
        "ours": "zeros" if r["project_fully_masked_row_zero"] else "not zeros",
    } for r in e9["low_precision"]])


def minus_1e9_table(e9: dict) -> pd.DataFrame:
    return pd.DataFrame([{
        "dtype": r["dtype"], "inf": "−inf" if r.get("minus_inf_stays_inf") else "not −inf",
        "cast": r["minus_1e9_cast"].replace("-", "−"), "row": r["minus_1e9_fully_masked_row"],
        "fill": r.get("minus_1e9_masked_fill"),
    } for r in e9["low_precision"]])


def fully_masked_table(e9: dict) -> pd.DataFrame:
    fm = e9["fully_masked"]
    mod = fm.get("module") or {}

    def describe(d, bias: bool = False) -> str:
        if isinstance(d, str):
            return d
        if d.get("has_nan"):
            return "NaN"
        good = d.get("equals_out_bias") if bias else d.get("is_zero")
        return ("W_o's bias (the row saw nothing)" if bias else "zeros") if good else "other values"

    rows = [("attnlab `attention()` (the core)",
             describe({"has_nan": fm["project_has_nan"], "is_zero": fm["project_row_is_zero"]})),
            ("`F.scaled_dot_product_attention`, boolean mask (default backend)",
             describe({"has_nan": fm["sdpa_row_has_nan"], "is_zero": fm["sdpa_row_is_zero"]})),
            ("`F.scaled_dot_product_attention`, additive −inf mask", describe(fm["sdpa_float_mask_row"]))]
    rows += [(f"SDPA forced to the `{name}` backend", describe(d)) for name, d in fm.get("sdpa_backends", {}).items()]
    rows += [("attnlab `SelfAttention` (whole module)",
              describe({"equals_out_bias": mod.get("project_row_equals_out_bias")}, True)),
             ("`nn.MultiheadAttention`, eval + no_grad (fused fast path)",
              describe(mod.get("mha_fast_path", {}), True)),
             ("`nn.MultiheadAttention`, need_weights=True", describe(mod.get("mha_need_weights", {}), True)),
             ("`nn.MultiheadAttention`, autograd on (SDPA path)", describe(mod.get("mha_sdpa_path", {}), True))]
    return pd.DataFrame(rows, columns=["implementation", "fully masked row"])


def settings_table(e9: dict) -> pd.DataFrame:
    s = e9.get("settings") or {}
    rows = [("d_model / heads", f"{s.get('d_model')} / {s.get('n_heads')}"),
            ("parameters (W_q, W_k, W_v, W_o and biases)", f"{s.get('n_params', 0):,}"),
            ("batch", s.get("batch")), ("self-attention length", s.get("t_self")),
            ("cross-attention: queries × keys", f"{s.get('t_q')} × {s.get('t_k')}"),
            ("key-padding lengths", ", ".join(str(n) for n in s.get("pad_lengths", []))),
            ("dtype", s.get("dtype")), ("seed", s.get("seed")), ("torch", s.get("torch"))]
    return pd.DataFrame(rows, columns=["setting", "value"])


def agreement_reading(t: pd.DataFrame) -> str:
    """The cases table in words: attnlab's largest difference from PyTorch in float32 rounding steps, against
    PyTorch's own two paths and against the outputs' size (arithmetic on fixed inputs: no noise to judge)."""
    ours = max(t["mha"].max(), t["sdpa"].max())
    torch, lo, hi = t["torch"].dropna().max(), t["mean"].min(), t["mean"].max()
    text = (f"Over the {len(t)} cases the outputs' mean magnitude lies between {lo:.3g} and {hi:.3g}. ")
    if ours == 0:
        return text + "attnlab's outputs equal PyTorch's exactly in every case.\n"
    text += f"attnlab's largest difference from PyTorch is {_sci(ours)}, {rounding_steps(ours)}"
    if pd.notna(torch):
        text += (", no larger than" if ours <= torch else f", {ours / torch:.2g}× as large as") + \
            f" the largest difference between PyTorch's own two paths ({_sci(torch)})"
    return text + f"; the smallest mean output is {lo / ours:,.0f} times as large.\n"


def chapter_words(site) -> str:
    """The chapter's own figures for C9.1, from the registry."""
    parts = site.chapter_parts("C9.1")
    diff, size = parts.get("max_abs_diff"), parts.get("mean_abs_output")
    if diff is None or size is None:
        return ""
    return f" The chapter reports a largest difference of {fmt(diff)} on outputs whose mean magnitude is {fmt(size)}."


def alignment(e9: dict) -> str:
    a = e9.get("causal_alignment")
    if not a:
        return ""
    return (f"With {a['t_q']} queries and {a['t_k']} keys, calling SDPA with `is_causal=True` instead of the "
            f"explicit mask changes the outputs by up to **{_sci(a['project_vs_sdpa_is_causal_max_abs_diff'])}** — "
            f"not rounding, a different mask: PyTorch's `is_causal` lets query i see keys 0…i, attnlab lets it "
            f"see keys 0…i + (t_k − t_q).\n")


def unrun(ctx) -> dict[str, str]:
    return {"chapter_numbers": chapter_words(ctx.site)}


def render(ctx) -> dict[str, str]:
    site, e9, out = ctx.site, ctx.result, unrun(ctx)
    out["settings"] = md_table(settings_table(e9))
    cases = derive.cases_table(e9)
    shape = [f"{q} queries × {k} keys" for q, k in zip(cases["t_q"], cases["t_k"])]
    out["cases_table"] = md_table(cases.assign(shape=shape), {
        "case": "case", "shape": "shape", "mha": "max |diff| vs MHA", "sdpa": "max |diff| vs SDPA",
        "torch": "MHA vs SDPA", "err": "attnlab vs float64", "mean": "mean |output|"},
        {k: _sci for k in ("mha", "sdpa", "torch", "err")} | {"mean": lambda v: f"{v:.4f}"})
    out["diff_chart"] = chart("chart-equivalence", diff_chart(e9, tolerance(site), chapter_diff(site)))
    out["alignment"] = alignment(e9)
    out["agreement_reading"] = agreement_reading(cases)
    out["low_precision_table"] = md_table(low_precision_table(e9), {
        "dtype": "dtype", "diff": "max |diff| vs float32", "tol": "tolerance", "masked": "largest masked weight",
        "nan": "any NaN", "ours": "fully masked row"}, {"diff": _sci, "tol": _sci, "masked": _sci, "nan": _yes})
    out["minus_1e9_table"] = md_table(minus_1e9_table(e9), {
        "dtype": "dtype", "inf": "−inf cast to dtype", "cast": "−1e9 cast to dtype",
        "row": "a row filled with −1e9 (cast from float32)", "fill": "masked_fill(−1e9) in dtype"})
    out["fully_masked_table"] = md_table(fully_masked_table(e9))
    return out


blocks = experiment_page(NAME, render, unrun)
