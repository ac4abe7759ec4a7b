"""S8 trained: L9 with a sliding window or FAVOR+ in place of full attention, against L9 itself."""
from __future__ import annotations

import altair as alt
import pandas as pd
import yaml

from attnlab.experiments.approximate_training import derive
from attnlab.report.format import chart, md_table, spread
from attnlab.report.protocols import approximations
from attnlab.report.readings import NOISE, interval, said, versus
from attnlab.stats import side
from attnlab.claims.design import paired
from attnlab.report.context import experiment_page

NAME = "approximate_training"
FULL = derive.FULL  # the run with full attention every run here is set against

# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: Beltagy et al. 2020 (arXiv:2004.05150); Choromanski et al. 2021 (arXiv:2009.14794)
rows:
  - aspect: the window and its global tokens
    paper: >-
      A sliding window (512 tokens in the pretrained model; sizes growing with depth, and dilation in some
      heads, in its character-level language model), plus global attention on chosen task tokens that is
      symmetric: a global token attends to every token of the document and every token to it.
    here: >-
      {window_runs:approximate_training}. Causal throughout: a global token attends to every token before it,
      and every later token attends to it.
    why: >-
      A language model cannot let a token see its future, so a global token gathers only from its past:
      symmetric global attention becomes periodic summary tokens that see their whole prefix, and global
      tokens at the start see only each other. The paper's task tokens that read the whole document have no
      causal equivalent.
  - aspect: the features
    paper: >-
      Positive orthogonal random features, redrawn during training; Performers trained on proteins, images and
      text.
    here: >-
      {favor_runs:approximate_training}: positive orthogonal features drawn once per layer from the seed and
      kept fixed while the model trains.
    why: >-
      Fixed features make each run one model that its checkpoint restores; redrawing is not tried here.
  - aspect: the models and the measure
    paper: >-
      Longformer trains character-level language models and continues a pretrained model's training with its
      pattern; Performers are trained from scratch or fine-tuned from a Transformer. Bits per character,
      accuracy, perplexity.
    here: >-
      Ladder row L9's model ({model:L9}, {context:L9} tokens) trained from scratch with each approximation for
      {budget:L9}, as L9 itself is; validation perplexity over L9's, paired by seed, at {seeds}.
    why: >-
      The same model, budget and batches as full attention, so that the ratio measures the approximation
      alone.
""")


def attention_of(spec) -> str:
    """What a run's attention is, in words: 'window 16 + 4 global', 'window 16 + global every 16', 'FAVOR+ 32
    features', 'full'."""
    if spec.attention == "window":
        return f"window {spec.window}" + (f" + {spec.n_global} global" if spec.n_global else "") \
            + (f" + global every {spec.global_every}" if spec.global_every else "")
    return f"FAVOR+ {spec.features} features" if spec.attention == "favor" else "full"


def change(a, b) -> str:
    """What run b's attention (a spec) gives beyond run a's, in words read from both specs: 'a window of 32
    against one of 16', '4 global tokens added to a window of 16', '128 random features against 32'."""
    if b.features != a.features:
        return f"{b.features} random features against {a.features}"
    if b.window != a.window:
        return f"a window of {b.window} against one of {a.window}"
    if b.global_every and not a.global_every:
        return f"a symmetric global token every {b.global_every} added to a window of {a.window}"
    if b.n_global != a.n_global:
        return f"{b.n_global} global tokens added to a window of {a.window}"
    return f"{attention_of(b)} against {attention_of(a)}"


def family(spec) -> str:
    return {"window": "sliding window", "favor": "FAVOR+"}.get(spec.attention, "full attention")


def runs_table(site) -> pd.DataFrame:
    """derive.runs_table with each run's attention in words and each approximation's perplexity over full
    attention's, paired by seed (its mean and k·SE)."""
    t, full = derive.runs_table(site.res), site.res.spread(FULL, "val_ppl")
    if t.empty:
        return t
    ratios = [paired(val, full, lambda a, b: a / b) if full and run != FULL else None
              for run, val in zip(t["run"], t["val_spread"])]
    return t.assign(family=[family(spec) for spec in t["spec"]], attention=[attention_of(spec) for spec in t["spec"]],
                    ratio=[None if e is None else e.value for e in ratios],
                    half=[None if e is None else e.half for e in ratios], estimate=ratios)


def ratio_chart(t: pd.DataFrame) -> dict:
    """Each approximation's validation perplexity over full attention's, with its interval, by family."""
    data = t[["run", "family", "attention", "ratio", "half"]].dropna(subset=["ratio"]).assign(lo=lambda d: d["ratio"] - d["half"].fillna(0),
                                             hi=lambda d: d["ratio"] + d["half"].fillna(0))
    x = alt.X("run:N", sort=list(data["run"]), title=None)
    base = alt.Chart(data, title=f"Validation perplexity over full attention's ({FULL}), mean over seeds ± k·SE")
    tooltip = ["run", "attention", alt.Tooltip("ratio:Q", format=".3f"), alt.Tooltip("half:Q", format=".3f")]
    points = base.mark_point(filled=True, size=70).encode(
        x=x, y=alt.Y("ratio:Q", title="perplexity / full attention's", scale=alt.Scale(zero=False)),
        color=alt.Color("family:N", title=None), tooltip=tooltip)
    bars = base.mark_rule().encode(x=x, y="lo:Q", y2="hi:Q", color="family:N", tooltip=tooltip)
    one = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
    return alt.layer(bars, points, one).properties(width=420, height=260).to_dict()


