"""S8 on a trained layer: the window's and FAVOR+'s error on the queries, keys and values of ladder run L9, beside
unit Gaussian inputs of the same shape."""
from __future__ import annotations

import math

import altair as alt
import pandas as pd
import yaml

from attnlab.experiments.approximation import derive
from attnlab.report.charts import log_ticks
from attnlab.report.format import chart, diverged_note, md_table
from attnlab.experiments.cost.page import window_error_words
from attnlab.report.readings import said
from attnlab.stats import Estimate
from attnlab.report.context import experiment_page

NAME, RUN = "approximation", derive.RUN


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: Beltagy et al. 2020 (arXiv:2004.05150); Choromanski et al. 2021 (arXiv:2009.14794)
rows:
  - aspect: the inputs
    paper: >-
      Longformer continues a trained model's pre-training with its pattern in place; Performers are trained
      with FAVOR+, or fine-tuned from a trained Transformer's weights. The Performer paper also measures the
      estimate's error on its own.
    here: >-
      The approximations swapped into ladder run L9 after it trained with exact attention, at every seed of the
      profile ({seeds}): its own queries, keys and values on {approximation.batches} batches of
      {approximation.batch_size} validation windows of {context:L9} tokens, beside unit Gaussian inputs of the
      same shape. Nothing is trained with an approximation.
    why: >-
      This measures what a trained layer's attention loses without retraining; a model trained with the
      approximation could adapt to it, which is not measured.
  - aspect: the window
    paper: >-
      A sliding window plus global attention on chosen task tokens, symmetric: a global token attends to every
      token and every token to it.
    here: >-
      Causal windows of {approximation.windows} keys, plus the first {approximation.n_global} tokens as global:
      every query sees them, and they see all before them, which is only each other.
    why: >-
      In a causal model a global query that attended to every token would read the future; within causality
      global attention is symmetric only as far as a global token's prefix reaches.
  - aspect: the features
    paper: >-
      Positive orthogonal random features, redrawn during training.
    here: >-
      {approximation.features} positive orthogonal features, one draw per batch, shared by the trained and the
      Gaussian inputs of that batch.
    why: >-
      The shared draw lets the two errors be compared batch by batch.
""")

METHODS = {"window": "sliding window", "favor": "FAVOR+"}
INPUTS = {"trained": f"{RUN}'s layer", "gaussian": "Gaussian inputs"}


def error_chart(t: pd.DataFrame) -> dict:
    """Each method's error against exact attention as it is given more, on the trained layer and on Gaussian inputs
    (log-log; a bar spans ± one standard error where it stays above zero)."""
    long = pd.concat([t.assign(inputs=label, error=t[k], se=t[f"{k}_se"].fillna(0.0)) for k, label in INPUTS.items()])
    long["lo"], long["hi"] = long["error"] - long["se"], long["error"] + long["se"]
    x = alt.X("size:Q", scale=alt.Scale(type="log", base=2, nice=False, padding=12),
              axis=alt.Axis(values=sorted(set(t["size"]))), title="keys in the window / random features")
    drawn = pd.concat([long["error"], long["lo"][long["lo"] > 0], long["hi"]])
    y = alt.Y("error:Q", scale=alt.Scale(type="log", nice=False, padding=12),
              axis=alt.Axis(values=log_ticks(drawn.min() / 2, drawn.max())), title="‖approx − exact‖ / ‖exact‖")
    color = alt.Color("inputs:N", sort=list(INPUTS.values()), title=None)
    lines = alt.Chart().mark_line(point=True).encode(
        x=x, y=y, color=color, tooltip=["method", "inputs", "size", alt.Tooltip("error:Q", format=".3g"),
                                        alt.Tooltip("se:Q", format=".2g", title="standard error")])
    bars = alt.Chart().mark_rule().encode(x="size:Q", y="lo:Q", y2="hi:Q", color=color).transform_filter(
        alt.datum.lo > 0)
    title = "Error against exact attention: a trained layer and Gaussian inputs"
    return alt.layer(lines, bars, data=long).properties(width=210, height=220).facet(
        column=alt.Column("method:N", sort=list(METHODS.values()), title=None)).resolve_scale(
        x="independent").properties(title=title).to_dict()


def direction(ratio: float, se: float | None, df: float = math.inf) -> str:
    """A ratio's direction, said only where its interval (± k·SE, 95 %, at `df`) clears 1 (readings.said)."""
    e = Estimate(ratio, se, df) if se else None
    return said(e, of=1.0, above="more there", below="less there", within="as much within the noise",
                unknown="one batch, no error to judge it by")


