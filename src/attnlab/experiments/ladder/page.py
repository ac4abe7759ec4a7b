"""E2 (C2.x): the ladder, from a bigram model to one full transformer block, one piece at a time."""
from __future__ import annotations

import pandas as pd

from attnlab.claims.outcome import Outcome
from attnlab.experiments.ladder import derive
from attnlab.experiments.ladder.derive import pct, variants
from attnlab.report import charts
from attnlab.report.format import chart, md_table, not_run, num, spread
from attnlab.report.readings import PPL_ERROR, at_seeds, count, interval, said
from attnlab.claims.design import paired
from attnlab.results import Results, Spread, per_seed_csv, row_order as row_order_of
from attnlab.runs import LIKE, entries
from attnlab.report.context import experiment_page

NAME = "ladder"

# The ladder, bottom to top. Each rung adds one piece to the one before it;
# learned positions, once added at L3, stay on for every later rung.
ROWS = {
    "L1": "no context: token embedding → linear to vocabulary",
    "L2": "uniform causal average of the context replaces the token",
    "L3": "L2 + learned positions added before averaging",
    "L4": "the average is added to the token (residual)",
    "L5": "one learned head (d_head 128) replaces the token",
    "L6": "one learned head, added (residual)",
    "L7": "4 heads of 32 + output projection W_o",
    "L8": "L7 + position-wise MLP (4×, GELU)",
    "L9": "L8 + pre-norm LayerNorm = one full block",
    "B2": "two full blocks",
}


def row_order(rows, declared: dict | None = None) -> list[str]:
    """The chapter's rungs in ladder order, then the profile's other runs (a reader's variants) as it declares
    them, then any others alphabetically."""
    return row_order_of(rows, [*ROWS, *entries(declared)])


def described(name: str, declared: dict | None) -> str:
    """What a variant is, from the profile: the run it is like and the settings it changes ('L9 with mlp_ratio 2'),
    or, for a run given whole, that it is the profile's own."""
    runs = entries(declared)
    run = runs.get(name) or {}
    like = run.get(LIKE)
    if like is None:
        return "a run of this profile's own"
    base = runs.get(like) or {}
    changed = [f"{k} {v}" for k, v in run.items() if k != LIKE and base.get(k) != v]
    return f"{like} with {', '.join(changed)}" if changed else f"as {like}, nothing changed"


def ladder_table(res: Results, reference: dict | None = None, declared: dict | None = None) -> pd.DataFrame:
    """One line per ladder row (run or not: the chapter's rungs, then the profile's own variants), with what it
    adds in words beside its numbers (derive.ladder_values). `declared`: the profile's ladder section."""
    ladder = res.experiment(NAME)
    rows = row_order(set(ROWS) | set(variants(declared)) | set(ladder), declared)
    table = derive.ladder_values(res, rows, reference)
    table.insert(1, "description", [ROWS.get(row) or (described(row, declared) if row in entries(declared)
                                                      else (ladder.get(row) or {}).get("name", row)) for row in rows])
    return table


def curves(res: Results, declared: dict | None) -> dict[str, pd.DataFrame]:
    """Each rung that ran (in ladder order) -> its curve.csv at every seed."""
    return {row: per_seed_csv(res, row, "curve.csv") for row in row_order(res.experiment(NAME), declared)}


def runs_table(table: pd.DataFrame) -> str:
    """How each rung ran (derive.how_they_ran); the evaluation method is said once when every rung shares it (it
    is long)."""
    methods = set(table["method"].dropna())
    headers = {"row": "rung", "steps": "steps", "tok_s": "tokens/s", "resumed": "resumed from step",
               "method": "evaluation", "val_tokens": "val tokens scored", "train_tokens": "train tokens scored"}
    lead = ""
    if len(methods) <= 1:
        headers.pop("method")
        lead = f"Every rung was scored the same way: {methods.pop()}.\n\n" if methods else ""
    return lead + md_table(table, headers, {k: num(0) for k in ("tok_s", "val_tokens", "train_tokens")})


def step(spreads: dict, a: str, b: str) -> str:
    """A cell of the steps table: rung a's perplexity less rung b's, paired by seed, ± k·SE (95 %), and which way
    it went, said only where the interval clears zero."""
    if spreads.get(a) is None or spreads.get(b) is None:
        return "–"
    e = paired(spreads[a], spreads[b])
    return f"{interval(e)}: " + said(e, above="higher", below="lower")


