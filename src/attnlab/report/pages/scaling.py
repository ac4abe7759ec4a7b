"""E3 trained (C3.4, C3.5): the same heads with and without dividing by sqrt(d_k), and their probes."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.report.format import chart, md_table, not_run, spread
from attnlab.report.tables import per_seed_csv, seeds_named

TWIN = {"E3-block-raw": "L9"}  # the divided twin of a run that lives in another experiment


def runs_table(site) -> pd.DataFrame:
    names = list(site.res.experiment("scaling"))
    names += [twin for name, twin in TWIN.items() if name in names and twin in site.res.runs]
    rows = []
    for name in names:
        m, spec = site.res.runs[name], site.res.spec(name)
        rows.append({
            "run": name, "setup": f"full block, {spec.heads} heads" if spec.mixer == "multihead" else "one head, no norm",
            "d_k": spec.head_dim, "divided": spec.scale, "steps": m.get("steps"),
            "val_ppl": site.res.mean(name, "val_ppl"), "train_ppl": site.res.mean(name, "train_ppl"),
            "val_spread": site.res.spread(name, "val_ppl"), "train_spread": site.res.spread(name, "train_ppl"),
            "status": site.res.status(name),
        })
    return pd.DataFrame(rows).sort_values(["setup", "d_k", "divided"]) if rows else pd.DataFrame()


def probes_table(site) -> pd.DataFrame:
    """Long format (run, seed, step, probe, value): the one head's probes of every run at every seed."""
    frames = []
    for name in site.res.experiment("scaling"):
        df = per_seed_csv(site.res, name, "probes.csv")
        if len(df):
            cols = {c: c.rsplit("_", 1)[0] for c in df.columns if c.endswith("_0")}  # the first (only) head
            frames.append(df[["seed", "step", *cols]].rename(columns=cols).assign(run=name))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames).melt(id_vars=["run", "seed", "step"], var_name="probe", value_name="value")


def gain_chart(table: pd.DataFrame) -> dict:
    t = table.dropna(subset=["val_ppl"]).assign(
        division=lambda d: d["divided"].map({True: "divided by √d_k", False: "undivided"}),
        case=lambda d: d["setup"] + ", d_k " + d["d_k"].astype(str))
    return alt.Chart(t).mark_bar().encode(
        x=alt.X("val_ppl:Q", title="validation perplexity (lower is better)"),
        y=alt.Y("division:N", title=None),
        color=alt.Color("division:N", title=None),
        row=alt.Row("case:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
        tooltip=["run", "d_k", "divided", alt.Tooltip("val_ppl:Q", format=".2f")],
    ).properties(width=420, height=40).to_dict()


def probes_chart(probes: pd.DataFrame) -> dict:
    titles = {"score_std": "score std (log)", "entropy": "attention entropy (nats)",
              "saturated": "rows with max weight > 0.99"}
    base = alt.Chart(probes).mark_line(point=False, opacity=0.8).encode(
        x=alt.X("step:Q"), color=alt.Color("run:N"), detail="seed:N",
        tooltip=["run", "seed", "step", alt.Tooltip("value:Q", format=".3g")])
    panels = [base.transform_filter(alt.datum.probe == key).encode(
        y=alt.Y("value:Q", title=title, scale=alt.Scale(type="log") if key == "score_std" else alt.Scale()))
        .properties(width=250, height=180) for key, title in titles.items()]
    return alt.hconcat(*panels).properties(title=f"The head's scores as it trains, {seeds_named(probes)}").to_dict()


def blocks(site) -> dict[str, str]:
    table = runs_table(site)
    out = site.skeleton("scaling", rerun=site.snakemake(site.run_target("scaling", ["E3-h1024-raw"]), gpu=True)
                        + "\n# every run of E3\n" + site.snakemake("claims.csv", gpu=True))
    if table.empty:
        missing = not_run(f"{site.rdir}/scaling/*/seed*/metrics.json", command=site.snakemake("claims.csv", gpu=True))
        return out | {"runs_table": missing, "gain_chart": "", "probes_chart": "", "probes_table": ""}
    out["runs_table"] = md_table(table, {"run": "run", "setup": "setup", "d_k": "d_k", "divided": "÷ √d_k",
                                         "steps": "steps", "val_spread": "val ppl", "train_spread": "train ppl",
                                         "status": "status"}, {"val_spread": spread(2), "train_spread": spread(2)})
    out["gain_chart"] = (chart("chart-scaling-gain", gain_chart(table)) if table["val_ppl"].notna().any()
                         else "_No run has a finite perplexity to chart: each diverged (see its status above)._\n")
    probes = probes_table(site)
    out["probes_chart"] = chart("chart-scaling-probes", probes_chart(probes)) if len(probes) else \
        "_No probes recorded._"
    out["probes_table"] = md_table(first_and_last(probes)) if len(probes) else ""
    return out


def first_and_last(probes: pd.DataFrame) -> pd.DataFrame:
    """One line per run: each probe at the first and at the last probed step, the mean over the seeds."""
    mean = probes.dropna(subset=["value"]).groupby(["run", "probe", "step"], as_index=False)["value"].mean()
    ordered = mean.sort_values("step").groupby(["run", "probe"])["value"]
    wide = pd.concat({"start": ordered.first(), "end": ordered.last()}, axis=1).unstack("probe")
    wide.columns = [f"{probe} at {when}" for when, probe in wide.columns]
    return wide.round(4).reset_index()
