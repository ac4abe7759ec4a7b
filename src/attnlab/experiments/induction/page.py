"""S10: induction heads: the phase change in attention-only models, then the chapter's Shakespeare models."""
from __future__ import annotations

import altair as alt
import pandas as pd
import yaml

from attnlab.experiments.induction import derive
from attnlab.report.format import chart, diverged_note, fmt, md_table, num
from attnlab.report.protocols import counted, shown
from attnlab.report.readings import count
from attnlab.stats import Estimate, side
from attnlab.report.context import experiment_page
from attnlab.results import measured

NAME = "induction"


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: Olsson et al. 2022, "In-context learning and induction heads" (Transformer Circuits Thread)
rows:
  - aspect: the models
    paper: >-
      Attention-only transformers (attention layers alone, no MLPs) of one layer and more, beside full
      transformers up to about 13 billion parameters.
    here: >-
      {attention_only}.
    why: >-
      The chapter's block with its MLP taken out, built by the project's one model code; the norm and the
      positions are settings of `induction.model`.
  - aspect: the data
    paper: >-
      Natural text. Prefix matching is scored on sequences of repeated random tokens, copying from each head's
      OV circuit (its eigenvalues).
    here: >-
      Trained on the control task itself: {induction.sequences} sequences of {induction.length} + 1 tokens over
      {induction.vocab_size} symbols, in which a span of {induction.span} recurs; {induction_budget}. Then the
      chapter's Shakespeare models L9 and B2, read on {induction.text_windows} validation windows. Copying: the
      share of tokens whose own logit the head's OV circuit makes the largest.
    why: >-
      A task on which only induction predicts the repeats, small enough to train both depths at every seed;
      the Shakespeare models show the same scores on natural text.
  - aspect: the in-context-learning score
    paper: >-
      The loss at the 500th token of a context minus the loss at the 50th, averaged over examples.
    here: >-
      The mean loss around {icl_shares} of the input's length, the late minus the early: {icl:induction} on the
      control task, {icl:L9} on Shakespeare (positions counted from 0).
    why: >-
      Shares of the input's length serve the control sequences and the Shakespeare windows alike.
  - aspect: the phase change
    paper: >-
      Seen over the training of many models: induction heads form in the same short window of training in
      which the in-context-learning score falls, a bump in the loss curve.
    here: >-
      Scores read every {induction.probe_every} steps on {induction.probe_sequences} held-back sequences; a
      change is placed where a score has covered half its net change; the two-layer model against the
      one-layer one, at {seeds}.
    why: >-
      One rule, applied to every seed's probes, places the change where the paper reads it off the curves.
