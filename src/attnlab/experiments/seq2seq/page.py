"""S1: where attention came from: accuracy against source length with and without attention, Bahdanau's wiring
against Luong's, the gradient path through recurrence, and the additive model's alignment on one reversed
sequence."""
from __future__ import annotations

import altair as alt
import pandas as pd
import yaml

from attnlab.experiments.seq2seq import derive
from attnlab.report.charts import fit_page
from attnlab.report.format import chart, diverged_note, md_table, recorded
from attnlab.report.protocols import shown
from attnlab.report.readings import count, interval, said
from attnlab.stats import Estimate, side
from attnlab.report.context import experiment_page

NAME = "seq2seq"


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: Bahdanau, Cho & Bengio 2014 (arXiv:1409.0473); Luong, Pham & Manning 2015 (arXiv:1508.04025)
rows:
  - aspect: task
    paper: >-
      Translation: English→French (WMT'14) in Bahdanau et al., English↔German (WMT'14, '15) in Luong et al.;
      BLEU, also set against the length of the source sentence.
    here: >-
      Generated tasks ({seq2seq.tasks}) on random sequences over {seq2seq.vocab} symbols, at source lengths
      {seq2seq.lengths};
      greedy token and sequence accuracy on {seq2seq.eval_rows} held-out examples.
    why: >-
      The difficulty grows with the length alone and the answer is exact, and every variant can be trained at
      every length and seed; translation needs parallel corpora and days of training per model.
  - aspect: networks
    paper: >-
      Bahdanau et al.: a bidirectional gated recurrent encoder and a gated recurrent decoder of 1000 units,
      decoded by beam search. Luong et al.: four stacked LSTM layers of 1000 cells, the encoder reading one way.
    here: >-
      One recurrent layer ({seq2seq.cell}) of width {seq2seq.d_model} on each side, the encoder reading
      {encoder}; greedy decoding.
    why: >-
      Sized for the generated tasks and the profile's budget; greedy decoding reads what the model itself
      writes, with no beam search to recover from its errors.
  - aspect: where the score sits
    paper: >-
      Bahdanau et al. score the *previous* decoder state sᵢ₋₁ against every annotation hⱼ (the forward and
      backward states side by side) with vᵀtanh(W sᵢ₋₁ + U hⱼ); the context cᵢ is an input of the recurrent step
      that gives sᵢ, beside the previous word's embedding; s₀ = tanh(W_s h₁ backward); a maxout layer reads sᵢ,
      cᵢ and yᵢ₋₁. Luong et al. score the *current* state hₜ (dot, general, concat); the context is combined after
      the recurrence, h̃ₜ = tanh(W_c[cₜ; hₜ]), which the output reads and, in their main setting (input
      feeding), the next step's input too.
    here: >-
      {wirings}. The widths, cell ({seq2seq.cell}) and budget are the same for every variant.
    why: >-
      Each score in its own paper's wiring, as the papers ran them; the fixed vector keeps the plain decoder.
  - aspect: additive and concat
    paper: >-
      Bahdanau's additive score v·tanh(W₁s + W₂h) and Luong's concat score v·tanh(W[hₜ; h̄ₛ]) are one function
      (W = [W₁ W₂]) at the two different places.
    here: >-
      Both are run, each in its paper's wiring: their paired difference at every task and length compares the
      wirings with the score function held fixed.
    why: >-
      Holding the score fixed is what lets the comparison speak of the wiring.
  - aspect: budget and seeds
    paper: >-
      Millions of sentence pairs per model; no spread over training seeds is reported.
    here: >-
      {seq2seq.train.steps} steps of {seq2seq.train.batch_size} examples, drawn from {seq2seq.train_rows} per
      task, length and seed; {seeds}, each with its own data, every difference between variants paired
      seed by seed.
    why: >-
      Several seeds give every difference an error; the budget is the profile's.
""")

VARIANTS = {"none": "none (fixed vector)", "bahdanau": "Bahdanau (additive, his wiring)", "dot": "Luong dot",
            "general": "Luong general", "concat": "Luong concat"}
BEFORE_WIRINGS = {**VARIANTS, "bahdanau": "additive (in Luong's wiring)"}  # a result from before the two wirings
MEASURES = {"token_accuracy": "greedy token accuracy", "sequence_accuracy": "greedy sequence accuracy"}
KINDS = {"rnn": "RNN (tanh)", "lstm": "LSTM", "attention": "one attention layer"}


def symbol(i: int) -> str:
    """Token ids as letters (a, b, ...), easier to follow in a map than numbers."""
    return chr(ord("a") + i) if i < 26 else str(i)


def names(r: dict) -> dict[str, str]:
    """The variants' names: a result from before the two wirings ran every score in Luong's, without input
    feeding."""
    return VARIANTS if "wirings" in r else BEFORE_WIRINGS


def named(r: dict, rows: pd.DataFrame) -> pd.DataFrame:
    """derive's rows with their variants and measures by name, as the chart shows them."""
    return rows.assign(variant=rows.variant.map(names(r)), measure=rows.measure.map(MEASURES))


def accuracy_chart(r: dict) -> dict:
    """A panel per task and measure. Every layer reads the facet's one table (means and seeds told apart by
    `mark`): a layer with data of its own would be drawn whole in every panel."""
    order = [names(r)[v] for v in r["settings"]["variants"]]
    lengths = sorted(r["settings"]["lengths"])
    x = alt.X("source length:Q", scale=alt.Scale(type="log", base=2), axis=alt.Axis(values=lengths))
    color = alt.Color("variant:N", sort=order, title=None,
                      legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0))
    y = alt.Y("value:Q", title=None, scale=alt.Scale(domain=[0, 1]))
    is_mean, is_seed = alt.datum.mark == "mean", alt.datum.mark == "seed"
    means = alt.Chart().mark_line(point=True).encode(
        x=x, y=y, color=color, tooltip=["task", "variant", "source length", alt.Tooltip("value:Q", format=".3f"),
                                        alt.Tooltip("low:Q", format=".3f", title="lowest seed"),
                                        alt.Tooltip("high:Q", format=".3f", title="highest seed"), "seeds"]
    ).transform_filter(is_mean)
    spread = alt.Chart().mark_area(opacity=0.15).encode(x=x, y="low:Q", y2="high:Q", color=color).transform_filter(
        is_mean)
    chance = alt.Chart().mark_rule(strokeDash=[4, 4], color="gray").encode(
        y="value:Q", tooltip=["task", "measure", alt.Tooltip("value:Q", format=".3f", title="chance")]
    ).transform_filter(alt.datum.mark == "chance")
    seeds = alt.Chart().mark_point(size=18, opacity=0.5, filled=True).encode(
        x=x, y=y, color=color, tooltip=["task", "variant", "source length", "seed",
                                        alt.Tooltip("value:Q", format=".3f")]).transform_filter(is_seed)
    chance_rows = pd.DataFrame([{"task": task, "measure": MEASURES["token_accuracy"], "value": r["chance"],
                                 "mark": "chance"} for task in sorted({run["task"] for run in r["runs"]})])
    data = pd.concat([named(r, derive.mean_values(r, MEASURES)).assign(mark="mean"),
                      named(r, derive.seed_values(r, MEASURES)).assign(mark="seed"), chance_rows])
    # the lines first: the legend's swatches take the first layer's look (the band's would be faint)
    return alt.layer(means, spread, seeds, chance, data=data).properties(width=260, height=190).facet(
        column=alt.Column("task:N", title=None, header=alt.Header(labelFontWeight="bold")),
        row=alt.Row("measure:N", title=None, sort=list(MEASURES.values()))).properties(
        title=["Held-out accuracy against source length",
               "line: mean over seeds; band: lowest to highest seed; dots: each seed; dashed: a token's chance"]
    ).to_dict()