def reading(t: pd.DataFrame, runs: list[dict], df: float = math.inf) -> str:
    """The table and the attention it came from, in words, generated from them (`df`: the degrees of freedom of
    the errors: seeds − 1, or batches − 1 at one seed)."""
    w, f = t[t["method"] == "window"], t[t["method"] == "favor"]
    w0, w1, f0, f1 = w.iloc[0], w.iloc[-1], f.iloc[0], f.iloc[-1]
    out = (f"On {RUN}'s layer the window's error goes from {w0['trained']:.3g} with {w0['size']} keys to "
           f"{w1['trained']:.3g} with {w1['size']} (Gaussian inputs of the same shape: {w0['gaussian']:.3g} to "
           f"{w1['gaussian']:.3g}); FAVOR+'s from {f0['trained']:.3g} with {f0['size']} random features to "
           f"{f1['trained']:.3g} with {f1['size']} (Gaussian inputs: {f0['gaussian']:.3g} to {f1['gaussian']:.3g}). ")
    for row, what in ((w1, f"With a window of {w1['size']}, the window"), (f1, f"With {f1['size']} features, FAVOR+")):
        se = row["ratio_se"]
        error = f"± {format(se, '.2g')}, one standard error: " if se else ""
        out += (f"{what} errs {row['ratio']:.2f} times as much on the trained layer as on Gaussian inputs "
                f"({error}{direction(row['ratio'], se, df)}). ")
    att, ent = derive.attention(runs, "score_std"), derive.attention(runs, "entropy")
    return out + (f"The scaled scores the trained layer's softmax sees spread with a standard deviation of "
                  f"{att['trained']:.2f} (Gaussian inputs: {att['gaussian']:.2f}), and its attention rows have an "
                  f"entropy of {ent['trained']:.2f} nats (Gaussian inputs: {ent['gaussian']:.2f}).\n")


def coverage(window: int, n_global: int, context: int) -> str:
    """Whether the largest window, with its global tokens, covers the whole context (where a window is exact)."""
    covers = window + n_global >= context
    return (f" The largest window, {window} keys with {n_global} global tokens, "
            f"{'covers' if covers else 'stops short of'} the {context} tokens {RUN} reads"
            f"{', so there it is exact attention' if covers else ''}.\n")


HEADERS = {"method": "method", "size": "window / features", "trained": f"{RUN}'s layer", "trained_se": "± SE",
           "gaussian": "Gaussian inputs", "gaussian_se": "± SE", "ratio": "ratio", "ratio_se": "± SE"}
FORMATS = {k: (lambda v: f"{v:.3g}") for k in HEADERS if k not in ("method", "size")} | {"size": lambda v: str(int(v))}


def render(ctx) -> dict[str, str]:
    r, out = ctx.result, {}
    s, (ok, lost) = r["settings"], derive.seeds_of(r)
    runs, lost = list(ok.values()), [{**x, "run": f"{x['run']} at seed {x['seed']}"} for x in lost]
    n = len(r["by_seed"])
    out["settings"] = (f"windows of {', '.join(map(str, s['windows']))} keys with {s['n_global']} global tokens; "
                       f"{', '.join(map(str, s['features']))} random features; {s['batches']} batches of "
                       f"{s['batch_size']} windows at {'each of ' if n > 1 else ''}{n} {'seeds' if n > 1 else 'seed'} "
                       f"({', '.join(r['by_seed'])})")
    if not runs:
        return out | {"error_chart": "", "reading": "", "window_error": window_error_words([]), "error_table": diverged_note(lost)}
    e = runs[0]
    out["settings"] += (f"; {RUN} reads {e['context']} tokens through {e['layers']} attention "
                        f"layer{'s' if e['layers'] > 1 else ''} of {e['heads']} heads {e['head_dim']} wide")
    t = derive.table(runs)
    shown = t.assign(method=t["method"].map(METHODS))
    out["error_chart"] = chart("chart-approximation-error", error_chart(shown))
    mean = (f"the mean over {len(runs)} seeds, with its standard error over the seeds" if len(runs) > 1 else
            "the mean over the batches at the one seed, with its standard error over them")
    out["error_table"] = (diverged_note(lost) + f"\nEach value is {mean}; the ratio is the trained layer's error "
                          "over the Gaussian inputs' at the same batch.\n\n" + md_table(shown, HEADERS, FORMATS))
    windows = t[t["method"] == "window"]
    out["window_error"] = window_error_words([x for k in INPUTS for x in windows[k]],
                                             f" (on {' and on '.join(INPUTS.values())})")
    out["reading"] = (reading(t, runs, len(runs) - 1 if len(runs) > 1 else max(s["batches"] - 1, 1)).rstrip("\n")
                      + coverage(max(s["windows"]), s["n_global"], runs[0]["context"]))
    return out


blocks = experiment_page(NAME, render)
