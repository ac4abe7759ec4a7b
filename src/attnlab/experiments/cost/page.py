"""E6 and S7: one attention layer's time and memory as n doubles, naive, with SDPA and in tiles."""
from __future__ import annotations

import altair as alt
import pandas as pd
import yaml

from attnlab.experiments.cost import derive
from attnlab.report.charts import lines_with_marks
from attnlab.report.format import chart, gpu_region, machine, md_table, num
from attnlab.report.readings import growth, interval, said
from attnlab.stats import Estimate, side
from attnlab.report.context import experiment_page

NAME = "cost"


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: >-
  Dao et al. 2022 (arXiv:2205.14135); Beltagy et al. 2020 (arXiv:2004.05150); Choromanski et al. 2021
  (arXiv:2009.14794)
rows:
  - aspect: S7 · the tiles
    paper: >-
      One fused CUDA kernel: tiles of Q, K and V are loaded into on-chip SRAM and combined with an online
      softmax, so the n × n matrix is never written to GPU memory; the backward pass recomputes it from the
      saved softmax statistics.
    here: >-
      The same algorithm (`attnlab.nn.tiled`) as a Python loop over PyTorch operations, in tiles of
      {cost.block}: each tile's scores are an ordinary tensor in the device's memory. PyTorch's own fused kernel
      (`sdpa`) is timed beside it.
    why: >-
      The loop shows the algorithm's exactness and its memory, linear in n, in code one can read; the paper's
      speed comes from the fused kernel, which a Python loop cannot be.
  - aspect: S7 · the measurement
    paper: >-
      Forward and backward runtime and memory on an A100 GPU in half precision, against standard and
      approximate attention implementations, as the sequence grows.
    here: >-
      The forward pass of one causal layer, without gradients: width {cost.d_model}, {cost.heads} heads, batch
      {cost.batch_size}, {cost.dtype}, n = {cost.sizes}, on {device:cost}.
    why: >-
      The forward pass is where the naive method holds the n × n matrix and the tiled one does not, which is
      the claim; the backward pass's recomputation is left out.
  - aspect: S8 · Longformer's window
    paper: >-
      A sliding window (512 tokens in the pretrained model; sizes growing with depth, and dilation in some
      heads, in its character-level language model), plus global attention on chosen task tokens that is
      symmetric: a global token attends to every token and every token to it. Judged by task accuracy and bits
      per character after training with the pattern.
    here: >-
      A causal window of {cost.window} keys ending at the query ({cost.errors.windows} in the error sweep),
      plus the first {cost.n_global} tokens as global: every query sees them, and they see all before them,
      which is only each other, so the "attends to every token" half does nothing here. Judged by the error
      against exact attention, nothing trained.
    why: >-
      In a causal model a global token can attend only to its past; the paper's global tokens that read the
      whole document serve its bidirectional tasks and have no causal equivalent. Periodic global tokens that
      see their whole prefix are trained in [S8 trained](approximate_training.md). The error isolates what the
      window drops.
  - aspect: S8 · Performer's FAVOR+
    paper: >-
      Positive orthogonal random features. The paper studies the estimate's error as the features grow
      (orthogonal against independent, positive against trigonometric features) and trains Performers,
      redrawing the features during training, on proteins, images and text.
    here: >-
      Positive orthogonal features, {cost.errors.features} of them in the error sweep ({cost.features} when
      timed), drawn anew at each of {cost.errors.seeds} draws of unit Gaussian queries, keys and values of
      {cost.errors.n} tokens in float64; the output's relative error against exact causal attention. Nothing is
      trained.
    why: >-
      The error against exact attention isolates what the estimate gives up; Gaussian inputs are what
      [S8 on a trained layer](approximation.md) replaces by a trained layer's own.
""")


def method_colour(t: pd.DataFrame) -> alt.Color:
    return alt.Color("method:N", sort=derive.methods(t), scale=alt.Scale(domain=derive.methods(t)), title=None)


def status(row: dict) -> str:
    """A row's status: 'ok', 'out of memory', or 'not run here: <reason>' (a table row, so absent is NaN)."""
    if isinstance(row.get("not_run"), str):
        return f"not run here: {row['not_run']}"
    oom = row.get("oom")
    return "out of memory" if oom == oom and oom else "ok"  # NaN (never recorded) is not equal to itself