def pm(mean, sd) -> str:
    return "–" if mean is None else f"{mean:.3f}" + ("" if sd is None else f" ± {sd:.3f}")


def accuracy_table(r: dict, key: str) -> str:
    """One measure as task x length rows and a column per variant: mean ± standard deviation over seeds."""
    variants = r["settings"]["variants"]
    return md_table(derive.by_length(r, key), {"task": "task", "length": "source length",
                                               **{v: names(r)[v] for v in variants}},
                    dict.fromkeys(variants, lambda cell: pm(*cell)))


TABLES = {**MEASURES, "teacher_forced_accuracy": "teacher-forced token accuracy (every earlier target token given)"}


def accuracy_tables(r: dict) -> str:
    seeds = len(derive.seed_list(r))
    spread = f"mean ± standard deviation over {seeds} seeds" if seeds > 1 else "one seed"
    return "\n\n".join(f"**{label.capitalize()}** ({spread}):\n\n{accuracy_table(r, key)}"
                     for key, label in TABLES.items())


def contrast(c: dict, sign: int = 1) -> Estimate:
    return Estimate(*derive.contrast(c, sign))


def reading(r: dict) -> str:
    """What the paired differences say, generated from them, each with its interval (95 %) and a direction only
    where that interval clears zero (the verdicts below apply the claims' margins)."""
    c, out = r["contrasts"], []
    short, long = c["shortest"], c["longest"]
    at = derive.summary_at(r)
    for task, t in c["tasks"].items():
        none_short, none_long = at[(task, short, "none")], at[(task, long, "none")]
        if not derive.measured(t["none_drop"]):
            continue
        change = contrast(t["none_drop"], -1)
        line = (f"**{task.capitalize()}.** With no attention, greedy token accuracy goes from "
                f"{none_short['token_accuracy']:.3f} at length {short} to {none_long['token_accuracy']:.3f} at "
                f"length {long} (paired change {interval(change, 3)}, 95 %, error from the "
                f"{t['none_drop']['se_from']}: " + said(change, above="a rise", below="a fall") + ").")
        gains = {v: contrast(g) for v, g in t["gain_at_longest"].items() if derive.measured(g)}
        own = {v: contrast(d, -1) for v, d in t["drop"].items() if derive.measured(d)}
        if gains:
            line += f" At length {long}, against it, the scores' accuracy is " + "; ".join(
                f"{names(r)[v]} {interval(e, 3)} ({said(e, above='higher', below='lower')})"
                for v, e in gains.items()) + "."
        if own:
            falls = sum(side(e) == "below" for e in own.values())
            line += (f" Their own accuracy changes by {min(e.value for e in own.values()):+.3f} to "
                     f"{max(e.value for e in own.values()):+.3f} from length {short} to {long}: a fall beyond the noise "
                     f"for {falls} of {len(own)}.")
        out.append(line)
    if derive.measured(c["largest_drop_share"]):
        out.append(f"The largest fall of a score function, as a share of the fixed vector's fall on the same task, "
                   f"is {c['largest_drop_share']:.2f}.")
    return "\n\n".join(out) + "\n"


