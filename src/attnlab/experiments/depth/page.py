"""E4 (C4.1, C4.2): pre-norm against post-norm in a deep stack, with and without learning-rate warmup."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.experiments.depth import derive
from attnlab.report import charts
from attnlab.report.format import chart, finite, md_table, num, spread
from attnlab.report.readings import PPL_ERROR, count, interval, runs_at_seeds, said, versus
from attnlab.stats import Estimate, of_values, side
from attnlab.claims.design import paired
from attnlab.report.tables import seeds_named
from attnlab.results import per_seed_csv
from attnlab.report.context import experiment_page, one_run_then_every

EXPERIMENT = "depth"
NAMES = {derive.OUR_DEFINITION: "whole block (ours)", derive.CHAPTER_DEFINITION: "W_q, W_k, W_v (the claim's)",
         "grad_wo_": "W_o"}  # short names of the probe's definitions for tables and legends


def named(frame: pd.DataFrame) -> pd.DataFrame:
    """A derived frame with its definitions of a block's gradient and its norm placements in the page's words."""
    return frame.assign(definition=frame["definition"].map(NAMES), norm=frame["norm"] + "-norm")


def definition_reading(t: pd.DataFrame) -> str:
    """Which recorded definition of a block's gradient gives the chapter's numbers, generated from them: per
    definition, its size against the chapter's at block 1 and at the last block, its last/first trend against the
    chapter's, and how many of the chapter's six numbers (block 1, the last block and last/first, pre- and
    post-norm) lie inside our 95 % interval over the seeds (mean ± k·SE); then the definitions in order of that
    count, and whether one holds all six."""
    lines, counts, matched, estimates = [], {}, [], 0
    for definition, g in t.groupby("definition", sort=False):
        inside, outside = 0, 0
        for _, r in g.iterrows():
            for ours, chapter in (("first", "chapter_first"), ("last", "chapter_last"), ("ratio", "chapter_ratio")):
                e = of_values(r[ours].values)
                if e.half is not None:
                    inside += abs(e.value - r[chapter]) <= e.half
                    outside += abs(e.value - r[chapter]) > e.half
        estimates += inside + outside
        head = f"- {definition}: {sizes(g)}; {trends(g)}"
        if inside + outside == 0:
            lines.append(f"{head} (one seed: no interval to hold the chapter's numbers against).")
            continue
        counts[definition] = (inside, inside + outside)
        lines.append(f"{head}; {inside} of the chapter's {inside + outside} numbers lie inside our 95 % intervals.")
        if outside == 0 and len(g) == 2:
            matched.append(definition)
    if not estimates:
        verdict = "With one seed there is no interval to say which definition the chapter's numbers belong to."
    elif matched:
        verdict = f"The chapter's numbers are those of {' and of '.join(matched)}" + (
            "." if NAMES[derive.OUR_DEFINITION] in matched else
            f", not of the {NAMES[derive.OUR_DEFINITION]}: the chapter's gradient norm per block is one attention matrix's.")
    else:
        verdict = ("No recorded definition holds all of the chapter's numbers inside its intervals; "
                   "`tools/grad-definitions.py` measures the other candidates.")
    return ("Each recorded definition of a block's gradient against the chapter's block 1, last block and "
            "last/first, pre- and post-norm:\n\n" + "\n".join(lines) + "\n\n" + nearest(counts) + verdict + "\n")


def sizes(g: pd.DataFrame) -> str:
    """A definition's step-0 norms as multiples of the chapter's, at block 1 and at the last block, per
    placement: 'at block 1 4.40× the chapter's in pre-norm and 4.07× in post-norm; at the last block …'."""
    def at(col: str, chapter: str) -> str:
        return " and ".join(f"{r[col].mean / r[chapter]:.2f}× {'the chapter' + chr(39) + 's ' if i == 0 else ''}"
                            f"in {r['norm']}" for i, (_, r) in enumerate(g.iterrows()))
    return f"at block 1 {at('first', 'chapter_first')}, at the last block {at('last', 'chapter_last')}"


