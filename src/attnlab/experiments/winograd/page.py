"""E8: the Winograd-style probe: held-out accuracy by model, and what the heads look at."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.errors import is_diverged
from attnlab.experiments.winograd import derive
from attnlab.report.format import chart, diverged_note, md_table, spread
from attnlab.report.readings import count, interval, said
from attnlab.claims.design import of_seeds
from attnlab.report.context import experiment_page

NAME = "winograd"
MODELS = {"average": "uniform average", "one_block": "one block", "two_blocks": "two blocks"}
VERSIONS = {"cheat": "animal / place (cheating)", "closed": "closed (16 nouns, either slot)"}


def named(rows: pd.DataFrame) -> pd.DataFrame:
    """derive's rows with their versions and models by name."""
    return rows.assign(**{col: rows[col].map(names) for col, names in (("version", VERSIONS), ("model", MODELS))
                          if col in rows})


def accuracy_chart(rows: pd.DataFrame, seed: str = "") -> dict:
    data = rows.assign(**derive.two_se_band(rows))
    base = alt.Chart().encode(y=alt.Y("model:N", title=None, sort=list(MODELS.values())))
    bars = base.mark_bar().encode(x=alt.X("accuracy:Q", title="held-out accuracy", scale=alt.Scale(domain=[0, 1])),
                                  color=alt.Color("model:N", legend=None),
                                  tooltip=["version", "model", alt.Tooltip("accuracy:Q", format=".3f"),
                                           alt.Tooltip("other_noun:Q", format=".3f", title="other noun")])
    errors = base.mark_rule().encode(x="low:Q", x2="high:Q")
    chance = alt.Chart().mark_rule(strokeDash=[4, 4]).encode(x=alt.datum(0.5))
    return alt.layer(bars, errors, chance, data=data).properties(width=420, height=70).facet(
        row=alt.Row("version:N", title=None, sort=list(VERSIONS.values()),
                    header=alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start", labelFontWeight="bold"))
    ).resolve_scale(y="independent").properties(
        title=["Held-out accuracy (± 2 standard errors; dashed: chance)"] + ([seed.lstrip(", ")] if seed else [])
    ).to_dict()


def map_rows(m: dict) -> pd.DataFrame:
    """derive's weights of the map sentences' rows, each sentence named by its adjective and each block by number."""
    rows = derive.sentence_weights(m)
    return rows.assign(sentence=rows.sentence.map("… too {} …".format), block=rows.block.map("block {}".format))


def heatmap(data: pd.DataFrame, row: str, title: str, words: list[str]) -> alt.LayerChart:
    """Weights as cells: `row` down, key positions across (labelled with `words`), each weight printed."""
    labels = "[" + ", ".join(f"'{w}'" for w in words) + "]"
    base = alt.Chart(data, title=title).encode(
        x=alt.X("j:O", title=None, axis=alt.Axis(labelExpr=f"{labels}[datum.value]", labelAngle=-40)),
        y=alt.Y(f"{row}:N", title=None, sort=None))
    cells = base.mark_rect().encode(color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]),
                                                    legend=None),
                                    tooltip=[row, "word", "j", alt.Tooltip("weight:Q", format=".3f")])
    text = base.mark_text(fontSize=10).encode(
        text=alt.Text("weight:Q", format=".2f"),
        color=alt.condition(alt.datum.weight > 0.5, alt.value("white"), alt.value("black")))
    return alt.layer(cells, text)


def sentence_chart(m: dict, seed: str = "") -> dict:
    data = map_rows(m)
    parts = [heatmap(data[data.sentence == f"… too {s['adjective']} …"], "block", " ".join(s["words"]),
                     s["words"][: m["pos"] + 1]).properties(width=540, height=60)
             for s in m["sentences"].values()]
    return alt.vconcat(*parts).properties(title=f"Each block's row at the scored word{seed}").to_dict()


