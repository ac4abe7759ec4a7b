"""E6 and S7: one attention layer's time and memory as n doubles, naive, with SDPA and in tiles."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.report.format import chart, gpu_region, machine, md_table, num

NAME = "cost"
ORDER = ["naive", "sdpa", "tiled", "window", "favor", "projections"]


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


def error_chart(e: dict) -> dict:
    """S8: relative error against exact attention, as the window or the number of features grows (log-log)."""
    rows = ([{"method": "window (+ global tokens)", "size": w["window"], "error": w["relative_error"]}
             for w in e["window"]]
            + [{"method": "favor (random features)", "size": f["features"], "error": f["relative_error"]}
               for f in e["favor"]])
    data = pd.DataFrame(rows)
    data = data[data["error"] > 0]  # an exact result (window as long as n) has no place on a log axis
    return alt.Chart(data, title=f"Error against exact attention (n = {e['n']}, head width {e['head_dim']})").mark_line(
        point=True).encode(
        x=alt.X("size:Q", scale=alt.Scale(type="log", base=2), title="window length / number of random features"),
        y=alt.Y("error:Q", scale=alt.Scale(type="log"), title="‖approx − exact‖ / ‖exact‖"),
        color=alt.Color("method:N", title=None),
        tooltip=["method", "size", alt.Tooltip("error:Q", format=".3g")]).properties(width=420, height=260).to_dict()


def error_reading(e: dict) -> str:
    """The error table in words, generated from it."""
    w0, w1, f0, f1 = e["window"][0], e["window"][-1], e["favor"][0], e["favor"][-1]
    return (f"From a window of {w0['window']} to one of {w1['window']} the window's error goes from "
            f"{w0['relative_error']:.3g} to {w1['relative_error']:.3g}; from {f0['features']} to {f1['features']} "
            f"random features FAVOR+'s goes from {f0['relative_error']:.3g} to {f1['relative_error']:.3g} "
            f"(×{f1['relative_error'] / f0['relative_error']:.2f} for ×{f1['features'] // f0['features']} the "
            f"features; the square root would give ×{(f0['features'] / f1['features']) ** 0.5:.2f}).\n")


def slopes_text(r: dict) -> str:
    parts = []
    for m, s in r["slopes"].items():
        t = "–" if s["time"] is None else f"{s['time']:.2f}"
        mem = "–" if s["memory"] is None else f"{s['memory']:.2f}"
        parts.append(f"**{m}**: time n<sup>{t}</sup>, memory n<sup>{mem}</sup>, longest n {r['longest'][m]}"
                     + (f", out of memory at n = {r['oom'][m]}" if r["oom"].get(m) else ""))
    proj = r.get("projection_slope")
    return ("Log-log slopes over the last four sizes each method finished — "
            + "; ".join(parts) + (f"; **projections** alone: time n<sup>{proj:.2f}</sup>." if proj is not None else "."))


def blocks(site) -> dict[str, str]:
    r = site.res.result(NAME)
    out = site.skeleton(NAME)
    if r is None:
        return out | {"settings": "_not run_", "cost_table": site.missing(NAME), "time_chart": "",
                      "memory_chart": "", "slopes": "", "machine": "", "error_chart": "", "error_table": "", "error_reading": ""}
    s = r["settings"]
    out["settings"] = (f"width d = {s['d_model']}, {s['heads']} heads, batch {s['batch_size']}, {s['dtype']}, "
                       f"n = {', '.join(map(str, s['sizes']))}; blocks of {s['block']} for the tiled and window "
                       f"methods; a window of {s['window']} with {s['n_global']} global tokens; "
                       f"{s['features']} random features")
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
    e = r["approximation_errors"]
    out["error_chart"] = chart("chart-cost-error", error_chart(e))
    out["error_reading"] = error_reading(e)
    errors = pd.DataFrame([{"window": w["window"], "window_error": w["relative_error"]} for w in e["window"]])
    favor = pd.DataFrame([{"features": f["features"], "favor_error": f["relative_error"], "favor_se": f.get("se"),
                           "favor_min": f["min"], "favor_max": f["max"]} for f in e["favor"]])
    out["error_table"] = (md_table(errors, {"window": "window", "window_error": "relative error"},
                                   {"window_error": lambda v: f"{v:.3g}"}) + "\n"
                          + md_table(favor, {"features": "random features", "favor_error": "relative error (mean)",
                                             "favor_se": "its SE", "favor_min": "lowest", "favor_max": "highest"},
                                     {k: (lambda v: "–" if v is None or v != v else f"{v:.3g}")
                                      for k in ("favor_error", "favor_se", "favor_min", "favor_max")}))
    gpu = None
    for row in r["rows"]:
        gpu = gpu or gpu_region(row.get("nvml"))
    method = next((row["memory_method"] for row in r["rows"] if row.get("memory_method")), "not measured")
    out["machine"] = (f"Measured on {machine(r['device'], r['threads'])}. Peak memory: {method}."
                      + (f" The GPU during the first timing: {gpu}." if gpu else ""))
    return out