def trends(g: pd.DataFrame) -> str:
    """A definition's last/first ratio per placement beside the chapter's, each said as a trend over the depth
    only where its interval clears 1 (the chapter's, a number with no error, by which side of 1 it lies)."""
    out = []
    for _, r in g.iterrows():
        e = of_values(r["ratio"].values)
        chapter = "rises" if r["chapter_ratio"] > 1 else "falls" if r["chapter_ratio"] < 1 else "is even"
        ours = said(e, of=1.0, above="rises with depth", below="falls with depth", within="even over the depth within the noise",
                    unknown="one seed: no error to judge a trend by")
        out.append(f"last/first {interval(e, 3, signed=False)} in {r['norm']}, {ours} (the chapter's "
                   f"{r['chapter_ratio']:.2f} {chapter})")
    return "; ".join(out)


def nearest(counts: dict[str, tuple[int, int]]) -> str:
    """The definitions in order of how many of the chapter's numbers lie inside their intervals, ties named as
    such: 'Nearest the chapter's numbers: W_q, W_k, W_v, 5 of 6; then W_o, 4 of 6; then …'. '' for none."""
    if not counts:
        return ""
    ranked = sorted(counts.items(), key=lambda kv: -kv[1][0])
    said_ = []
    for i, (definition, (inside, n)) in enumerate(ranked):
        tie = i > 0 and inside == ranked[i - 1][1][0]
        said_.append(("as many: " if tie else "then " if i else "") + f"{definition}, {inside} of {n}")
    return "Nearest the chapter's numbers: " + "; ".join(said_) + ". "


def lean(e: Estimate | None) -> str:
    """Which end of the stack a last/first ratio favours, said only where its interval clears 1."""
    return said(e, of=1.0, above="the blocks nearer the output receive the larger gradient",
                below="the blocks nearer the input receive the larger gradient",
                within="the gradient is even over the depth within the noise",
                unknown="one seed, so no error to judge a direction by")


def init_reading(t: pd.DataFrame) -> str:
    """What the step-0 table says, per definition of a block's gradient, in words generated from every seed's
    ratios: a direction only where the interval (± k standard errors over the seeds) clears 1, and post-norm
    against pre-norm paired by seed."""
    out = []
    for definition, g in t.groupby("definition", sort=False):
        lines = []
        for _, r in g.iterrows():
            e = of_values(r["ratio"].values)
            lines.append(f"In {r['norm']}, the last block's gradient is {e.value:.3f}× the first block's "
                         f"({ratio_interval(e, r['seeds'])}): {lean(e)}.")
        ratios = dict(zip(g["norm"], g["ratio"]))
        if {"pre-norm", "post-norm"} <= set(ratios):
            post, pre = ratios["post-norm"].by_seed, ratios["pre-norm"].by_seed
            e = paired(post, pre, how=lambda a, b: a / b)
            lines.append(f"Post-norm's last/first ratio is {e.value:.2f}× pre-norm's ({ratio_interval(e, len(post))}): "
                         + said(e, of=1.0,
                                above="the gradient's spread over the depth is larger with the LayerNorm after each "
                                      "sublayer",
                                below="the gradient's spread over the depth is smaller with the LayerNorm after each "
                                      "sublayer",
                                within="the two placements spread the gradient alike within the noise",
                                unknown="one seed, so no error to judge which spreads it more") + ".")
        out.append(f"- **{definition}.** " + " ".join(lines))
    return "\n".join(out) + "\n"


def ratio_interval(e: Estimate, seeds: int) -> str:
    """'mean of 3 seeds, 95 % interval (k·SE) ± 0.096' or 'one seed'."""
    return "one seed" if e.half is None else f"mean of {seeds} seeds, 95 % interval (k·SE) ± {e.half:.3f}"