def charts(t: pd.DataFrame) -> tuple[dict, dict]:
    done = derive.ran_rows(t)
    sizes = sorted(set(done["n"]))
    x = alt.X("n:Q", scale=alt.Scale(type="log", base=2), axis=alt.Axis(values=sizes), title="sequence length n")
    measured = done[done["method"] != "projections"].dropna(subset=["peak_mb"])
    time = lines_with_marks(alt.Chart(done).encode(
        x=x, y=alt.Y("median_ms:Q", scale=alt.Scale(type="log"), title="ms per forward"), color=method_colour(done),
        tooltip=["method", "n", alt.Tooltip("median_ms:Q", format=".3f"), alt.Tooltip("p20_ms:Q", format=".3f"),
                 alt.Tooltip("p80_ms:Q", format=".3f"), "samples"]), "method", derive.methods(done)).properties(
        width=420, height=280, title="Forward time (median, log-log)")
    memory = lines_with_marks(alt.Chart(measured).encode(
        x=x, y=alt.Y("peak_mb:Q", scale=alt.Scale(type="log"), title="MiB"), color=method_colour(measured),
        tooltip=["method", "n", alt.Tooltip("peak_mb:Q", format=".1f"), alt.Tooltip("score_mb:Q", format=".1f")]),
        "method", derive.methods(measured)).properties(width=420, height=280, title="Peak memory (log-log)")
    return time.to_dict(), memory.to_dict()


def error_chart(e: dict) -> dict:
    """S8: relative error against exact attention, as the window or the number of features grows (log-log)."""
    data = derive.errors(e).replace({"method": {"window": "window (+ global tokens)",
                                                "favor": "favor (random features)"}})
    data = data[data["error"] > 0]  # an exact result (window as long as n) has no place on a log axis
    return alt.Chart(data, title=f"Error against exact attention (n = {e['n']}, head width {e['head_dim']})").mark_line(
        point=True).encode(
        x=alt.X("size:Q", scale=alt.Scale(type="log", base=2), title="window length / number of random features"),
        y=alt.Y("error:Q", scale=alt.Scale(type="log"), title="‖approx − exact‖ / ‖exact‖"),
        color=alt.Color("method:N", title=None),
        tooltip=["method", "size", alt.Tooltip("error:Q", format=".3g")]).properties(width=420, height=260).to_dict()


def against_one(row: dict, draws: int) -> tuple[str | None, str]:
    """Whether FAVOR+'s error at one feature count lies above or below 1 (an output as far from exact attention
    as zeros would be), and on what: its interval where the run file states an error ('beyond the noise'), else
    its draws' range ('at every draw', when every draw lies on one side); (None, '') with neither."""
    where = side(Estimate(row["relative_error"], row.get("se") or None, draws - 1), 1.0)  # its mean over the draws
    if where is not None:
        return where, "beyond the noise"
    where = derive.draws_against(row, 1.0)
    return (where, "at every draw") if where else (None, "")


SIZES = {"window": ("window", "The window's error", "at a window of", ""),
         "favor": ("features", "FAVOR+'s error", "with", " random features")}


def shrink_words(e: dict, method: str) -> str:
    """How a method's error changes from its smallest size to its largest: the ratio with its interval, said as a
    fall or a rise only where the interval clears 1."""
    key, who, at, unit = SIZES[method]
    first, last = e[method][0], e[method][-1]
    text = (f"{who} goes from {first['relative_error']:.3g} {at} {first[key]}{unit} to {last['relative_error']:.3g} "
            f"{at} {last[key]}{unit}")
    shrink = e.get(f"{method}_shrink") or {}
    if not shrink.get("se"):
        return text + f" (×{last['relative_error'] / first['relative_error']:.2f}; the run file states no error for it)"
    ratio = Estimate(shrink["ratio"], shrink["se"], derive.draws(e) - 1)
    return text + (f" (×{interval(ratio, signed=False)}, 95 % over the draws: "
                   + said(ratio, of=1.0, above="it rises", below="it falls") + ")")


def rate_words(e: dict) -> str:
    """FAVOR+'s measured rate against the square root's: the log-log slope of its error on the feature count,
    with its interval, against −0.5; the two-point ratio where the run file has no fitted rate."""
    f0, f1 = e["favor"][0], e["favor"][-1]
    root = (f0["features"] / f1["features"]) ** 0.5
    rate = e.get("favor_rate") or {}
    if not rate.get("se"):
        return (f"a fall as the square root of the features would give ×{root:.2f} over that range; the run file "
                "records no fitted rate with an error, so the page does not judge the rate")
    r = Estimate(rate["slope"], rate["se"], derive.draws(e) - 1)
    return (f"its log-log slope on the number of features is {interval(r, signed=False)} (95 % over the draws), "
            "against −0.5 for the square root: " + said(r, of=-0.5, above="it falls more slowly than the square root",
                                                         below="it falls faster than the square root",
                                                         within="as the square root, within the noise"))


def above_one_words(e: dict) -> str:
    """The feature counts at which FAVOR+ errs by more than the output itself (relative error above 1)."""
    draws, rows = derive.draws(e), e["favor"]
    judged = [(f["features"], *against_one(f, draws)) for f in rows]
    above = [(size, basis) for size, where, basis in judged if where == "above"]
    if not above:
        return ""
    bases = " or ".join(sorted({basis for _, basis in above}))
    where = "every feature count measured" if len(above) == len(rows) else \
        f"{len(above)} of {len(rows)} feature counts ({', '.join(str(size) for size, _ in above)})"
    return (f" At {where} FAVOR+'s error is above 1 ({bases}): its output is farther from exact attention than "
            "an output of zeros would be (whose relative error is exactly 1).")


