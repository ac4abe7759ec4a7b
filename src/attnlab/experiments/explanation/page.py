"""S9: attention as explanation, tested (Jain and Wallace) and defended (Wiegreffe and Pinter)."""
from __future__ import annotations

import altair as alt
import pandas as pd
import yaml

from attnlab.errors import is_diverged
from attnlab.experiments.explanation import derive
from attnlab.report.format import chart, diverged_note, md_table
from attnlab.report.protocols import described
from attnlab.report.readings import said
from attnlab.stats import Estimate, side
from attnlab.report.context import experiment_page

NAME = "explanation"


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: Jain & Wallace 2019 (arXiv:1902.10186); Wiegreffe & Pinter 2019 (arXiv:1908.04626)
rows:
  - aspect: models and outputs
    paper: >-
      Jain and Wallace: recurrent (BiLSTM), convolutional and averaging encoders with one additive or
      dot-product attention over the inputs, trained for text classification (SST, IMDB, 20 Newsgroups,
      AG News, clinical notes and more), natural-language inference (SNLI) and question answering (CNN, bAbI);
      the output is the model's prediction for the instance.
    here: >-
      E8's {studied}, a language model; the output is its distribution over the
      next word at the word before the referent, on up to {explanation.examples} held-out sentences.
    why: >-
      E8's probe has an answer fixed by construction, so the output studied is one the attention should
      explain.
  - aspect: the sentences
    paper: >-
      Natural text: every instance its own sentence or document, of its own length.
    here: >-
      Every sentence fills one template, `{winograd.template}`, from {#winograd.nouns} nouns and
      {#winograd.crosser} + {#winograd.crossed} adjectives: every example has the same length and its scored
      word at the same position.
    why: >-
      E8's template fixes the referent by its adjective; the cost is that S9's tests see far less variety than
      natural text.
  - aspect: the attention and its divergence
    paper: >-
      One attention distribution per instance (one layer, one head): permuted, ranked against importance
      measures (Kendall τ) and searched adversarially, with the Jensen-Shannon divergence (JSD) taken between
      those distributions.
    here: >-
      The scored word's row in the last attention layer, replaced in every head at once; the JSD (adversary,
      second seed) and τ are taken on the mean of the heads' rows (τ per head is recorded too).
      {explanation.permutations} permutations, {explanation.adversaries} adversarial rows per sentence found by
      {explanation.steps} steps, the output held within {explanation.eps} in total variation.
    why: >-
      Heads have no order shared between two trainings, so the seed yardstick compares head means. JSD is
      jointly convex: the head mean's divergence is at most the mean of the heads' own, so it understates how
      far single heads were moved.
  - aspect: Wiegreffe and Pinter's tests
    paper: >-
      Four: a model trained with its attention frozen uniform; the variance of attention over random seeds as
      the yardstick for a divergence; learned weights guiding a model without context (diagnostic); an
      adversarial model trained end to end for different attention and the same predictions.
    here: >-
      Two, the first of them changed: the trained model's row (or whole layer) set to uniform at inference,
      not a model trained so; one second model, trained at seed {next_seed}, as the yardstick.
    why: >-
      The other two train further models (a guided one, an adversarial one); the uniform row tests the trained
      model as it is, not what training without learned attention would reach.
""")


def summary(r: dict) -> pd.DataFrame:
    c, p, a, u = r["correlation"], r["permutation"], r["adversarial"], r["uniform"]
    rows = [
        ("Kendall τ, attention vs gradient importance (mean)", c["mean_tau_attention_gradient"]),
        ("Kendall τ, attention vs leave-one-out importance (mean)", c["mean_tau_attention_loo"]),
        ("Kendall τ, gradient vs leave-one-out (the reference)", c["mean_tau_gradient_loo"]),
        ("output change under a random permutation of the row (median TV)", p["median_median_tv"]),
        ("the same, averaged over sentences (± SE over sentences)",
         with_se(p["mean_median_tv"], p.get("se_mean_median_tv"))),
        ("share of permutations that change the answer", p["mean_argmax_changed"]),
        (f"sentences with an adversary within TV ≤ {a['eps']}", f"{a['n_feasible']} of {r['n_examples']}"),
        ("adversarial JSD from the learned row (median over those)", a["median_max_jsd"]),
        ("adversarial JSD within the bound, 0 where none (median over all, ± bootstrap SE)",
         with_se(a.get("median_jsd_under_bound"), a.get("se_median_jsd_under_bound"))),
        ("JSD between two seeds' learned rows (median)", (r.get("seeds") or {}).get("median_jsd")),
        ("JSD of the learned row from the uniform one (mean)", u["mean_jsd_learned_uniform"]),
        ("held-out accuracy, learned attention", (r.get("accuracy") or {}).get("learned")),
        ("held-out accuracy, the row made uniform", (r.get("accuracy") or {}).get("row")),
    ]
    return pd.DataFrame(rows, columns=["measure", "value"])


def with_se(v, se) -> str | None:
    """'v ± se' when the run files state the error (older ones do not)."""
    return None if v is None or se is None else f"{v:.3f} ± {se:.3f}"


def value(v) -> str:
    return v if isinstance(v, str) else "–" if v is None else f"{v:.3f}"


KINDS = {"adversary": "adversary (TV ≤ eps)", "seed": "another seed", "uniform": "uniform row"}


def jsd_chart(r: dict) -> dict:
    rows = derive.divergences(r)
    seed = (r.get("provenance") or {}).get("seed")
    title = "How far from the learned row, per sentence" + (f" ({r['model']}, seed {seed})" if seed is not None else "")
    return alt.Chart(rows.assign(kind=rows.kind.map(KINDS)), title=title).mark_tick(
        thickness=2, size=18).encode(
        x=alt.X("jsd:Q", title="Jensen-Shannon divergence from the learned row (nats; max ln 2)",
                scale=alt.Scale(domain=[0, 0.7])),
        y=alt.Y("kind:N", title=None), color=alt.Color("kind:N", legend=None),
        tooltip=["sentence", "kind", alt.Tooltip("jsd:Q", format=".4f")]).properties(width=520, height=120).to_dict()


LARGE = 0.1  # nats: the divergence Jain and Wallace call large (S9.1's bound)


def versus(value: float, se: float | None, bound: float, above: str, below: str, near: str) -> str:
    """`above`/`below` where the 95 % interval (readings.side) clears `bound`, else `near`; without an error it
    goes by the value, and says so."""
    unknown = (above if value > bound else below) + " (no error recorded)"
    return said(Estimate(value, se), above, below, bound, near, unknown)


def reading(r: dict) -> str:
    """Which way the evidence points, generated from the numbers: the adversaries' divergence against both
    yardsticks (Jain and Wallace's fixed 0.1 nats, and the divergence between two seeds' learned rows), and what
    uniform attention costs."""
    a, c = r["adversarial"], r["correlation"]
    share = a["n_feasible"] / r["n_examples"]
    seeds, acc = (r.get("seeds") or {}).get("median_jsd"), r.get("accuracy") or {}
    out = [f"For {share:.0%} of the sentences an adversary found a row that moves the answer's distribution by at "
           f"most {a['eps']} in total variation"
           + (f", at a median divergence of {a['median_max_jsd']:.3f} nats" if a["median_max_jsd"] is not None else "")
           + "."]
    far, far_se = derive.adversary_median(r)
    if far is not None:
        out.append(f"Over all sentences (0 where none moved) the median is {far:.3f} nats, "
                   + versus(far, far_se, LARGE, "above", "below", "within two standard errors of")
                   + f" the {LARGE} nats Jain and Wallace call a large divergence.")
    ratio, ratio_se = derive.seed_ratio(r)
    if ratio is not None:
        out.append(f"Measured instead against how far the learned row moves when the model is trained again with "
                   f"another seed ({seeds:.3f} nats), the adversaries go {ratio:.2f} times as far: "
                   + versus(ratio, ratio_se, 1.0, "farther than a retraining does", "less far than a retraining does",
                            "as far as a retraining, within two standard errors") + ".")
    out.append(f"Attention's rank agreement with gradient importance is τ = {c['mean_tau_attention_gradient']:.2f}, "
               f"with leave-one-out τ = {c['mean_tau_attention_loo']:.2f}, while the two importance measures agree "
               f"with each other at τ = {c['mean_tau_gradient_loo']:.2f}.")
    if acc.get("learned") is not None:
        out.append(f"Making the row uniform takes held-out accuracy from {acc['learned']:.1%} to {acc['row']:.1%}.")
    out.append(conclusion(ratio, ratio_se, derive.uniform_cost(r)))
    return " ".join(out) + "\n"


def conclusion(ratio: float | None, ratio_se: float | None, lost: float) -> str:
    """Whose side the seed yardstick favours: Wiegreffe and Pinter's where the model needs its attention (uniform
    rows cost at least 10 points) and the adversaries stay clearly within a retraining's reach; Jain and
    Wallace's where they clearly go beyond it; mixed otherwise."""
    if ratio is None:
        return "Without a second seed's model the two sides cannot be told apart here."
    clear = ratio_se is None or side(Estimate(ratio, ratio_se), 1.0) != "within"
    if clear and ratio < 1 and lost >= 0.1:
        return ("By the seed yardstick the evidence points Wiegreffe and Pinter's way: the model needs its "
                "attention, and the adversaries find nothing a retraining would not.")
    if clear and ratio > 1:
        return ("By the seed yardstick the evidence points Jain and Wallace's way: attention farther from the "
                "learned row than another seed's still gives the same answer.")
    return "The evidence is mixed here: read the measurements above side by side."


