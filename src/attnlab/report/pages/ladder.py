"""E2 (C2.x): the ladder, from a bigram model to one full transformer block, one piece at a time."""
from __future__ import annotations

import pandas as pd

from attnlab.report import charts, tables
from attnlab.report.format import chart, md_table, not_run, num, spread
from attnlab.report.readings import PPL_ERROR, interval, paired, said

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


def blocks(site) -> dict[str, str]:
    res = site.res
    ladder = tables.ladder_table(res, site.registry.reference)
    run = ladder[ladder["status"] != "not run"]
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
        "params_chart": chart("chart-params", charts.params_chart(params)) if len(params) else
        "_No rung has run yet._\n",
        "runs_table": runs_table(site) if res.experiment(NAME) else "",
    }