def wirings_said(r: dict) -> str:
    """Which wiring the Luong scores ran in: with input feeding or without (a result from before the two wirings
    ran every score in Luong's, without)."""
    if "wirings" not in r:
        return ", every score in Luong's wiring without input feeding (this version predates Bahdanau's wiring)"
    if not any(w == "luong" for w in r["wirings"].values()):
        return ""
    feeding = "with" if r["settings"]["input_feeding"] else "without"
    return f", Luong's scores in his wiring {feeding} input feeding"


def wiring_rows(r: dict) -> list[dict]:
    """derive's wiring rows, each with its estimate (None where a run diverged or is missing)."""
    return [{**w, "estimate": w["difference"] and contrast(w["difference"])} for w in derive.wiring_rows(r)]


def wiring_table(r: dict) -> str:
    """Greedy token accuracy of Bahdanau's variant against each Luong score, at every task and length, with the
    paired difference (95 %) and its reading."""
    if "wirings" not in r:
        return ("This version predates Bahdanau's wiring: every score ran in Luong's wiring, so there is nothing to "
                "compare.\n")
    rows = wiring_rows(r)
    if not rows:
        return "No variant in Bahdanau's wiring was trained beside one in Luong's in this profile.\n"
    n = names(r)
    table = pd.DataFrame([{"task": w["task"], "length": w["source_length"], "luong": n[w["luong"]],
                           "b": pm(w["bahdanau_acc"], None), "l": pm(w["luong_acc"], None),
                           "diff": "–" if w["estimate"] is None else interval(w["estimate"], 3),
                           "reading": "a run diverged or is missing" if w["estimate"] is None else
                           said(w["estimate"], above="Bahdanau's higher", below="Luong's higher")} for w in rows])
    return md_table(table, {"task": "task", "length": "source length", "luong": "Luong's score",
                            "b": n["bahdanau"], "l": "Luong's accuracy", "diff": "Bahdanau − Luong, paired (95 %)",
                            "reading": "reading"}) + "\n"


