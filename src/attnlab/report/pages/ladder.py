"""E2 (C2.x): the ladder, from a bigram model to one full transformer block, one piece at a time."""
from __future__ import annotations

import math

import pandas as pd

from attnlab.claims.outcome import Outcome
from attnlab.errors import AttnlabError
from attnlab.report import charts, tables
from attnlab.report.format import chart, md_table, not_run, num, spread
from attnlab.report.readings import PPL_ERROR, count, interval, paired, said
from attnlab.runs import train_settings

NAME = "ladder"


def runs_table(site) -> str:
    """How each rung ran; the evaluation method is said once when every rung shares it (it is long)."""
    ladder = site.res.experiment(NAME)
    recs = []
    for row in tables.row_order(ladder):
        m = ladder[row]
        ev = m.get("eval") or {}
        recs.append({"row": row, "steps": m.get("steps"), "tok_s": m.get("tokens_per_second"),
                     "resumed": m.get("resumed_from_step"), "method": ev.get("method"),
                     "val_tokens": ev.get("val_tokens_scored"), "train_tokens": ev.get("train_tokens_scored")})
    table = pd.DataFrame(recs)
    methods = set(table["method"].dropna())
    headers = {"row": "rung", "steps": "steps", "tok_s": "tokens/s", "resumed": "resumed from step",
               "method": "evaluation", "val_tokens": "val tokens scored", "train_tokens": "train tokens scored"}
    lead = ""
    if len(methods) <= 1:
        headers.pop("method")
        lead = f"Every rung was scored the same way: {methods.pop()}.\n\n" if methods else ""
    return lead + md_table(table, headers, {"tok_s": lambda v: f"{v:,.0f}", "val_tokens": lambda v: f"{int(v):,}",
                                            "train_tokens": lambda v: f"{int(v):,}"})


def step(spreads: dict, a: str, b: str | None) -> str:
    """A cell of the steps table: rung a's perplexity less rung b's, paired by seed, ± k·SE (95 %), and which way
    it went, said only where the interval clears zero."""
    if b is None or spreads.get(a) is None or spreads.get(b) is None:
        return "–"
    e = paired(spreads[a], spreads[b])
    return f"{interval(e)}: " + said(e, above="higher", below="lower")


def steps_table(ladder: pd.DataFrame) -> str:
    """What each rung did: its validation (and training) perplexity less the rung below's, and its validation
    perplexity less L1's, each paired by seed with its interval; 'higher' or 'lower' only where the interval clears
    zero, else within the noise."""
    ran = ladder[ladder["val_spread"].notna()]
    if len(ran) < 2:
        return ""
    rows = list(ran["row"])
    val, train = dict(zip(ran["row"], ran["val_spread"])), dict(zip(ran["row"], ran["train_spread"]))
    table = pd.DataFrame([{"row": r, "below": rows[i - 1] if i else None,
                           "val": step(val, r, rows[i - 1] if i else None),
                           "train": step(train, r, rows[i - 1] if i else None),
                           "first": step(val, r, rows[0] if i else None)} for i, r in enumerate(rows)][1:])
    return ("Each rung against the one below it and against the first (a difference in perplexity, rung minus "
            f"the other, paired by seed, ± k·SE at 95 % with SE {PPL_ERROR}; *higher* or *lower* only where that "
            "interval clears zero):"
            "\n\n" + md_table(table, {"row": "rung", "below": "rung below", "val": "val ppl − rung below",
                                       "train": "train ppl − rung below", "first": f"val ppl − {rows[0]}"}) + "\n")


def eval_windows(site, row: str) -> int | None:
    """How many validation windows the training loop scored at each evaluation of `row` (train.eval_windows)."""
    try:
        return train_settings(site.config, row)["eval_windows"]
    except (AttnlabError, KeyError, TypeError):
        return None


