"""S4: one attention layer split into h heads of d/h - FLOPs counted and forward time measured."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.report.format import chart, clocks, gpu_region, md_table, num

NAME = "multihead"


def time_long(s4: dict) -> pd.DataFrame:
    """Median ms per head count, split into the attention core and the rest (projections, reshapes)."""
    rows = []
    for r in s4["rows"]:
        core = r.get("ms_core_median")
        if core is None:
            rows.append({"heads": r["heads"], "part": "whole layer", "ms": r["ms_median"]})
            continue
        rows.append({"heads": r["heads"], "part": "attention core (scores, mask, softmax, mix)", "ms": core})
        rows.append({"heads": r["heads"], "part": "projections and reshapes (rest of the layer)",
                     "ms": max(r["ms_median"] - core, 0.0)})
    return pd.DataFrame(rows)


def time_chart(s4: dict) -> dict:
    long = time_long(s4)
    heads = [r["heads"] for r in s4["rows"]]
    return alt.Chart(long, title=f"Forward time of one layer, d = {s4['d_model']} (median of "
                                 f"{s4['repeats']} rounds)").mark_bar().encode(
        x=alt.X("heads:O", sort=heads, title="heads h (each of width d/h)"),
        y=alt.Y("sum(ms):Q", title="ms per forward"),
        color=alt.Color("part:N", title=None, legend=alt.Legend(orient="bottom", direction="vertical")),
        tooltip=["heads", "part", alt.Tooltip("ms:Q", format=".3f")],
    ).properties(width=420, height=280).to_dict()


def blocks(site) -> dict[str, str]:
    s4 = site.res.result(NAME)
    out = site.skeleton(NAME)
    if s4 is None:
        missing = site.missing(NAME)
        return out | {"settings": "_not run_", "cost_table": missing, "time_chart": "", "machine": ""}

    out["settings"] = (f"width d = {s4['d_model']}, context T = {s4['context']}, batch B = {s4['batch_size']}, "
                       f"heads {', '.join(str(h) for h in s4['heads'])}; {s4['warmup']} untimed and "
                       f"{s4['repeats']} timed rounds")
    table = pd.DataFrame(s4["rows"]).assign(gflops=lambda t: t["flops"] / 1e9,
                                            msoftmax=lambda t: t["softmax_elements"] / 1e6)
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
    out["machine"] = machine + (f" Slowest over fastest median: **{s4['time_ratio_max_min']:.2f}**; "
                                f"matrix-product FLOPs equal across h: **{'yes' if s4['flops_equal'] else 'no'}**.")
    return out