def render(ctx) -> dict[str, str]:
    r, out = ctx.result, {}
    if is_diverged(r):  # E8's model it explains diverged
        return out | {"settings": f"_not measured: {r['model']} diverged_", "jsd_chart": "", "reading": "",
                      "summary_table": diverged_note([r])}
    s = r["settings"]
    out["settings"] = (
        f"The model is {r['model']} ({r['n_heads']} heads), trained by E8; the examples are {r['n_examples']} of its "
        f"held-out sentences, and the output is the distribution over the next word at the position before the "
        f"referent. The attention studied is that position's row in the block, in every head. Measured: Kendall τ "
        f"between the (head-averaged) row and two importance measures (the gradient of the answer's log-probability "
        f"with respect to each word's embedding, and the output's change when a word is replaced by "
        f"\"{s['neutral']}\"); the output's change under {s['permutations']} random permutations of the row; "
        f"{s['adversaries']} adversarial rows per sentence, found by {s['steps']} steps of gradient ascent on their "
        f"divergence from the learned row while the output may move by at most {s['eps']} in total variation; the "
        f"row made uniform; and the same row in a second model trained with another seed.")
    out["summary_table"] = (md_table(summary(r), {"measure": "measure", "value": "value"}, {"value": value})
                            + ("\n" + diverged_note([r["seeds"]]) if is_diverged(r.get("seeds")) else ""))
    out["jsd_chart"] = chart("chart-explanation-jsd", jsd_chart(r))
    out["reading"] = reading(r)
    return out


# ------------------------------------------------------------------ its protocol's own fields

def next_seed(site, _=None) -> str:
    """The seed of S9's second model (the producer trains it at the profile's seed + 1)."""
    return str(derive.second_seed(site.config))


def studied(site, _=None) -> str:
    """E8's model that S9 explains, in words (winograd.model with that model's overrides)."""
    name, spec = derive.studied(site.config)
    return f"`{name}` model ({described(spec)})"


DERIVED = {"next_seed": next_seed, "studied": studied}  # the fields of PROTOCOL only this page derives


blocks = experiment_page(NAME, render)