def wiring_reading(r: dict) -> str:
    """The same-score comparison in words: Bahdanau's additive against Luong's concat (the same function, in the
    other wiring), at every task and length, a direction said only where the interval clears zero."""
    rows = [w for w in wiring_rows(r) if w["luong"] == "concat" and w["estimate"] is not None]
    if "wirings" not in r or not rows:
        return ""
    out = []
    for task in dict.fromkeys(w["task"] for w in rows):
        mine = [w for w in rows if w["task"] == task]
        parts = [f"at length {w['source_length']} {w['bahdanau_acc']:.3f} against {w['luong_acc']:.3f}, "
                 f"{interval(w['estimate'], 3)} (" + said(w["estimate"], above="Bahdanau's wiring higher",
                                                    below="Luong's wiring higher") + ")" for w in mine]
        beyond = sum(side(w["estimate"]) in ("above", "below") for w in mine)
        out.append(f"**{task.capitalize()}.** The additive score in Bahdanau's wiring against the same function in "
                   f"Luong's (concat), greedy token accuracy: " + "; ".join(parts) + f"; a difference beyond the "
                   f"noise at {beyond} of {len(mine)} lengths.")
    return "\n\n".join(out) + "\n"


def gradient_chart(r: dict) -> dict:
    data = pd.DataFrame([{**row, "layer": KINDS.get(row["kind"], row["kind"])} for row in r["gradient_path"]])
    x = alt.X("T:Q", title="sequence length T (log scale)", scale=alt.Scale(type="log", base=2))
    y = alt.Y("grad:Q", title="‖∂y_T / ∂x_1‖ (log scale)", scale=alt.Scale(type="log"), axis=alt.Axis(format=".0e"))
    color = alt.Color("layer:N", title=None, sort=list(KINDS.values()))
    lines = alt.Chart(derive.gradient_lines(data)).mark_line().encode(
        x=x, y=y, color=color, tooltip=["layer", "T", alt.Tooltip("grad:Q", format=".2e",
                                                                  title="geometric mean over seeds")])
    points = alt.Chart(data).mark_point(filled=True, size=25).encode(
        x=x, y=y, color=color, tooltip=["layer", "T", "seed", alt.Tooltip("grad:Q", format=".2e"),
                                        alt.Tooltip("relative:Q", format=".3f", title="over the mean input's")])
    return fit_page(alt.layer(lines, points).properties(
        width=560, height=260, title=["The gradient that reaches input 1 from output T, untrained layers",
                                      "line: geometric mean over seeds; points: each seed"]).to_dict())