def adjective_chart(m: dict, seed: str = "") -> dict:
    words = list(m["sentences"]["crosser"]["words"][: m["pos"] + 1])
    at = words.index(m["sentences"]["crosser"]["adjective"])
    words[at] = "ADJ"
    rows = [{"adjective": a, "j": j, "word": a if j == at else words[j], "weight": w}
            for a, row in m["last_block_by_adjective"].items() for j, w in enumerate(row)]
    return heatmap(pd.DataFrame(rows), "adjective", f"The last block's row for every adjective (ADJ: the adjective){seed}",
                   words).properties(width=600, height=200).to_dict()


SAME = 0.05  # two rows of weights that differ nowhere by more than this are read as the same


def reading(r: dict) -> str:
    """What the maps show, generated from them: block 1's sameness, block 2's weights where they differ."""
    m = r["maps"]
    diff = m["block_difference"]
    crosser, crossed = m["sentences"]["crosser"], m["sentences"]["crossed"]
    last_a, last_b = crosser["blocks"][-1], crossed["blocks"][-1]
    top_a, top_b = derive.heaviest(last_a), derive.heaviest(last_b)
    same, bound = ("the same in both sentences", "within") if diff[0] <= SAME else \
        ("different between the sentences", "beyond")
    w = m["adjective_weight"]
    return (f"Block 1's row is {same} (largest difference {diff[0]:.3f}, {bound} the {SAME} read as the same; "
            f"its heaviest key is \"{crosser['words'][derive.heaviest(crosser['blocks'][0])]}\"). "
            f"The last block's rows differ by up to {diff[-1]:.2f}: for \"{crosser['adjective']}\" its heaviest key is "
            f"\"{crosser['words'][top_a]}\" ({last_a[top_a]:.2f}), for \"{crossed['adjective']}\" it is "
            f"\"{crossed['words'][top_b]}\" ({last_b[top_b]:.2f}). Over all adjectives, the last block puts "
            f"{w['crosser']:.2f} on the adjective when it is a crosser and {w['crossed']:.2f} when it is a crossed "
            f"one. A uniform row would put {r['uniform_weight']:.3f} on each of the {m['pos'] + 1} visible words.\n")


def seeds_table(r: dict) -> str:
    """Held-out accuracy of every model at every seed: mean ± standard deviation, each seed on hover."""
    by_seed = r.get("by_seed") or {}
    if len(by_seed) < 2:
        return (f"Every model here was trained at one seed ({r.get('seed', next(iter(by_seed), '?'))}), so nothing "
                "on this page measures how much the seed moves an accuracy.\n")
    rows = named(derive.accuracy_spreads(r))
    if rows.empty:
        return f"Every model diverged at each of the {len(by_seed)} seeds ({', '.join(by_seed)}).\n"
    widest = max(rows.itertuples(), key=lambda t: t.accuracy.sd or 0)
    return (f"Every model was trained at {len(by_seed)} seeds ({', '.join(by_seed)}) on the same sentences, with "
            f"the same held-out pairs; the table and chart above, and the maps below, are the first seed's. The "
            f"claims use the mean over seeds. The widest spread is the {widest.model}'s on the "
            f"{widest.version.split(' (')[0]} version: a standard deviation of {widest.accuracy.sd:.3f}.\n\n"
            + md_table(rows, {"version": "version", "model": "model", "accuracy": "held-out accuracy (mean ± sd)"},
                       {"accuracy": spread(3)}) + "\n")


def floor_note(rows: pd.DataFrame) -> str:
    """Under the accuracy table: where an accuracy is 0 % or 100 %, its binomial error √(p(1 − p)/n) is 0, and the
    ± 2 SE shown is the floor the run file puts in its place (√(1/n)/√n = 1/n), not a measured spread; said per
    such row, from its count of held-out sentences. '' where no row is at either end (or the counts are not
    recorded)."""
    if "n" not in rows:
        return ""
    ends = derive.at_the_ends(rows)
    if ends.empty:
        return ""
    listed = "; ".join(f"the {r.model} on the {r.version.split(' (')[0]} version, {100 * r.accuracy:.0f} % of "
                       f"{int(r.n)} sentences (± 2 SE shown: {200 * r.accuracy_se:.1f} %, i.e. 2/{int(r.n)})"
                       for r in ends.itertuples())
    return (f"At 0 % or 100 % the binomial error √(p(1 − p)/n) is 0, so the run file puts a floor of 1/n in its "
            f"place (one sentence's worth), not a spread that was measured: {listed}.\n")


