"""S6 in training: multi-head, grouped-query and multi-query attention, from scratch and up-trained."""
from __future__ import annotations

import altair as alt
import pandas as pd
import yaml

from attnlab import layout
from attnlab.report.format import chart, md_table, spread
from attnlab.report.readings import PPL_ERROR, versus
from attnlab.report.context import experiment_page, one_run_then_every
from attnlab.experiments.grouping import derive

EXPERIMENT = "grouping"


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: Shazeer 2019 (arXiv:1911.02150); Ainslie et al. 2023 (arXiv:2305.13245)
rows:
  - aspect: models and measure
    paper: >-
      Shazeer: an encoder-decoder on WMT14 English→German (BLEU) and a language model on the Billion-Word
      benchmark (perplexity). Ainslie et al.: T5 Large and XXL with grouped heads in the decoder's self- and
      cross-attention, fine-tuned and scored on summarisation, translation and question answering.
    here: >-
      {model:S6-mha}, the query heads sharing {kv_heads:grouping} key/value heads, trained as a language model
      on the profile's corpus for {budget:S6-mha}; validation perplexity at {seeds}.
    why: >-
      A model small enough to train every variant at every seed; the corpus and the training loop are the
      ladder's, so the perplexities compare with its rows.
  - aspect: S6.3 · up-training
    paper: >-
      Ainslie et al. mean-pool the key and value heads of each group of a trained multi-head checkpoint, then
      continue its pre-training for 5 % of the original steps (α = 0.05) before fine-tuning.
    here: >-
      The same mean pooling of the trained multi-head run's weights at the same seed; then {uptraining:grouping},
      on the same data, with no fine-tuning stage.
    why: >-
      A language model is scored as trained: there is no downstream task to fine-tune it for.
""")

def start_of(init_from: dict) -> str:
    """The 'starts from' cell of one run (derive.start): 'fresh'; the run it was up-trained from, and where each
    seed started from that run at the same seed, that; else where each seed started, so that one seed's start is
    never shown as every seed's."""
    how, run, per_seed = derive.start(init_from)
    if how in ("fresh", "one run"):
        return run or "fresh"
    if how == "same seed":
        return f"{run}, at the same seed" if len(init_from) > 1 else f"{run} (seed {next(iter(init_from))})"
    return "; ".join(f"seed {seed}: {described(f) if f else 'fresh'}" for seed, f in per_seed)


def described(source: layout.RunPath) -> str:
    return source.run if source.seed is None else f"{source.run} at seed {source.seed}"


def runs_table(site) -> pd.DataFrame:
    """derive.runs, each run's start in words (start_of) in place of its seeds' init_from."""
    t = derive.runs(site.res)
    if not t.empty:
        t.insert(3, "start", t.pop("init_from").map(start_of))
    return t


def ppl_chart(t: pd.DataFrame) -> dict:
    data = t.drop(columns="up").dropna(subset=["val_ppl"]).assign(
        how=t["up"].map({False: "from scratch", True: "up-trained from MHA"}))
    return alt.Chart(data, title="Validation perplexity by key/value heads").mark_bar().encode(
        x=alt.X("run:N", sort=list(data["run"]), title=None), y=alt.Y("val_ppl:Q", title="validation perplexity",
                                                                       scale=alt.Scale(zero=False)),
        color=alt.Color("how:N", title=None),
        tooltip=["run", "kv_heads", "start", "steps", alt.Tooltip("val_ppl:Q", format=".2f")],
    ).properties(width=420, height=260).to_dict()


def cost_reading(t: pd.DataFrame) -> str:
    """What fewer key/value heads cost in validation perplexity: each comparison paired by seed, with its
    interval (95 %), said higher or lower only where the interval clears zero."""
    lines = [f"- **{run}** against {other}: {versus(mine, theirs)}."
             for run, other, mine, theirs in derive.comparisons(t)]
    if not lines:
        return ""
    return (f"Validation perplexity, run against run (paired by seed, ± k·SE at 95 % with SE {PPL_ERROR}; "
            "*higher* or *lower* only "
            "where that interval clears zero):\n\n" + "\n".join(lines) + "\n")


def uptrain_words(t: pd.DataFrame, budget) -> str:
    """How long the converted models train on: their steps, and the share of the profile's budget."""
    steps = derive.uptrain_steps(t)
    if not steps or not budget:
        return "briefly (the runs record their steps)"
    shown = " or ".join(map(str, steps))
    return f"for {shown} steps ({' or '.join(f'{100 * s / budget:g} %' for s in steps)} of the budget's {budget})"


def unrun(ctx) -> dict[str, str]:
    return {"settings": ctx.site.settings_table(), "uptrain": uptrain_words(runs_table(ctx.site), None)}


def render(ctx) -> dict[str, str]:
    site, out = ctx.site, {"settings": ctx.site.settings_table()}
    t = runs_table(site)
    out["runs_table"] = md_table(t, {"run": "run", "heads": "query heads", "kv_heads": "key/value heads",
                                     "start": "starts from", "steps": "steps", "status": "status",
                                     "val_spread": "val ppl", "train_spread": "train ppl", "n_params": "params",
                                     "cache_bytes": "KV cache bytes / token"},
                                 {"val_spread": spread(2), "train_spread": spread(2), "n_params": lambda v: f"{int(v):,}",
                                  "cache_bytes": lambda v: f"{int(v):,}", "steps": lambda v: str(int(v))})
    out["cost_reading"] = cost_reading(t)
    out["uptrain"] = uptrain_words(t, (site.config.get("train") or {}).get("steps"))
    out["ppl_chart"] = (chart("chart-grouping-ppl", ppl_chart(t)) if t["val_ppl"].notna().any()
                        else "_No run has a finite perplexity to chart: each diverged (see its status above)._\n")
    return out


blocks = experiment_page(EXPERIMENT, render, unrun, rerun=one_run_then_every("S6-gqa-up", "S6"))
