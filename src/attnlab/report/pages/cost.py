"""E6 and S7: one attention layer's time and memory as n doubles, naive, with SDPA and in tiles."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.report.format import chart, gpu_region, md_table, num

NAME = "cost"
ORDER = ["naive", "sdpa", "tiled", "projections"]


def table(r: dict) -> pd.DataFrame:
    """One row per size and method (projections alone as a method of their own), OOM rows included."""
    rows = [{**p, "method": "projections"} for p in r["projections"]] + list(r["rows"])
    t = pd.DataFrame(rows)
    t["score_mb"] = t.get("score_bytes", pd.Series(dtype=float)) / 2**20
    t["peak_mb"] = t["peak_bytes"].astype(float) / 2**20 if "peak_bytes" in t else None
    t["gflop_s"] = t["flops_per_s"].astype(float) / 1e9 if "flops_per_s" in t else None
    t["_o"] = t["method"].map({m: i for i, m in enumerate(ORDER)})
    return t.sort_values(["_o", "n"]).drop(columns="_o").reset_index(drop=True)


def charts(t: pd.DataFrame) -> tuple[dict, dict]:
    done = t[~t["oom"].fillna(False).astype(bool)]
    sizes = sorted(set(t["n"]))
    x = alt.X("n:Q", scale=alt.Scale(type="log", base=2), axis=alt.Axis(values=sizes), title="sequence length n")
    color = alt.Color("method:N", sort=ORDER, title=None)
    time = alt.Chart(done, title="Forward time (median, log-log)").mark_line(point=True).encode(
        x=x, y=alt.Y("median_ms:Q", scale=alt.Scale(type="log"), title="ms per forward"), color=color,
        tooltip=["method", "n", alt.Tooltip("median_ms:Q", format=".3f"), alt.Tooltip("p20_ms:Q", format=".3f"),
                 alt.Tooltip("p80_ms:Q", format=".3f"), "samples"]).properties(width=420, height=280)
    memory = alt.Chart(done[done["method"] != "projections"].dropna(subset=["peak_mb"]),
                       title="Peak memory (log-log)").mark_line(point=True).encode(
        x=x, y=alt.Y("peak_mb:Q", scale=alt.Scale(type="log"), title="MiB"), color=color,
        tooltip=["method", "n", alt.Tooltip("peak_mb:Q", format=".1f"), alt.Tooltip("score_mb:Q", format=".1f")]
    ).properties(width=420, height=280)
    return time.to_dict(), memory.to_dict()


def slopes_text(r: dict) -> str:
    parts = []
    for m, s in r["slopes"].items():
        t = "–" if s["time"] is None else f"{s['time']:.2f}"
        mem = "–" if s["memory"] is None else f"{s['memory']:.2f}"
        parts.append(f"**{m}**: time n^{t}, memory n^{mem}, longest n {r['longest'][m]}"
                     + (f", out of memory at n = {r['oom'][m]}" if r["oom"].get(m) else ""))
    proj = r.get("projection_slope")
    return ("Log-log slopes over the last four sizes each method finished — "
            + "; ".join(parts) + (f"; **projections** alone: time n^{proj:.2f}." if proj is not None else "."))


def blocks(site) -> dict[str, str]:
    r = site.res.result(NAME)
    out = site.skeleton(NAME)
    if r is None:
        return out | {"settings": "_not run_", "cost_table": site.missing(NAME), "time_chart": "",
                      "memory_chart": "", "slopes": "", "machine": ""}
    s = r["settings"]
    out["settings"] = (f"width d = {s['d_model']}, {s['heads']} heads, batch {s['batch_size']}, {s['dtype']}, "
                       f"n = {', '.join(map(str, s['sizes']))}; tiles of {s['block']} for the tiled method")
    t = table(r)
    t["status"] = t["oom"].map(lambda o: "out of memory" if o else "ok")
    headers = {"method": "method", "n": "n", "status": "status", "median_ms": "ms (median)", "p20_ms": "p20",
               "p80_ms": "p80", "samples": "samples", "time_ratio": "× time", "score_mb": "scores MiB",
               "peak_mb": "peak MiB", "memory_ratio": "× memory", "gflop_s": "GFLOP/s", "share_of_peak": "of peak"}
    headers = {k: v for k, v in headers.items() if k in t.columns and t[k].notna().any()}
    out["cost_table"] = md_table(t, headers, {
        "median_ms": num(3), "p20_ms": num(3), "p80_ms": num(3), "time_ratio": num(2), "score_mb": num(1),
        "peak_mb": num(1), "memory_ratio": num(2), "gflop_s": num(1), "share_of_peak": lambda v: f"{v:.1%}",
        "samples": lambda v: str(int(v)), "n": lambda v: str(int(v))})
    time, memory = charts(t)
    out["time_chart"], out["memory_chart"] = chart("chart-cost-time", time), chart("chart-cost-memory", memory)
    out["slopes"] = slopes_text(r)
    gpu = None
    for row in r["rows"]:
        gpu = gpu or gpu_region(row.get("nvml"))
    method = next((row["memory_method"] for row in r["rows"] if row.get("memory_method")), "not measured")
    out["machine"] = (f"Measured on **{r['device']}** ({r['threads']} threads). Peak memory: {method}."
                      + (f" The GPU during the first timing: {gpu}." if gpu else ""))
    return out