def steps_table(ladder: pd.DataFrame) -> str:
    """What each of the chapter's rungs did: its validation (and training) perplexity less the rung below's, and
    its validation perplexity less L1's, each paired by seed with its interval; 'higher' or 'lower' only where the
    interval clears zero, else within the noise."""
    ran = ladder[ladder["val_spread"].notna() & ladder["row"].isin(ROWS)]
    if len(ran) < 2:
        return ""
    rows = list(ran["row"])
    val, train = dict(zip(ran["row"], ran["val_spread"])), dict(zip(ran["row"], ran["train_spread"]))
    table = pd.DataFrame([{"row": r, "below": below, "val": step(val, r, below), "train": step(train, r, below),
                           "first": step(val, r, rows[0])} for below, r in zip(rows, rows[1:])])
    return ("Each rung against the one below it and against the first (a difference in perplexity, rung minus "
            f"the other, paired by seed, ± k·SE at 95 % with SE {PPL_ERROR}; *higher* or *lower* only where that "
            "interval clears zero):"
            "\n\n" + md_table(table, {"row": "rung", "below": "rung below", "val": "val ppl − rung below",
                                       "train": "train ppl − rung below", "first": f"val ppl − {rows[0]}"}) + "\n")


def variant_reading(name: str, what: str, reference: str, mine: Spread, theirs: Spread) -> str:
    """One variant against the rung it is read against: both validation perplexities (means over seeds), their
    difference paired by seed with its interval, and which way it went only where that interval clears zero."""
    e = paired(mine, theirs)
    seeds = at_seeds([s for s in mine.by_seed if s in theirs.by_seed]) or "with no seed in common"
    return (f"**{name}** ({what}): validation perplexity {mine.mean:.2f} against {reference}'s {theirs.mean:.2f}, "
            f"paired {seeds}: a difference of {interval(e)}, "
            + said(e, above=f"higher than {reference}'s (worse)", below=f"lower than {reference}'s (better)") + ".")


def variants_part(ladder: pd.DataFrame, declared: dict | None) -> str:
    """A reading of each of the profile's own variants that ran, against the rung it is like (else L9)."""
    ran, what = dict(zip(ladder["row"], ladder["val_spread"])), dict(zip(ladder["row"], ladder["description"]))
    lines = ["- " + variant_reading(name, what[name], reference, ran[name], ran[reference])
             for name, reference in derive.read_against(declared, ran)]
    if not lines:
        return ""
    return ("**Your variants.** Each run this profile adds to the ladder, read against the rung it is like (a "
            f"difference in validation perplexity, variant minus rung, paired by seed, ± k·SE at 95 % with SE "
            f"{PPL_ERROR}; *higher* or *lower* only where that interval clears zero):\n\n" + "\n".join(lines) + "\n")


def one_or_range(values, fmt: str = ",") -> str:
    """'16' where every value is the same, '16 to 64' where they differ."""
    values = sorted(set(values))
    return f"{values[0]:{fmt}}" if len(values) == 1 else f"{values[0]:{fmt}} to {values[-1]:{fmt}}"


def what_dots_score(evals: pd.DataFrame) -> str:
    """Which validation tokens the curves' dots score, against the final evaluation behind the tables."""
    total = one_or_range(evals["final_tokens"])
    if evals["windows"].isna().any():
        return ("The dots are the evaluation the training loop runs as it goes, on windows from the start of the "
                f"validation split; the ladder table gives the final evaluation, over the whole split ({total} "
                "tokens).")
    n, context = evals["windows"].astype(int), evals["context"].astype(int)
    if not derive.scores_part(evals):
        return (f"The dots score the whole validation split ({total} tokens), as the final evaluation behind the "
                "ladder table does.")
    return (f"The dots are the evaluation the training loop runs as it goes: the first {one_or_range(n)} windows "
            f"of {one_or_range(context)} tokens of the validation split ({one_or_range(n * context)} tokens, the "
            f"same at every evaluation and every seed); the final evaluation, behind the ladder table's "
            f"perplexities, scores all {one_or_range(evals['final_tokens'] // context)} windows ({total} tokens).")


def where_dots_lie(gaps: list[float]) -> str:
    """Where the last dot lies against the final loss, run by run: `gaps` are final loss less the last dot's,
    in nats, for runs scored at the same weights."""
    below, above = sum(g > 1e-9 for g in gaps), sum(g < -1e-9 for g in gaps)
    n, lo, hi, mean = len(gaps), min(gaps), max(gaps), sum(gaps) / len(gaps)
    every = "the one run" if n == 1 else f"every one of the {n} runs"
    if not below and not above:
        return f"the dot equals the final loss in {every}"
    if below == n or above == n:
        way, a, b = ("below", lo, hi) if below == n else ("above", -hi, -lo)
        return (f"the dot lies {way} the final loss in {every}: by {abs(mean):.2f} nats on average ({a:.2f} to "
                f"{b:.2f}), so a dot read as a perplexity, exp(loss), is {min(pct(lo), pct(hi)):.0f} % to "
                f"{max(pct(lo), pct(hi)):.0f} % {way} its run's final perplexity")
    parts = [f"{w} it in {count(k, 'run')}" for w, k in (("below", below), ("above", above),
                                                          ("equal to", n - below - above)) if k]
    return (f"the dot lies {', '.join(parts)} (the final loss less the dot's: {lo:+.2f} to {hi:+.2f} nats, "
            f"{mean:+.2f} on average)")