def chance_reading(r: dict) -> str:
    """Each model's held-out accuracy against chance (0.5: two nouns to choose from), over the seeds: the mean
    with the seeds' error and the binomial one in quadrature (as the verdicts take them), said above or below
    chance only where its interval (95 %) clears 0.5."""
    lines, seeds = [], len(derive.runs(r))
    for v, e in r["versions"].items():
        said_of = []
        for m in e["models"]:
            if (inputs := derive.chance_inputs(r, v, m)) is None:
                continue
            est = of_seeds(*inputs)
            said_of.append(f"{MODELS[m]} {interval(est, 3, signed=False)}, " + said(
                est, of=0.5, above="above chance", below="below chance", within="at chance within the noise"))
        if said_of:
            lines.append(f"- {VERSIONS[v]}: " + "; ".join(said_of) + ".")
    if not lines:
        return ""
    return (f"Held-out accuracy against chance (0.5), over {count(seeds, 'seed')} (± k·SE at 95 %, SE the seeds' "
            "and the binomial error in quadrature; a side of chance only where that interval clears it):\n\n"
            + "\n".join(lines) + "\n")


def settings_words(r: dict) -> str:
    """What the result ran, in words: the page's settings block."""
    s = r["settings"]
    return (f"the template `{s['template']}`; crosser adjectives {', '.join(s['crosser'])}; crossed "
            f"adjectives {', '.join(s['crossed'])}; {len(s['nouns'])} nouns in the closed version, "
            f"{len(s['animals'])} animals and {len(s['places'])} places in the cheating one; a vocabulary "
            f"of {r['vocab_size']} words; {int(s['held_out'] * 100)} % of the pairs held out")


def render(ctx) -> dict[str, str]:
    r, out = ctx.result, {}
    out["task_table"] = md_table(named(derive.task_sizes(r)), {
        "version": "version", "pairs_trained": "pairs trained", "pairs_held_out": "pairs held out",
        "sentences_trained": "sentences trained", "sentences_held_out": "sentences held out"})
    rows = named(derive.accuracies(r))
    pct = lambda v: f"{100 * v:.1f} %"  # noqa: E731
    out["accuracy_table"] = diverged_note(derive.diverged_models(r)) + ("\n" + md_table(
        rows.assign(se=2 * rows.accuracy_se),
        {"version": "version", "model": "model", "accuracy": "held-out accuracy", "se": "± 2 SE",
         "other_noun": "the other noun", "elsewhere": "another word", "train_accuracy": "training accuracy",
         "n_params": "parameters"},
        {k: pct for k in ("accuracy", "se", "other_noun", "elsewhere", "train_accuracy")}
        | {"n_params": lambda v: f"{int(v):,}"}) + "\n\n" + floor_note(rows) if len(rows) else "")
    seeds = derive.seeds(r)
    seed = (f", seed {seeds[0]}" + (f" (the first of {len(seeds)}: every seed in the table below)"
                                    if len(seeds) > 1 else "")) if seeds[0] is not None else ""
    out["accuracy_chart"] = chart("chart-winograd-accuracy", accuracy_chart(rows, seed)) if len(rows) else ""
    if is_diverged(r["maps"]):
        out |= {"maps_chart": diverged_note([r["maps"]]), "adjectives_chart": "", "reading": ""}
    else:
        out["maps_chart"] = chart("chart-winograd-maps", sentence_chart(r["maps"], seed.split(" (")[0]))
        out["adjectives_chart"] = chart("chart-winograd-adjectives", adjective_chart(r["maps"], seed.split(" (")[0]))
        out["reading"] = reading(r)
    out["seeds"] = seeds_table(r)
    out["chance_reading"] = chance_reading(r)
    return out


blocks = experiment_page(NAME, render, settings=settings_words)