def gradient_seeds(r: dict) -> str:
    """How the reading's norms summarise the seeds, from the rows the chart draws: the mean they are and over how
    many seeds; where the result does not record its own count (a version from before), that too."""
    (mean, seeds), g = derive.gradient_seeds(r), next(iter(r["gradient"].values()))
    text = f"each norm the {mean + ' mean' if mean else 'summary this version recorded'} over the {count(seeds, 'seed')}"
    if mean == "geometric" and "seeds" in g:
        return text + " (the chart's lines)"
    return (text + f" of the chart's points (its count of seeds: {recorded(g, 'seeds')}; the chart's lines draw "
            "their geometric mean)")


def gradient_reading(r: dict) -> str:
    parts = [f"{KINDS.get(kind, kind)}: from {g['grad_short']:.2e} at T = {g['T_short']} to {g['grad_long']:.2e} at "
             f"T = {g['T_long']}, {g['decades']:.1f} decades (norm × T changes ×{derive.times_T(g):.2g}; input 1 "
             f"over the mean input at T = {g['T_long']}: {g['relative_long']:.2g})" for kind, g in r["gradient"].items()]
    first = next(iter(r["gradient"].values()))
    return (f"The gradient from the last output to the first input, {gradient_seeds(r)}. " + "; ".join(parts)
            + f". A fall as 1/T would be {derive.decades_as_one_over_T(first):.1f} decades over this "
            "range.\n")


def map_rows(m: dict) -> pd.DataFrame:
    return pd.DataFrame([{"step": t, "j": j, "weight": w, "source token": symbol(m["source"][j]),
                          "target": symbol(m["target"][t]), "predicted": symbol(m["predicted"][t])}
                         for t, row in enumerate(m["weights"]) for j, w in enumerate(row)])


def map_chart(m: dict) -> dict:
    S = m["source_length"]
    src = "[" + ", ".join(f"'{symbol(x)}'" for x in m["source"]) + "]"
    out = "[" + ", ".join(f"'{symbol(x)}'" for x in m["predicted"]) + "]"
    cells = alt.Chart(map_rows(m)).mark_rect().encode(
        x=alt.X("j:O", title="source position (token)", axis=alt.Axis(labelExpr=f"datum.value + ' ' + {src}[datum.value]",
                                                                       labelAngle=-90)),
        y=alt.Y("step:O", title="output step (greedy prediction)",
                axis=alt.Axis(labelExpr=f"datum.value + ' ' + {out}[datum.value]")),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
        tooltip=["step", "target", "predicted", "j", "source token", alt.Tooltip("weight:Q", format=".3f")])
    size = max(240, min(520, 14 * S))
    return cells.properties(width=size, height=size,
                            title=f"{m['name']}: where each output step looks").to_dict()


def map_reading(m: dict) -> str:
    """Where the weight sits against the reversal's alignment (output t reads source S-1-t), from the weights."""
    a = derive.alignment(m)
    top, S = a["offset"], a["S"]
    return (f"On this sequence the model gets {a['right']} of {S} tokens right{lost_place(m)}. An output step puts "
            f"on average {a['on']:.2f} of its weight on the source position it reverses (output t ← source "
            f"S − 1 − t) and {a['near']:.2f} within one position of it; the heaviest key sits "
            f"{'on that position' if top == 0 else f'{top:+d} positions from it'} at {a['steps']} of {S} steps.\n")


def lost_place(m: dict, most: int = 3) -> str:
    """Where greedy decoding lost its place: after the first wrong token, how many later ones are right a few
    positions off (skipped or repeated tokens shift everything after them); '' when no shift explains most."""
    found = derive.shift_after_mistake(m, most)
    if found is None:
        return ""
    first, rest, k, right = found
    return (f": its first mistake is at step {first}, where it {'skipped' if k > 0 else 'repeated'} "
            f"{count(abs(k), 'token')}, and {right} of the {rest} tokens after it are right "
            f"{count(abs(k), 'position')} {'early' if k > 0 else 'late'} (greedy decoding lost its place)")