def curves_note(evals: pd.DataFrame) -> str:
    """What the curves' validation dots are, and, at the last step, how they compare with the tables' final
    evaluation of the same weights, run by run and across seeds; every number from the run files."""
    if evals.empty:
        return ""
    text = what_dots_score(evals)
    same = derive.at_final_weights(evals)
    if len(same):
        gaps = list(same["final_loss"] - same["curve_loss"])
        text += (f" At the last step ({one_or_range(same['step'])}) both score the same weights, and "
                 f"{where_dots_lie(gaps)}.")
        spans = derive.seed_spans(same)
        if len(spans):
            c, f = spans["curve"].idxmax(), spans["final"].idxmax()
            text += (f" Across seeds, the last dots of one rung span up to {spans.at[c, 'curve']:.2f} nats ({c}); "
                     f"the final losses, up to {spans.at[f, 'final']:.2f} ({f}).")
    if derive.scores_part(evals):
        text += (" The dots' windows are one stretch from the start of the split, not a sample of the whole of it: "
                 "read them for how the loss falls, and the ladder table for its value.")
    return text + "\n"


def rerun(site, name: str) -> str:
    """One rung at every seed, then the whole ladder."""
    rows = list(ladder_table(site.res, site.registry.reference, site.config.get(NAME))["row"])
    return (f"# one rung, at every seed\n{site.snakemake(site.run_target(name, ['L6']), gpu=True)}\n"
            f"# the whole ladder\n{site.snakemake(site.run_target(name, rows), gpu=True)}")


def render(ctx) -> dict[str, str]:
    """Every block, run or not: a rung that has not run is a line of the table, and the missing ones' command."""
    site, res = ctx.site, ctx.site.res
    declared = site.config.get(NAME)
    ladder = ladder_table(res, site.registry.reference, declared)
    run = ladder[ladder["status"] != Outcome.NOT_RUN]
    missing_rows = [r for r in ladder["row"] if r not in ctx.runs]
    redo = site.snakemake(site.run_target(NAME, missing_rows), gpu=True) if missing_rows else ""
    by_row = curves(res, declared)
    long, params = derive.curves_long(by_row), derive.param_table(res, list(by_row))
    return {
        "ladder_table": md_table(ladder, {
            "row": "rung", "description": "what it adds", "n_params": "params", "val_spread": "val ppl",
            "chapter_val_ppl": "chapter val ppl", "train_spread": "train ppl",
            "chapter_train_ppl": "chapter train ppl", "status": "status"},
            {"n_params": lambda v: f"{int(v):,}", "val_spread": spread(2), "train_spread": spread(2),
             "chapter_val_ppl": num(2), "chapter_train_ppl": num(2)}),
        "spec_table": md_table(run, {"row": "rung", "n_blocks": "blocks", "mixer": "mixer", "n_heads": "heads",
                                     "residual": "residual", "position": "position", "mlp": "MLP",
                                     "norm": "norm"}) if len(run) else "_No rung has run yet._",
        "steps_table": steps_table(ladder),
        "variants": variants_part(ladder, declared),
        "missing": (not_run(*[f"{site.rdir}/{site.run_target(NAME, [r])}" for r in missing_rows], command=redo)
                    if missing_rows else ""),
        "ladder_chart": chart("chart-ladder", charts.rows_chart(ladder, variants(declared))) if len(run) else "",
        "settings": site.settings_table(),
        "curves_chart": chart("chart-curves", charts.curves_chart(long)) if len(long) else
        "_No training curves yet._\n",
        "curves_note": curves_note(derive.last_evals(res, site.config, by_row)) if len(long) else "",
        "params_chart": chart("chart-params", charts.params_chart(params)) if len(params) else
        "_No rung has run yet._\n",
        "runs_table": runs_table(derive.how_they_ran(res, list(by_row))) if by_row else "",
    }


def downloads(site) -> dict[str, str]:
    """ladder.csv beside the pages: the ladder table with numbers only (see derive.numbers_only)."""
    table = ladder_table(site.res, site.registry.reference, site.config.get(NAME))
    return {"ladder.csv": derive.numbers_only(table).to_csv(index=False)}


blocks = experiment_page(NAME, render, unrun=render, rerun=rerun)