def last_evals(site) -> pd.DataFrame:
    """Per rung and seed, from the run files: the curve's last in-training validation loss (its step, the tokens it
    scored: the split's first eval_windows windows) beside metrics.json's final one (the whole split)."""
    res, recs = site.res, []
    for row in tables.row_order(res.experiment(NAME)):
        curves, windows = tables.per_seed_csv(res, row, "curve.csv"), eval_windows(site, row)
        for seed, m in res.by_seed[row].items():
            curve = curves[curves["seed"] == seed].dropna(subset=["val_loss"]) if len(curves) else curves
            context, scored = (m.get("spec") or {}).get("context"), (m.get("eval") or {}).get("val_tokens_scored")
            if not len(curve) or not context or not scored:
                continue
            recs.append({"row": row, "seed": seed, "step": int(curve["step"].iloc[-1]),
                         "curve_loss": float(curve["val_loss"].iloc[-1]), "steps": m.get("steps"),
                         "final_loss": m.get("val_loss"), "context": context, "final_tokens": scored,
                         "windows": None if windows is None else min(windows, scored // context)})
    return pd.DataFrame(recs, columns=["row", "seed", "step", "curve_loss", "steps", "final_loss", "context",
                                       "final_tokens", "windows"])


def one_or_range(values, fmt: str = ",") -> str:
    """'16' where every value is the same, '16 to 64' where they differ."""
    values = sorted(set(values))
    return f"{values[0]:{fmt}}" if len(values) == 1 else f"{values[0]:{fmt}} to {values[-1]:{fmt}}"


def scores_part(evals: pd.DataFrame) -> bool:
    """Whether the dots score only part of the split (its first windows), or an unknown number of them."""
    return bool(evals["windows"].isna().any() or (evals["windows"] * evals["context"] < evals["final_tokens"]).any())


def what_dots_score(evals: pd.DataFrame) -> str:
    """Which validation tokens the curves' dots score, against the final evaluation behind the tables."""
    total = one_or_range(evals["final_tokens"])
    if evals["windows"].isna().any():
        return ("The dots are the evaluation the training loop runs as it goes, on windows from the start of the "
                f"validation split; the ladder table gives the final evaluation, over the whole split ({total} "
                "tokens).")
    n, context = evals["windows"].astype(int), evals["context"].astype(int)
    if not scores_part(evals):
        return (f"The dots score the whole validation split ({total} tokens), as the final evaluation behind the "
                "ladder table does.")
    return (f"The dots are the evaluation the training loop runs as it goes: the first {one_or_range(n)} windows "
            f"of {one_or_range(context)} tokens of the validation split ({one_or_range(n * context)} tokens, the "
            f"same at every evaluation and every seed); the final evaluation, behind the ladder table's "
            f"perplexities, scores all {one_or_range(evals['final_tokens'] // context)} windows ({total} tokens).")


def pct(gap: float) -> float:
    """How far a dot's perplexity lies from its run's final one, in per cent, for a gap of `gap` nats."""
    return 100 * abs(math.exp(-gap) - 1)


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
    same = evals[(evals["step"] == evals["steps"]) & evals["final_loss"].notna()]
    if len(same):
        gaps = list(same["final_loss"] - same["curve_loss"])
        text += (f" At the last step ({one_or_range(same['step'])}) both score the same weights, and "
                 f"{where_dots_lie(gaps)}.")
        spans = same.groupby("row").agg(seeds=("seed", "size"), curve=("curve_loss", lambda v: v.max() - v.min()),
                                        final=("final_loss", lambda v: v.max() - v.min()))
        spans = spans[spans["seeds"] > 1]
        if len(spans):
            c, f = spans["curve"].idxmax(), spans["final"].idxmax()
            text += (f" Across seeds, the last dots of one rung span up to {spans.at[c, 'curve']:.2f} nats ({c}); "
                     f"the final losses, up to {spans.at[f, 'final']:.2f} ({f}).")
    if scores_part(evals):
        text += (" The dots' windows are one stretch from the start of the split, not a sample of the whole of it: "
                 "read them for how the loss falls, and the ladder table for its value.")
    return text + "\n"


def blocks(site) -> dict[str, str]:
    res = site.res
    ladder = tables.ladder_table(res, site.registry.reference)
    run = ladder[ladder["status"] != Outcome.NOT_RUN]
    missing_rows = [r for r in ladder["row"] if r not in res.experiment(NAME)]
    one = site.snakemake(site.run_target(NAME, ["L6"]), gpu=True)
    every = site.snakemake(site.run_target(NAME, list(ladder["row"])), gpu=True)
    redo = site.snakemake(site.run_target(NAME, missing_rows), gpu=True) if missing_rows else ""
    out = site.skeleton(NAME, rerun=f"# one rung, at every seed\n{one}\n# the whole ladder\n{every}")
    curves, params = tables.curves_table(res), tables.param_table(res)
    return out | {
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
        "missing": (not_run(*[f"{site.rdir}/{site.run_target(NAME, [r])}" for r in missing_rows], command=redo)
                    if missing_rows else ""),
        "ladder_chart": chart("chart-ladder", charts.ladder_chart(ladder)) if len(run) else "",
        "settings": site.settings_table(),
        "curves_chart": chart("chart-curves", charts.curves_chart(curves)) if len(curves) else
        "_No training curves yet._\n",
        "curves_note": curves_note(last_evals(site)) if len(curves) else "",
        "params_chart": chart("chart-params", charts.params_chart(params)) if len(params) else
        "_No rung has run yet._\n",
        "runs_table": runs_table(site) if res.experiment(NAME) else "",
    }
