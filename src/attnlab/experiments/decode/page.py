"""S5 and S6 at inference: decoding with and without a KV cache; the cache with fewer key/value heads."""
from __future__ import annotations

import altair as alt
import pandas as pd
import yaml

from attnlab.report.charts import line_legend, lines_with_marks
from attnlab.report.format import chart, machine, md_table, num
from attnlab.report.readings import count, interval, said
from attnlab.stats import Estimate
from attnlab.report.context import experiment_page

NAME = "decode"


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: Shazeer 2019 (arXiv:1911.02150); Ainslie et al. 2023 (arXiv:2305.13245)
rows:
  - aspect: S5 · the cache
    paper: >-
      The survey cites no paper for the cache itself. Shazeer times incremental decoding, with the keys and
      values of earlier steps kept, of a trained translation model (WMT14 English→German) per output token on
      TPUv2 at sequence length 128, and argues that it is bound by memory bandwidth.
    here: >-
      Untrained decoder-only models with rotary positions ({decode.models}); greedy decoding after a random
      prompt of {decode.prompt} tokens, batch {decode.batch_size}, n = {decode.lengths} new tokens, with the
      cache and by recomputing the whole sequence at every step, on {device:decode}.
    why: >-
      A step's time depends on the shapes, not on what the weights learned, so no model is trained; the
      recomputation beside it is the saving's yardstick.
  - aspect: S6.1 · shared keys and values
    paper: >-
      Shazeer: one key/value head shared by every query head (multi-query) against multi-head, in decoding
      time per token. Ainslie et al.: grouped-query attention with 8 groups in T5 XXL, in inference time per
      sample.
    here: >-
      Key/value heads per model: {decode.kv_heads} (a model not listed has one per query head); untrained,
      decoded as above.
    why: >-
      The cache's bytes and a step's work follow from the head counts, which untrained models have as well.
""")



def label(row) -> str:
    return f"{row['model']}, {row['kv_heads']} kv heads"


def speed_chart(rows: pd.DataFrame) -> dict:
    data = rows.assign(series=rows.apply(label, axis=1))  # rows: with their mode, as render() names it
    series = sorted(set(data["series"]))
    base = alt.Chart(data).encode(
        x=alt.X("n:Q", scale=alt.Scale(type="log", base=2), title="tokens generated",
                axis=alt.Axis(values=sorted(set(data["n"])))),
        y=alt.Y("tokens_per_s:Q", scale=alt.Scale(type="log"), title="tokens / s"),
        color=alt.Color("series:N", sort=series, scale=alt.Scale(domain=series), title=None),
        tooltip=["series", "mode", "n", alt.Tooltip("tokens_per_s:Q", format=",.0f"),
                 alt.Tooltip("p20_ms:Q", format=".1f"), alt.Tooltip("p80_ms:Q", format=".1f")])
    return lines_with_marks(base, "series", series, strokeDash=alt.StrokeDash("mode:N", legend=line_legend())
                            ).properties(
        width=440, height=280, title="Decoding speed against the number of generated tokens").to_dict()


def config_name(key: str) -> str:
    """'wide/1' -> 'wide model with 1 kv head'."""
    model, heads = key.split("/")
    return f"{model} model with {count(int(heads), 'kv head')}"


def per_config(estimates: dict, sign: str = "", **words) -> str:
    """Each configuration's estimate (key -> readings.Estimate) with its interval, and what `words` say of the
    side of it the interval lies on."""
    return "; ".join(f"{config_name(key)} {sign}{interval(e, signed=False)}, "
                     + said(e, unknown="no error stated", **words) for key, e in estimates.items())


def reading(r: dict) -> str:
    """The speedups in words, generated from the result: each configuration's speedup at the longest length and
    the slope of its growth with length, each with its interval (95 %) where the run file states an error, and
    said faster, slower, growing or shrinking only where that interval clears 1 (or 0)."""
    errors = r.get("speedup_se_at_longest") or {}
    speedups = {key: Estimate(value, errors.get(key) or None) for key, value in r["speedup_at_longest"].items()}
    text = (f"At {r['settings']['lengths'][-1]} generated tokens the cache's speedup over recomputing (± k·SE at 95 % "
            "where the run file states an error) is: " + per_config(
                speedups, "×", of=1.0, above="faster with the cache", below="slower with the cache",
                within="no faster within the noise") + ".\n")
    slopes = {key: Estimate(g["slope"], g.get("se") or None) for key, g in (r.get("speedup_slope") or {}).items() if g}
    if slopes:
        text += ("\nHow it grows with length, as the slope of log speedup against log length (1 would be a speedup "
                 "in proportion to the length; ± k·SE at 95 %): " + per_config(
                     slopes, above="grows with length", below="shrinks with length", within="flat within the noise")
                 + ".\n")
    return text


def settings_words(r: dict) -> str:
    """What the result ran, in words: the page's settings block."""
    s = r["settings"]
    models = "; ".join(f"**{name}**: " + ", ".join(f"{k} {v}" for k, v in m.items()) for name, m in s["models"].items())
    return (f"{models}; a prompt of {s['prompt']} tokens, batch {s['batch_size']}, "
            f"n = {', '.join(map(str, s['lengths']))} generated tokens")


def render(ctx) -> dict[str, str]:
    r, out = ctx.result, {}
    rows = pd.DataFrame(r["rows"])
    rows["mode"] = rows["cached"].map({True: "KV cache", False: "recompute"})
    out["speed_table"] = md_table(rows, {"model": "model", "kv_heads": "kv heads", "n": "tokens", "mode": "mode",
                                         "tokens_per_s": "tokens / s", "median_ms": "ms (median)", "p20_ms": "p20",
                                         "p80_ms": "p80", "samples": "samples"},
                                  {"tokens_per_s": lambda v: f"{v:,.0f}", "median_ms": num(1), "p20_ms": num(1),
                                   "p80_ms": num(1), "samples": lambda v: str(int(v))})
    out["speed_chart"] = chart("chart-decode-speed", speed_chart(rows))
    out["reading"] = reading(r)
    cache = pd.DataFrame(r["cache"])
    out["cache_table"] = md_table(cache, {"model": "model", "kv_heads": "kv heads",
                                          "formula_bytes": "bytes / token (formula)",
                                          "measured_bytes": "bytes / token (measured)"},
                                  {"formula_bytes": lambda v: f"{int(v):,}", "measured_bytes": lambda v: f"{int(v):,}"})
    out["machine"] = f"Measured on {machine(r['device'], r['threads'])}."
    return out


blocks = experiment_page(NAME, render, settings=settings_words)