def cost_reading(t: pd.DataFrame) -> str:
    """Each approximation against full attention, then what a wider window, global tokens and more features
    change; every direction said only where its interval clears it (paired by seed; its error the seeds' spread
    and the evaluation's sampling error in quadrature, as the verdicts take it)."""
    runs, specs = dict(zip(t["run"], t["val_spread"])), dict(zip(t["run"], t["spec"]))
    if FULL not in runs:
        return f"_Run {FULL} (full attention) has not run: there is nothing to set these runs against._\n"
    lines = [f"- **{r}** ({attention}): perplexity over full attention's {interval(e, 3, signed=False)}, "
             + said(e, "worse than full attention", "better than full attention", of=1.0, within=f"equal {NOISE}")
             for r, attention, e in zip(t["run"], t["attention"], t["estimate"]) if r != FULL]
    pairs = [(a, b, change(specs[a], specs[b])) for a, b in derive.pairs(runs)]
    more = [f"- {why}: {b} against {a}, {versus(runs[b], runs[a], 'worse', 'better')}" for a, b, why in pairs]
    text = (f"Each approximation against full attention (its validation perplexity over {FULL}'s, paired by seed, "
            "± k·SE at 95 %, SE the seeds' spread and the evaluation's sampling error in quadrature):\n\n" + "\n".join(lines) + "\n")
    text += "\n" + tally(t) + "\n"
    if more:
        text += ("\nWhat giving an approximation more changes (validation perplexity, paired by seed; *better* or "
                 "*worse* only where the interval clears zero):\n\n" + "\n".join(more) + "\n")
    return text


SIDES = {"below": "below full attention's perplexity", "within": "level with it within the noise",
         "above": "above it", None: "with no error to judge by"}


def tally(t: pd.DataFrame) -> str:
    """Per family of approximation, how many of its runs train better than full attention, equal to it within the
    noise, or worse (each run's ratio judged on its interval, as the lines above), so that the page's reading of
    the gap follows the sign it has here."""
    out = []
    for fam, g in t[t["run"] != FULL].groupby("family", sort=False):
        sides = [side(e, 1.0) for e in g["estimate"]]
        counts = [f"{sides.count(k)} of {len(sides)} {words}" for k, words in SIDES.items() if sides.count(k)]
        out.append(f"{fam}, " + ", ".join(counts))
    return ("Tally of the ratios above: " + "; ".join(out) + ".") if out else ""


def unrun(ctx) -> dict[str, str]:
    return {"settings": ctx.site.settings_table()}


def render(ctx) -> dict[str, str]:
    site, out = ctx.site, unrun(ctx)
    t = runs_table(site)
    if t.empty or t["ratio"].isna().all():
        return out | {"runs_table": "_No run has a finite perplexity beside full attention's: each diverged or L9 did "
                                    "(see Across seeds below)._\n", "cost_chart": "", "cost_reading": ""}
    out["runs_table"] = md_table(t, {"run": "run", "attention": "attention", "status": "status",
                                     "val_spread": "val ppl", "train_spread": "train ppl",
                                     "ratio": "val ppl / full", "half": "± k·SE"},
                                 {"val_spread": spread(2), "train_spread": spread(2),
                                  "ratio": lambda v: f"{v:.3f}", "half": lambda v: f"{v:.3f}"})
    out["cost_chart"] = chart("chart-approximate-training", ratio_chart(t))
    out["cost_reading"] = cost_reading(t)
    return out


# ------------------------------------------------------------------ its protocol's own fields

def window_runs(site, experiment: str) -> str:
    """Each window run of an experiment: its window and which tokens are global."""
    def globals_(spec):
        if k := spec.global_every:
            return f", positions {k - 1}, {2 * k - 1}, … global"
        return f", the first {spec.n_global} tokens global" if spec.n_global else ""
    return "; ".join(f"{name} (window {spec.window}{globals_(spec)})"
                     for name, spec in approximations(site, experiment, "window")) or "– (no window run)"


def favor_runs(site, experiment: str) -> str:
    """Each FAVOR+ run of an experiment and its number of features."""
    return "; ".join(f"{name} ({spec.features} features)"
                     for name, spec in approximations(site, experiment, "favor")) or "– (no FAVOR+ run)"


DERIVED = {"window_runs": window_runs, "favor_runs": favor_runs}  # the fields of PROTOCOL only this page derives


blocks = experiment_page(NAME, render, unrun)