OUTCOMES = (  # (what is compared, the run, the run it is set against)
    ("Pre-norm, with warmup against without", "E4-pre-warm", "E4-pre"),
    ("Post-norm, with warmup against without", "E4-post-warm", "E4-post"),
    ("Without warmup, post-norm against pre-norm", "E4-post", "E4-pre"),
)


def outcome_reading(table: pd.DataFrame) -> str:
    """What the final perplexities say: per placement, warmup's effect (with against without, paired by seed),
    and post-norm against pre-norm without warmup; a direction only where the interval clears zero."""
    spreads = {r["run"]: r["val_spread"] for _, r in table.iterrows() if r["val_spread"] is not None}
    lines = [f"- {what}: {versus(spreads[a], spreads[b])}." for what, a, b in OUTCOMES if a in spreads and b in spreads]
    if not lines:
        return ""
    return ("Final validation perplexity, run against run (paired by seed, ± k·SE at 95 % with SE "
            f"{PPL_ERROR}; *higher* or *lower* only "
            "where that interval clears zero):\n\n" + "\n".join(lines) + "\n")


# C2.9: the only training perplexities the chapter prints, its ladder's one and two blocks at 3000 x 64 (validation
# 38.07 and 40.57, training 18.77 and 14.49): the widest gap between seen and unseen text it reports
CHAPTER_WIDEST_GAP = ("two blocks", 40.57 / 14.49)


def alone(s) -> Estimate:
    """One run's mean perplexity with the verdicts' error: its seeds' spread and its evaluation's sampling error
    (the jackknife over its blocks) in quadrature, paired() with itself."""
    return paired(s, s, how=lambda x, _: x)


def fit_reading(table: pd.DataFrame) -> str:
    """Per run that trained: its validation perplexity over its training perplexity (paired by seed, each
    evaluation's sampling error in the jackknife), set against the chapter's widest such gap, and its validation
    perplexity against the chapter's number for the run; then how many runs end above, within or below the
    chapter's. A direction only where the interval clears it."""
    lines, against = [], {"above": [], "within": [], "below": [], None: []}
    name, gap = CHAPTER_WIDEST_GAP
    for _, r in table.iterrows():
        val, train = r.get("val_spread"), r.get("train_spread")
        if val is None or train is None or pd.isna(val) or pd.isna(train):
            continue
        ratio = paired(val, train, how=lambda v, t: v / t)
        line = (f"- **{r['run']}**: validation {val.mean:.2f}, training {train.mean:.2f}, validation over training "
                f"{interval(ratio, signed=False)}: "
                + said(ratio, f"a wider gap than the chapter's {name} ({gap:.2f}×)",
                       f"a narrower gap than the chapter's {name} ({gap:.2f}×)",
                       of=gap, within=f"the chapter's {name}' gap ({gap:.2f}×) within the noise"))
        chapter = r.get("chapter_ppl")
        if chapter is not None and not pd.isna(chapter):
            e = alone(val)
            side_ = side(e, chapter)
            against[side_].append(r["run"])
            line += (f". Against the chapter's {chapter:.2f} for this run: {interval(e, signed=False)}, "
                     + said(e, "above it", "below it", of=chapter))
        lines.append(line + ".")
    if not lines:
        return ""
    judged = sum(len(v) for k, v in against.items() if k is not None)
    tally = "; ".join(f"{count(len(against[k]), 'run')} {words} ({', '.join(against[k])})"
                      for k, words in (("above", "above it"), ("within", "within the noise of it"),
                                       ("below", "below it")) if against[k])
    unjudged = f" ({count(len(against[None]), 'run')} with no error to judge by left out)" if against[None] else ""
    summary = (f"\n\nOf the {count(judged, 'run')} set against the chapter's validation perplexity{unjudged}: "
               f"{tally}." if judged else "")
    return ("Validation perplexity over training perplexity, run by run (paired by seed, ± k·SE at 95 % with SE "
            f"{PPL_ERROR}; *wider* or *narrower* only where that interval clears the chapter's gap):\n\n"
            + "\n".join(lines) + summary + "\n")