""")

SERIES = {"induction": "best prefix-matching score", "icl": "in-context-learning score (nats)"}


def phase_chart(control: dict, seed=None) -> dict:
    """One panel per score. Every layer reads the facet's one table (rows told apart by `mark`): a layer with
    data of its own would be drawn whole in every panel."""
    lines = derive.series(control, SERIES)
    lines = lines.assign(model=lines.model.map(lambda n: count(n, "layer")), score=lines.score.map(SERIES), mark="line")
    jumps = pd.DataFrame([{"model": count(layers, "layer"), "step": step, "score": label, "mark": "jump"}
                          for layers, step in derive.jumps(control) for label in SERIES.values()])
    color = alt.Color("model:N", title=None)
    layers = [alt.Chart().mark_line(point=True).encode(
        x=alt.X("step:Q", title="training step"), y=alt.Y("value:Q", title=None), color=color,
        tooltip=["score", "model", "step", alt.Tooltip("value:Q", format=".3f")]
    ).transform_filter(alt.datum.mark == "line")]
    if not jumps.empty:
        layers.append(alt.Chart().mark_rule(strokeDash=[4, 4]).encode(x="step:Q", color=color)
                      .transform_filter(alt.datum.mark == "jump"))
    return alt.layer(*layers, data=pd.concat([lines, jumps])).properties(width=460, height=170).facet(
        row=alt.Row("score:N", title=None, sort=list(SERIES.values()))).resolve_scale(y="independent").properties(
        title=["As the models train (dashed: the step the induction score jumps)"]
        + ([f"seed {seed} (the first; S10.2 reads every seed)"] if seed is not None else [])).to_dict()


HEADS = {"model": "model", "layer": "layer", "head": "head", "prefix": "prefix matching", "previous": "previous token",
         "copying": "copying"}
FORMATS = {"prefix": num(3), "previous": num(3), "copying": num(2)}


def reading(control: dict) -> str:
    """What the series show, generated from them."""
    out = []
    for c in control.values():
        f, jump, drop = c["final"], c["induction_jump"], c["icl_drop"]
        what = (f"its best head's prefix-matching score jumps at step {jump['step']} (from {jump['before']:.2f} to "
                f"{jump['after']:.2f})" if jump["step"] is not None else "its best prefix-matching score shows no jump")
        icl = (f"the in-context-learning score drops at step {drop['step']}" if drop["step"] is not None
               else "the in-context-learning score shows no drop")
        together = " — the same phase" if c["same_phase"] else ""
        out.append(f"With {count(c['layers'], 'layer')}, {what}; {icl}{together}. At the end "
                   f"the best head scores {f['induction']:.3f} against a chance level of {f['chance']:.3f} "
                   f"(×{f['induction'] / f['chance']:.1f}), and the in-context-learning score is {f['icl']:.3f}.")
    return " ".join(out) + "\n"


def phase_reading(phase: dict | None) -> str:
    """S10.2's measures over the seeds, in words ('' for run files from before they were recorded)."""
    if not phase or not phase["seeds"]:
        return ""

    def shown(key: str, fmt: str) -> str:
        m = phase[key]
        return format(m["mean"], fmt) + (f" ± {format(m['se'], fmt)}" if m["se"] is not None else "")

    return (f"\nOver {count(phase['seeds'], 'seed')} (mean ± standard error), the "
            f"two-layer model's best prefix-matching score goes from 10 % to 90 % of its rise within "
            f"{shown('rise_width', '.1%')} of training; its in-context-learning drop lies "
            f"{shown('lag_intervals', '.1f')} probe intervals from that rise; and its in-context-learning score "
            f"less the one-layer model's is {shown('icl_two_minus_one', '.2f')} nats.\n")


OLSSON_ICL = {"early": 50, "late": 500, "context": 512}  # the paper's score: the loss at token 500 minus at 50, of 512


def icl_positions_words(ours: list[float] | None) -> str:
    """Where the in-context-learning score reads the loss here (the run file's `icl_positions`: shares of the
    input's length) beside where Olsson et al. read it, each position said as the same (to two decimals), earlier
    or later than the paper's."""
    early, late, n = OLSSON_ICL["early"], OLSSON_ICL["late"], OLSSON_ICL["context"]
    theirs = [early / n, late / n]
    text = (f"Olsson et al. take the loss at token {late} minus token {early} of {n}, at {theirs[0]:.3f} and "
            f"{theirs[1]:.3f} of the context")
    if not ours:
        return text + "; where this version reads it is not recorded in its run file"
    compared = [f"the {which} {position_against(a, b)} ({a:g} against {b:.3f})"
                for which, a, b in zip(("early position", "late one"), ours, theirs)]
    return text + f"; here around {ours[0]:g} and {ours[1]:g} of the input's length: " + ", ".join(compared)


def position_against(ours: float, theirs: float) -> str:
    """A position against the paper's: 'the same as the paper's to two decimals', 'earlier' or 'later'."""
    if round(ours, 2) == round(theirs, 2):
        return "the same as the paper's to two decimals"
    return "earlier" if ours < theirs else "later"


def icl_words(icl: float, se: float | None) -> str:
    """An in-context-learning score's direction, said only where its 95 % interval (readings.side) clears 0."""
    where = side(Estimate(icl, se))
    if where is None:
        return "no error was recorded to tell it from 0"
    error = f"± {se:.2f}, one standard error"
    if where == "within":
        return f"{error}: within two standard errors of 0, so these windows show no change of loss with position"
    return (f"{error}: the loss {'falls' if icl < 0 else 'rises'} with position"
            + ("" if icl < 0 else ", the opposite of in-context learning"))


