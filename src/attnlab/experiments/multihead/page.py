"""S4: one attention layer split into h heads of d/h - FLOPs counted and forward time measured."""
from __future__ import annotations

import altair as alt
import yaml

from attnlab.claims.summary import upper_bound
from attnlab.report.format import chart, clocks, fmt, gpu_region, md_table, num
from attnlab.report.readings import interval, said
from attnlab.stats import Estimate
from attnlab.report.context import experiment_page
from attnlab.experiments.multihead import derive

NAME = "multihead"


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: Vaswani et al. 2017 (arXiv:1706.03762)
rows:
  - aspect: the claim's basis
    paper: >-
      An argument from the shapes: with heads of width d_model/h, the total cost is about that of one head of
      full width (the base model: d_model 512, h = 8, d_k = d_v = 64). No head count is timed.
    here: >-
      The matrix products' FLOPs counted from the shapes, and one layer's forward pass timed: width
      {multihead.d_model}, context {multihead.context}, batch {multihead.batch_size}, heads {multihead.heads};
      {multihead.repeats} timed rounds, on {device:multihead}.
    why: >-
      The argument counts the matrix products only; a forward pass also pays for the softmax over B·h·T² scores
      and for products with a short inner dimension (d/h), so the time is measured beside the count.
  - aspect: what the head count is varied for
    paper: >-
      Translation quality (BLEU, English→German) at h from 1 to 32 with the computation held constant
      (Table 3).
    here: >-
      Cost only: no model is trained, the layer's weights are random.
    why: >-
      S4 is a claim about cost; quality per head count is outside it.
""")



PARTS = {"whole": "whole layer", "core": "attention core (scores, mask, softmax, mix)",
         "rest": "projections and reshapes (rest of the layer)"}  # derive.time_parts' parts, as the chart names them


def time_chart(s4: dict) -> dict:
    long = derive.time_parts(s4).assign(part=lambda t: t["part"].map(PARTS))
    heads = [r["heads"] for r in s4["rows"]]
    return alt.Chart(long, title=f"Forward time of one layer, d = {s4['d_model']} (median of "
                                 f"{s4['repeats']} rounds)").mark_bar().encode(
        x=alt.X("heads:O", sort=heads, title="heads h (each of width d/h)"),
        y=alt.Y("sum(ms):Q", title="ms per forward"),
        color=alt.Color("part:N", title=None, legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0)),
        tooltip=["heads", "part", alt.Tooltip("ms:Q", format=".3f")],
    ).properties(width=420, height=280).to_dict()


def band_words(e: Estimate, band: float) -> str:
    """Where the slowest-over-fastest interval lies against S4's band: what "about the same time" allows."""
    return "; " + said(e, of=band, above=f"beyond S4's band of {fmt(band)}×, so not \"about the same time\"",
                       below=f"inside S4's band of {fmt(band)}×, which \"about the same time\" allows",
                       within=f"on S4's band of {fmt(band)}× within the noise")


def time_reading(s4: dict, band: float | None = None) -> str:
    """The timings in words: slowest over fastest median with its interval (a bootstrap over the rounds, where
    the run file states one), which head counts those are only where the interval clears 1, where that interval
    lies against S4's `band` (the most "about the same time" allows), and where the time went (the core alone
    against the rest of the layer) from the fewest heads to the most."""
    e = Estimate(s4["time_ratio_max_min"], s4.get("time_ratio_se") or None)
    slow, fast = derive.slowest_fastest(s4)
    text = (f"Slowest over fastest median: **{interval(e, signed=False)}**"
            + (" (95 %, a bootstrap over the rounds)" if e.half is not None else "") + ": " + said(
        e, of=1.0, above=f"the head count changes the forward time beyond the noise (slowest at h = {slow['heads']}, "
                         f"fastest at h = {fast['heads']})",
        below="", within="the head count leaves the forward time where it was, within the noise",
        unknown="the run file states no error for it, so the page does not say whether h moves the time")
        + (band_words(e, band) if e.half is not None and band is not None else "") + ".")
    if ends := derive.core_and_rest(s4):
        (h0, core0, rest0), (h1, core1, rest1) = ends
        text += (f" From h = {h0} to h = {h1} the core alone goes from {core0:.3f} to {core1:.3f} ms, the rest of "
                 f"the layer from {rest0:.3f} to {rest1:.3f} ms.")
    return text


def render(ctx) -> dict[str, str]:
    site, s4, out = ctx.site, ctx.result, {}

    out["settings"] = (f"width d = {s4['d_model']}, context T = {s4['context']}, batch B = {s4['batch_size']}, "
                       f"heads {', '.join(str(h) for h in s4['heads'])}; {s4['warmup']} untimed and "
                       f"{s4['repeats']} timed rounds")
    table = derive.costs(s4)
    headers = {"heads": "heads", "head_dim": "head width", "gflops": "GFLOP (matmuls)",
               "msoftmax": "softmax scores (millions)", "ms_median": "ms, median", "ms_min": "ms, fastest",
               "ms_core_median": "ms, core alone", "ratio_to_one_head": "× one head"}
    headers = {k: v for k, v in headers.items() if k in table.columns}
    out["cost_table"] = md_table(table, headers, {
        "gflops": num(4), "msoftmax": num(2), "ms_median": num(3), "ms_min": num(3), "ms_core_median": num(3),
        "ratio_to_one_head": num(2)})
    out["time_chart"] = chart("chart-s4-time", time_chart(s4))
    gpu = gpu_region(s4.get("nvml")) or clocks(s4.get("clocks_before"))  # older run files: clocks before only
    core = s4.get("core", "the explicit score, mask, softmax and mix (this run file predates the fast path "
                          "that the text above describes)")
    machine = f"Measured on **{s4['device']}**; the core alone was timed as {core}."
    if gpu:
        machine += f" The GPU during the timing: {gpu}."
    out["machine"] = machine + (f" Matrix-product FLOPs equal across h: **{'yes' if s4['flops_equal'] else 'no'}**. "
                                + time_reading(s4, upper_bound(site.registry, "S4", "time_ratio_max_min")))
    return out


blocks = experiment_page(NAME, render)