WINDOW_ERROR = ("a window drops keys and spreads their weight over the keys it keeps, so each output moves by the "
                "weight the dropped keys would have had times the distance between their average value and the kept "
                "keys'; the error measured here, ‖approx − exact‖ / ‖exact‖, divides that by the size of the exact "
                "output, so it is not the dropped weight, and nothing bounds it by 1.")


def window_error_words(errors: list[float], over: str = "") -> str:
    """What a window's error is (WINDOW_ERROR) and the size of the ones measured, generated from them: their range,
    and how many lie above 1 (an output farther from exact attention than zeros, which no weight can be); what it
    is alone where none was measured."""
    if not errors:
        return WINDOW_ERROR
    above = sum(x > 1 for x in errors)
    size = (f"Here the window's errors{over} run from {min(errors):.3g} to {max(errors):.3g}"
            + (f"; {above} of {len(errors)} {'lies' if above == 1 else 'lie'} above 1: larger than any weight could "
               "be." if above else ", all below 1."))
    return WINDOW_ERROR + " " + size


def error_reading(e: dict) -> str:
    """The error table in words, generated from it: each method's change from its smallest size to its largest
    (a fall only where the interval clears 1), FAVOR+'s rate against the square root, and where its error
    exceeds the output itself."""
    return (shrink_words(e, "window") + ". " + shrink_words(e, "favor") + "; " + rate_words(e) + "."
            + above_one_words(e) + "\n")


def fitted(rows: list[dict], key: str) -> Estimate | None:
    """derive.fit's slope as an estimate (None without one)."""
    fit = derive.fit(rows, key)
    return None if fit is None else Estimate(*fit)


def slope_words(e: Estimate | None, what: str) -> str:
    """'time n^(1.81 ± 0.17), between linear and quadratic'."""
    if e is None:
        return f"{what} –"
    return f"{what} n<sup>{interval(e, signed=False)}</sup>, {growth(e)}"


def slopes_text(r: dict) -> str:
    """Each method's log-log slopes of time and memory over its last sizes, with the fit's interval, in words
    (linear, quadratic, between them) only where the interval says so."""
    lines = []
    for m in r["slopes"]:
        rows = [x for x in r["rows"] if x["method"] == m]
        lines.append(f"- **{m}** (to n = {r['longest'][m]}"
                     + (f", out of memory at n = {r['oom'][m]}" if r["oom"].get(m) else "") + "): "
                     + slope_words(fitted(rows, "median_ms"), "time") + "; "
                     + slope_words(fitted(rows, "peak_bytes"), "memory") + ".")
    if r.get("projections"):
        lines.append("- **projections** alone: " + slope_words(fitted(r["projections"], "median_ms"), "time") + ".")
    skipped = (f"\n\nNot run here: {r['not_run']}. Their rows in the table hold no number, and the charts leave "
               "them out.\n") if r.get("not_run") else "\n"
    return (f"Log-log slopes over the last {derive.SLOPE_ROWS} sizes each method finished, ± k·SE of the fit (95 %; its "
            "residual error at two degrees of freedom), and what they say against linear (1) and quadratic (2):\n\n"
            + "\n".join(lines) + skipped)


def settings_words(r: dict) -> str:
    """What the result ran, in words: the page's settings block."""
    s = r["settings"]
    return (f"width d = {s['d_model']}, {s['heads']} heads, batch {s['batch_size']}, {s['dtype']}, "
            f"n = {', '.join(map(str, s['sizes']))}; blocks of {s['block']} for the tiled and window "
            f"methods; a window of {s['window']} with {s['n_global']} global tokens; "
            f"{s['features']} random features")


def render(ctx) -> dict[str, str]:
    r, out = ctx.result, {}
    t = derive.table(r)
    t["status"] = [status(row) for row in t.to_dict("records")]
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
    out["window_error"] = window_error_words([w["relative_error"] for w in e["window"]])
    errors, favor = derive.error_tables(e)
    out["error_table"] = (md_table(errors, {"window": "window", "window_error": "relative error"},
                                   {"window_error": lambda v: f"{v:.3g}"}) + "\n\n"
                          + md_table(favor, {"features": "random features", "favor_error": "relative error (mean)",
                                             "favor_se": "its SE", "favor_min": "lowest", "favor_max": "highest"},
                                     dict.fromkeys(("favor_error", "favor_se", "favor_min", "favor_max"),
                                                   lambda v: f"{v:.3g}")))
    gpu = next(filter(None, (gpu_region(row.get("nvml")) for row in r["rows"])), None)
    method = next((row["memory_method"] for row in r["rows"] if row.get("memory_method")), "not measured")
    out["machine"] = (f"Measured on {machine(r['device'], r['threads'])}. Peak memory: {method}."
                      + (f" The GPU during the first timing: {gpu}." if gpu else ""))
    return out


blocks = experiment_page(NAME, render, settings=settings_words)
