"""E3 trained (C3.4, C3.5): the same heads with and without dividing by sqrt(d_k), and their probes."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.eta import spent
from attnlab.report.format import chart, md_table, spread
from attnlab.report.readings import PPL_ERROR, interval, said, versus
from attnlab.claims.design import paired
from attnlab.experiments.scaling import derive
from attnlab.report.tables import seeds_named
from attnlab.results import per_seed_csv
from attnlab.report.context import experiment_page, one_run_then_every


def runs_table(site) -> pd.DataFrame:
    """derive.runs_table with each run's setup in words, sorted by setup, d_k and division."""
    table = derive.runs_table(site.res)
    if table.empty:
        return table
    table.insert(1, "setup", [f"full block, {h} heads" if mixer == "multihead" else "one head, no norm"
                              for mixer, h in zip(table.pop("mixer"), table.pop("heads"))])
    return table.sort_values(["setup", "d_k", "divided"])


def gain_chart(table: pd.DataFrame) -> dict:
    t = table.dropna(subset=["val_ppl"]).assign(
        division=lambda d: d["divided"].map({True: "divided by √d_k", False: "undivided"}),
        case=lambda d: d["setup"] + ", d_k " + d["d_k"].astype(str))
    return alt.Chart(t).mark_bar().encode(
        x=alt.X("val_ppl:Q", title="validation perplexity (lower is better)"),
        y=alt.Y("division:N", title=None),
        color=alt.Color("division:N", title=None, legend=None),  # the bars' own labels name it
        row=alt.Row("case:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
        tooltip=["run", "d_k", "divided", alt.Tooltip("val_ppl:Q", format=".2f")],
    ).properties(width=360, height=40).to_dict()


def probes_chart(probes: pd.DataFrame) -> dict:
    titles = {"score_std": "score std (log)", "entropy": "attention entropy (nats)",
              "saturated": "rows with max weight > 0.99"}
    base = alt.Chart(probes).mark_line(point=False, opacity=0.8).encode(
        x=alt.X("step:Q"), color=alt.Color("run:N"), detail="seed:N",
        tooltip=["run", "seed", "step", alt.Tooltip("value:Q", format=".3g")])
    panels = [base.transform_filter(alt.datum.probe == key).encode(
        y=alt.Y("value:Q", title=title, scale=alt.Scale(type="log") if key == "score_std" else alt.Scale()))
        .properties(width=240, height=180) for key, title in titles.items()]
    return alt.concat(*panels, columns=2).properties(
        title=f"The head's scores as it trains, {seeds_named(probes)}").configure_legend(orient="bottom").to_dict()


def render(ctx) -> dict[str, str]:
    site, out = ctx.site, {}
    table = runs_table(site)
    out["runs_table"] = md_table(table, {"run": "run", "setup": "setup", "d_k": "d_k", "divided": "÷ √d_k",
                                         "steps": "steps", "val_spread": "val ppl", "train_spread": "train ppl",
                                         "status": "status"}, {"val_spread": spread(2), "train_spread": spread(2)})
    out["gain_chart"] = (chart("chart-scaling-gain", gain_chart(table)) if table["val_ppl"].notna().any()
                         else "_No run has a finite perplexity to chart: each diverged (see its status above)._\n")
    probes = derive.probes_long({name: per_seed_csv(site.res, name, "probes.csv")
                                 for name in site.res.experiment("scaling")})
    out["probes_chart"] = chart("chart-scaling-probes", probes_chart(probes)) if len(probes) else \
        "_No probes recorded._"
    spreads = derive.probe_spreads(site.res)
    out["probes_table"] = probes_seed_table(spreads) if spreads else ""
    out["probe_reading"] = probe_reading(spreads)
    out["division_reading"] = division_reading(table)
    out["c35_step"] = c35_step_words(derive.c35_steps(site.res))
    readers = [c.id for c in site.registry.claims if c.rows & set(derive.C35_RUNS)]
    out["c35_cost"] = c35_cost_words(derive.c35_seconds(site.res), spent(site.folder).total, readers,
                                     len(site.registry.claims))
    return out


OUT_OF_PROPORTION = 3  # a share of the run time this many times its share of the claims is said to be out of it


def c35_cost_words(pair: float, total: float, readers: list[str], n_claims: int) -> str:
    """What C3.5's pair costs: its share of the version's run time against its share of the claims (those that
    read either run of it), said out of proportion from OUT_OF_PROPORTION times on. Empty without run times."""
    if not pair or not total or not readers or not n_claims:
        return ""
    share, fair = pair / total, len(readers) / n_claims
    times = share / fair
    judged = (f"{times:.0f} times their share of the claims, out of proportion to what they decide: the first place "
              "to cut were this profile to be made shorter" if times >= OUT_OF_PROPORTION
              else f"{times:.1f} times their share of the claims, not out of proportion to what they decide")
    return (f"**What the pair costs.** The two d_k = 1024 runs, at all their seeds, took {pair:,.0f} s of this "
            f"version's {total:,.0f} s of run time ({share:.0%}), and {len(readers)} of its {n_claims} claims "
            f"({', '.join(readers)}) read them. That is {judged}.")


CHAPTER_C35_STEP = 1500  # the chapter reads C3.5's score dynamics after 1500 steps of batch 32


def c35_step_words(steps: list[int]) -> str:
    """At which step C3.5's last probe was read (derive.c35_steps), against the chapter's 1500."""
    if not steps:
        return ""
    where = " and ".join(map(str, steps))
    if steps == [CHAPTER_C35_STEP]:
        how = "the chapter's own step, so the growth and the collapse are read where the chapter read them"
    elif max(steps) < CHAPTER_C35_STEP:
        how = (f"before the chapter's {CHAPTER_C35_STEP}, so the scores have had less time to grow than the "
               "chapter's had")
    else:
        how = f"not at the chapter's {CHAPTER_C35_STEP} (some seeds or runs later)"
    return f"C3.5 reads the d_k = 1024 pair's last probe, taken at step {where}: {how}.\n"


PROBES = {"score_std": "score std", "saturated": "saturated rows", "entropy": "entropy"}


def probes_seed_table(spreads: dict[str, dict]) -> str:
    """Each run's probes at the first and the last probed step: mean ± sd over its seeds (each on hover)."""
    cols = {f"{p}|{w}": f"{label} at {w}" for p, label in PROBES.items() for w in ("start", "end")}
    rows = [{"run": run, **{f"{p}|{w}": sp for (p, w), sp in at.items()}} for run, at in sorted(spreads.items())]
    return md_table(pd.DataFrame(rows), {"run": "run", **cols}, {c: spread(3) for c in cols})


def probe_reading(spreads: dict[str, dict]) -> str:
    """How each run's score spread and saturated share moved from the first probe to the last: the change,
    paired by seed, with its interval (95 %), said as a rise or a fall only where the interval clears zero."""
    lines = []
    for run, at in sorted(spreads.items()):
        said_of = []
        for probe in ("score_std", "saturated"):
            start, end = at.get((probe, "start")), at.get((probe, "end"))
            if start and end:
                e = paired(end, start)
                said_of.append(f"{PROBES[probe]} {start.mean:.3f} → {end.mean:.3f} ({interval(e, 3)}: "
                               + said(e, above="rises", below="falls") + ")")
        if said_of:
            lines.append(f"- **{run}**: " + "; ".join(said_of) + ".")
    if not lines:
        return ""
    return ("From the first probe to the last (the change paired by seed, ± k·SE at 95 %; *rises* or *falls* only "
            "where that interval clears zero):\n\n" + "\n".join(lines) + "\n")


def division_reading(table: pd.DataFrame) -> str:
    """What dividing by √d_k did to validation perplexity in each setup and width: undivided minus divided, paired
    by seed, with its interval (95 %), said higher or lower only where the interval clears zero."""
    lines = []
    for (setup, d_k), g in table.groupby(["setup", "d_k"], sort=False):
        raw, div = g[~g["divided"].astype(bool)], g[g["divided"].astype(bool)]
        if raw.empty or div.empty or raw["val_spread"].iloc[0] is None or div["val_spread"].iloc[0] is None:
            continue
        a, b = raw.iloc[0], div.iloc[0]
        lines.append(f"- {setup}, d_k = {d_k}, {a['run']} against {b['run']}: " + versus(
            a["val_spread"], b["val_spread"], above="undivided higher (the division helps)",
            below="undivided lower (the division hurts)") + ".")
    if not lines:
        return ""
    return ("Undivided minus divided validation perplexity (paired by seed, ± k·SE at 95 % with SE "
            f"{PPL_ERROR}; a direction only "
            "where that interval clears zero):\n\n" + "\n".join(lines) + "\n")


blocks = experiment_page("scaling", render, rerun=one_run_then_every("E3-h1024-raw", "E3"))