def viewer_data(m: dict, variants: dict = VARIANTS) -> dict:
    """The map as the interactive viewer's data: tokens [source, →, the greedy predictions]; each decoder step's
    row over the source sits on the token that step predicts (as the map chart labels its rows), and the rest do
    not attend."""
    tokens = [symbol(x) for x in m["source"]] + ["→"] + [symbol(x) for x in m["predicted"]]
    rows = derive.decoder_rows(m)
    return {"examples": [{"id": "seq2seq-reverse", "label": f"{m['name']} (reverse)", "tokens": tokens,
                          "models": {f"{variants[m['variant']]} decoder": [[rows]]}}]}


def render(ctx) -> dict[str, str]:
    r, out = ctx.result, {}
    s, t, seeds = r["settings"], r["settings"]["train"], derive.seed_list(r)
    out["settings"] = (f"{', '.join(s['tasks'])} of sequences drawn uniformly from {s['vocab']} symbols, at source "
                       f"lengths {', '.join(map(str, s['lengths']))}; a {s['cell'].upper()} encoder "
                       f"({'both ways' if s['bidirectional'] else 'forward only'}) and decoder of width "
                       f"{s['d_model']}; {len(s['variants'])} variants ({', '.join(names(r)[v] for v in s['variants'])})"
                       f"{wirings_said(r)}, each trained for {t['steps']} steps of {t['batch_size']} examples "
                       f"(learning rate {t['lr']:g}) on {s['train_rows']:,} examples, at "
                       f"{'seeds' if len(seeds) > 1 else 'seed'} {', '.join(map(str, seeds))}"
                       f", and read by greedy decoding on {s['eval_rows']:,} held-out examples")
    out["wiring_table"], out["wiring_reading"] = wiring_table(r), wiring_reading(r)
    out["accuracy_chart"] = (chart("chart-seq2seq-accuracy", accuracy_chart(r))
                             if len(derive.seed_values(r, MEASURES)) else "")
    out["accuracy_table"] = diverged_note(derive.diverged_runs(r)) + "\n" + accuracy_tables(r)
    out["reading"] = reading(r)
    out["gradient_chart"] = chart("chart-seq2seq-gradient", gradient_chart(r))
    out["gradient_reading"] = gradient_reading(r)
    m = r["attention_map"]
    if m and m["weights"]:
        out["map_chart"] = chart("chart-seq2seq-map", map_chart(m))
        out["map_reading"] = map_reading(m)
        from attnlab.report.viewer_widget import viewer_html

        out["viewer"] = viewer_html(viewer_data(m, names(r)), "seq2seq-viewer")
    else:
        out |= {"map_chart": "No attention model was trained for the map.", "map_reading": "", "viewer": ""}
    return out


# ------------------------------------------------------------------ its protocol's own fields

def encoder(site, _=None) -> str:
    """S1's encoder: both ways or forward only, as the profile sets it."""
    return "both ways" if site.config[NAME]["bidirectional"] else "forward only"


def wirings(site, _=None) -> str:
    """S1's wirings as its result ran them (before it has run, as the profile sets them): which variant is in
    which, and whether Luong's feeds its input. A result from before the two wirings ran every score in Luong's."""
    r = site.res.result(NAME)
    s = site.config[NAME] if r is None else r["settings"]
    variants = s["variants"]
    if r is not None and "wirings" not in r:
        return (f"Every score ({shown([v for v in variants if v != 'none'])}) in Luong's wiring without input "
                f"feeding (this version predates Bahdanau's wiring): the variant named after Bahdanau is his "
                f"additive score there, not his network")
    feeding = s["input_feeding"]
    bahdanau, luong = derive.by_wiring(variants).values()
    parts = ([f"{shown(bahdanau)} in Bahdanau's wiring as the paper states it (deep output: one maxout layer)"]
             if bahdanau else []) + ([f"{shown(luong)} in Luong's, {'with' if feeding else 'without'} input feeding"]
                                     if luong else [])
    text = "; ".join(parts) or "no attention variant"
    return text[0].upper() + text[1:]


DERIVED = {"encoder": encoder, "wirings": wirings}  # the fields of PROTOCOL only this page derives (protocols.py)


blocks = experiment_page(NAME, render)