def text_reading(text: dict) -> str:
    parts = [f"{name} ({count(t['blocks'], 'block')}): best prefix-matching score "
             f"{t['induction']:.3f}, ×{t['induction'] / t['chance']:.1f} chance; in-context-learning score "
             f"{t['icl']:+.3f} nats ({icl_words(t['icl'], t.get('icl_se'))}, over {t['windows']} windows)"
             for name, t in text.items()]
    return "On Shakespeare: " + "; ".join(parts) + ".\n"


def settings_words(r: dict) -> str:
    """What the result ran, in words: the page's settings block."""
    s = r["settings"]
    return (f"{s['sequences']:,} sequences of {s['length'] + 1} tokens drawn uniformly from "
            f"{s['vocab_size']}, each opening with a random span of {s['span']} tokens that then recurs, "
            f"after gaps of random length, until the sequence is full; models of width "
            f"{s['model'].get('d_model')} with {s['model'].get('n_heads')} heads, read every "
            f"{s['probe_every']} steps on {s['probe_sequences']} held-back sequences")


def render(ctx) -> dict[str, str]:
    r, out = ctx.result, {}
    control, lost = measured(r["control"])
    first = next(iter(r.get("by_seed") or {}), None)
    out["phase_chart"] = chart("chart-induction-phase", phase_chart(control, first)) if control else ""
    out["icl_positions"] = icl_positions_words(r.get("icl_positions"))
    out["reading"] = (reading(control) if control else "") + phase_reading(r.get("phase"))
    heads = derive.final_heads(control)
    out["control_table"] = diverged_note(lost) + ("\nEvery head at the end of training (copying: the share of tokens "
                                                  "whose own logit the head's OV circuit makes the largest; chance "
                                                  "1 / vocabulary):\n\n" + md_table(heads, HEADS, FORMATS)
                                                  if len(heads) else "")
    text, lost = measured(r["text"])
    rows = derive.heads(text)
    out["text_table"] = diverged_note(lost) + ("\n" + md_table(rows, HEADS, FORMATS) if len(rows) else "")
    out["text_reading"] = text_reading(text) if text else ""
    return out


# ------------------------------------------------------------------ its protocol's own fields

NORMS = {"pre": "a LayerNorm before each attention layer and one before the unembedding",
         "post": "a LayerNorm after each block", "none": "no LayerNorm"}
POSITIONS = {"learned": "learned positions added to the token embeddings",
             "sinusoidal": "sinusoidal positions added to the token embeddings",
             "rope": "rotary positions in the queries and keys", "alibi": "ALiBi's distance penalties on the scores",
             "none": "no positions"}


def attention_only(site, _=None) -> str:
    """S10's control models in words: what 'attention-only' keeps of the chapter's block."""
    spec = derive.control_spec(site.config)
    layers = " and ".join(map(str, site.config[NAME]["layers"]))
    mlp = "an MLP in each block" if spec.mlp else "no MLP"
    return (f"{layers} layers of width {spec.d_model} with {counted(spec.heads, 'head')} and {mlp}, but "
            f"{NORMS[spec.norm]}, and {POSITIONS[spec.position]}")


def induction_budget(site, _=None) -> str:
    """S10's training of the control models: the profile's train section under induction.train."""
    t = derive.control_train(site.config)
    return f"{shown(t['steps'])} steps of {shown(t['batch_size'])} sequences"


def icl(site, source: str) -> str:
    """Where the in-context-learning score reads an input: S10's control sequences ('induction') or a training
    run's windows (its context), as its producer's icl_score does."""
    T = derive.read_length(site.config, source)
    if T is None:
        return "–"
    early, late = derive.icl_windows(T)
    return f"positions {span(early)} and {span(late)} of {shown(T)}"


def icl_shares(site, _=None) -> str:
    """The shares of the length at which the in-context-learning score reads its two ends."""
    return " and ".join(map(fmt, derive.ICL_SHARES))


def span(s: slice) -> str:
    return str(s.start) if s.stop - s.start == 1 else f"{s.start}–{s.stop - 1}"


DERIVED = {"attention_only": attention_only, "induction_budget": induction_budget, "icl": icl,
           "icl_shares": icl_shares}  # the fields of PROTOCOL only this page derives (protocols.py)


blocks = experiment_page(NAME, render, settings=settings_words)