RUN_COLUMNS = {"run": "run", "blocks": "blocks", "warmup": "warmup steps", "steps": "steps",
               "lr": "lr", "status": "status", "val_spread": "val ppl", "chapter_ppl": "chapter's val ppl",
               "train_spread": "train ppl", "diverged_at": "diverged at step"}
SAID_ONCE = {"blocks": ("{} blocks", lambda v: str(int(v))), "steps": ("{} steps", lambda v: str(int(v))),
             "lr": ("learning rate {}", lambda v: f"{v:g}"), "warmup": ("{} warmup steps", lambda v: str(int(v)))}


def shared(table: pd.DataFrame, columns: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The settings every run shares (one value in every row of a SAID_ONCE column), said once above the table
    ('Every run: 12 blocks, 400 steps, learning rate 0.003.\n\n'), and the columns left for it: a column of one
    value only widens the table past the page. 'diverged at step' goes where no run diverged."""
    said, left = [], dict(columns)
    for col, (words, show) in SAID_ONCE.items():
        values = table[col].dropna().unique() if col in table and len(table) > 1 else []
        if len(values) == 1 and table[col].notna().all():
            said.append(words.format(show(values[0])))
            left.pop(col, None)
    if "diverged_at" in table and table["diverged_at"].isna().all():
        left.pop("diverged_at", None)
    return (f"Every run: {', '.join(said)}.\n\n" if said else ""), left


# --------------------------------------------------------------------- charts

def ppl_chart(table: pd.DataFrame) -> dict:
    t = table.assign(
        label=lambda d: [f"{v:.2f}" if finite(v) is not None else
                         (f"diverged at step {s}" if s is not None and not pd.isna(s) else str(st))
                         for v, s, st in zip(d["val_ppl"], d["diverged_at"], d["status"])],
        bar=lambda d: d["val_ppl"].fillna(0.0))
    t = t[["run", "norm", "status", "label", "bar"]]
    base = alt.Chart(t).encode(y=alt.Y("run:N", sort=list(t["run"]), title=None))
    bars = base.mark_bar().encode(
        x=alt.X("bar:Q", title="validation perplexity (lower is better)"),
        color=alt.Color("norm:N", title="norm"), tooltip=["run", "status", "label"])
    text = base.mark_text(align="left", dx=4).encode(x="bar:Q", text="label:N")
    return (bars + text).properties(width=460, height=32 * len(t)).to_dict()


def first_seed(site, runs, every_seed: str = "") -> str:
    """'seed N (the first of M)': the seed a chart drawn from `site.res.runs` shows (each run's first), and
    `every_seed` (where the page shows every seed, e.g. 'the table below') when there are more."""
    seeds = sorted({s for run in runs for s in site.res.seeds(run)})
    more = f"; {every_seed} is over every seed" if every_seed else ""
    return f"seed {seeds[0]}" + (f" (the first of {len(seeds)}{more})" if len(seeds) > 1 else "") if seeds \
        else "no seed"


def init_chart(grads: pd.DataFrame, seed: str = "") -> dict:
    base = alt.Chart(grads).encode(
        x=alt.X("block:O", title="block (1 = nearest the input)"),
        y=alt.Y("grad_norm:Q", title="gradient norm at step 0"),
        color=alt.Color("norm:N", title=None),
        tooltip=["run", "definition", "block", alt.Tooltip("grad_norm:Q", format=".4f")])
    lines = base.mark_line().encode(  # points apart: a dash legend on a line with points draws dots
        strokeDash=alt.StrokeDash("definition:N", legend=charts.line_legend("a block's gradient is")))
    return charts.fit_page(alt.layer(lines, base.mark_point(filled=True, size=30)).properties(
        width=460, height=260, title=["Gradient norm per block at step 0,", seed]).to_dict())


def early_chart(early: pd.DataFrame, runs: list[str], seed: str = "") -> dict:
    return alt.Chart(early).mark_line(point=True).encode(
        x=alt.X("step:Q", title="step (0 = before the first update)"),
        y=alt.Y("grad_norm:Q", title="gradient norm (log)", scale=alt.Scale(type="log")),
        color=alt.Color("block:O", title="block", scale=alt.Scale(scheme="viridis")),
        tooltip=["run", "step", "block", alt.Tooltip("grad_norm:Q", format=".4g")],
    ).properties(width=230, height=200).facet(
        facet=alt.Facet("run:N", sort=runs, title=None), columns=2).resolve_scale(y="shared").properties(
        title=["Gradient norm per block over the first steps,", seed]).to_dict()


def curves_chart(c: pd.DataFrame, runs: list[str]) -> dict:
    return charts.fit_page(alt.Chart(c).mark_line(strokeWidth=1.2, opacity=0.8).encode(
        x=alt.X("step:Q", axis=alt.Axis(labelFlush=False)), y=alt.Y("train_loss:Q", title="training loss (nats/token)"),
        color=alt.Color("run:N", sort=runs), detail="seed:N",
        tooltip=["run", "seed", "step", alt.Tooltip("train_loss:Q", format=".3f")],
    ).properties(width=520, height=260, title=f"Training loss, {seeds_named(c)}").to_dict())


# --------------------------------------------------------------------- blocks

def render(ctx) -> dict[str, str]:
    site, out = ctx.site, {}
    table = derive.runs_table(site.res, site.config)
    said_once, columns = shared(table, RUN_COLUMNS)
    out["runs_table"] = said_once + md_table(
        table, columns, {"val_spread": spread(2), "train_spread": spread(2), "chapter_ppl": num(2),
                         "diverged_at": lambda v: str(int(v)), **{c: f for c, (_, f) in SAID_ONCE.items()}})
    out["ppl_chart"] = chart("chart-depth-ppl", ppl_chart(table))
    out["run_seeds"] = runs_at_seeds({run: site.res.seeds(run) for run in table["run"]})

    grads = derive.init_grads(site.res, table)
    if grads.empty:
        out["init_chart"], out["init_table"] = "_No step-0 gradient probe recorded._", ""
        out["init_reading"] = out["definition_reading"] = ""
    else:
        seed = first_seed(site, table["run"], "the table below")
        out["init_chart"] = chart("chart-depth-init", init_chart(named(grads), seed))
        t = named(derive.init_table(derive.init_seeds(site.res, table)))
        out["init_table"] = md_table(
            t, {"definition": "a block's gradient is", "norm": "norm", "run": "read from", "seeds": "seeds",
                "first": "block 1", "chapter_first": "chapter", "n": "last block", "last": "last block's norm",
                "chapter_last": "chapter", "ratio": "last / first (mean ± sd)", "chapter_ratio": "chapter"},
            {"first": spread(4), "last": spread(4), "ratio": spread(3), "chapter_first": num(4),
             "chapter_last": num(4), "chapter_ratio": num(2)})
        out["init_reading"] = init_reading(t)
        out["definition_reading"] = definition_reading(t)
    out["outcome_reading"] = outcome_reading(table)
    out["fit_reading"] = fit_reading(table)
    runs = list(table["run"])
    early = derive.early_grads(site.res, table)
    out["early_chart"] = chart("chart-depth-early", early_chart(early, runs, first_seed(site, runs))) if len(early) else \
        "_No per-step gradient probes recorded._"
    c = derive.curves({run: per_seed_csv(site.res, run, "curve.csv") for run in runs})
    out["curves_chart"] = chart("chart-depth-curves", curves_chart(c, runs)) if len(c) else \
        "_No training curves recorded._"
    return out


blocks = experiment_page(EXPERIMENT, render, rerun=one_run_then_every("E4-post", "E4"))
