"""E4 (C4.1, C4.2): pre-norm against post-norm in a deep stack, with and without learning-rate warmup."""
from __future__ import annotations


import altair as alt
import pandas as pd

from attnlab.config import train_settings
from attnlab.errors import AttnlabError
from attnlab.report.format import chart, finite, md_table, not_run, num, spread
from attnlab.report.tables import per_seed_csv, seeds_named

EXPERIMENT = "depth"
GRAD = "grad_block_"


def _settings(site, name: str) -> dict:
    """The run's train settings from the profile (empty when the config does not name the run)."""
    try:
        return train_settings(site.config, name)
    except (AttnlabError, KeyError, TypeError):
        return {}


def _csv(site, name: str, file: str) -> pd.DataFrame:
    path = site.res.root / site.res.run_paths[name].replace("metrics.json", file)
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


def _warmup_from_curve(curve: pd.DataFrame) -> int | None:
    """Warmup steps as the loop applied them: the first logged step whose learning rate is the peak."""
    if curve.empty or "lr" not in curve:
        return None
    lr = curve["lr"].dropna()
    if lr.empty:
        return None
    reached = curve.loc[lr.index[lr >= lr.max() * (1 - 1e-9)], "step"]
    first = int(reached.iloc[0])
    return 0 if first <= 1 else first



def runs_table(site) -> pd.DataFrame:
    rows = []
    for name, m in site.res.experiment(EXPERIMENT).items():
        spec, ts = m.get("spec") or {}, _settings(site, name)
        warmup = ts.get("warmup_steps")
        if warmup is None:
            warmup = _warmup_from_curve(_csv(site, name, "curve.csv"))
        rows.append({"run": name, "norm": spec.get("norm"), "blocks": spec.get("n_blocks"), "warmup": warmup,
                     "steps": m.get("steps"), "lr": ts.get("lr"), "status": site.res.status(name),
                     "val_ppl": site.res.mean(name, "val_ppl"), "val_spread": site.res.spread(name, "val_ppl"),
                     "diverged_at": m.get("diverged_at_step")})
    if not rows:
        return pd.DataFrame()
    order = {"pre": 0, "post": 1}
    return (pd.DataFrame(rows).assign(_o=lambda d: d["norm"].map(order).fillna(2))
            .sort_values(["_o", "warmup", "run"], na_position="first").drop(columns="_o").reset_index(drop=True))


def init_grads(site, table: pd.DataFrame) -> pd.DataFrame:
    """Gradient norm per block at step 0, one run per norm placement (no-warmup runs first: the step-0
    gradient is taken before the schedule ever acts, so both runs of a placement read the same)."""
    rows, seen = [], set()
    for _, r in table.sort_values("warmup", na_position="first").iterrows():
        first = site.res.runs[r["run"]].get("probes_first") or {}
        if r["norm"] in seen or not any(k.startswith(GRAD) for k in first):
            continue
        seen.add(r["norm"])
        for k, v in first.items():
            if k.startswith(GRAD) and finite(v) is not None:
                rows.append({"norm": f"{r['norm']}-norm", "run": r["run"], "block": int(k[len(GRAD):]),
                             "grad_norm": v})
    return pd.DataFrame(rows)


def init_table(grads: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (norm, run), g in grads.groupby(["norm", "run"], sort=False):
        g = g.sort_values("block")
        first, last = g.iloc[0], g.iloc[-1]
        rows.append({"norm": norm, "run": run, "first": first["grad_norm"], "last": last["grad_norm"],
                     "n": int(last["block"]), "ratio": last["grad_norm"] / first["grad_norm"]})
    return pd.DataFrame(rows)


EVEN = 0.05  # a last/first ratio within 5 % of 1 is read as even: one measurement, not a trend


def init_reading(t: pd.DataFrame) -> str:
    """What the step-0 table says, in words generated from its ratios (so the prose cannot contradict it)."""
    def where(ratio: float) -> str:
        if ratio > 1 + EVEN:
            return "the blocks nearer the output receive the larger gradient"
        if ratio < 1 - EVEN:
            return "the blocks nearer the input receive the larger gradient"
        return f"the gradient is about even over the depth (within {EVEN:.0%})"

    lines = [f"In {r['norm']}, the last block's gradient is {r['ratio']:.3f}× the first block's: {where(r['ratio'])}."
             for _, r in t.iterrows()]
    ratios = dict(zip(t["norm"], t["ratio"]))
    if {"pre-norm", "post-norm"} <= set(ratios):
        steeper = ratios["post-norm"] / ratios["pre-norm"]
        if abs(steeper - 1) > EVEN:
            lines.append(f"Post-norm's last/first ratio is {steeper:.2f}× pre-norm's: the gradient's spread over the "
                         f"depth is {'larger' if steeper > 1 else 'smaller'} with the LayerNorm after each sublayer.")
        else:
            lines.append(f"The two placements spread the gradient alike (ratios within {EVEN:.0%} of each other).")
    return " ".join(lines) + (" A ratio within 5 % of 1 is read as even: it is one measurement at one seed, "
                              "and nothing smaller is a trend.\n")


def early_grads(site, table: pd.DataFrame) -> pd.DataFrame:
    """Per-block gradient norms over the probed first steps, every run (long form)."""
    frames = []
    for name in table["run"]:
        df = _csv(site, name, "probes.csv")
        cols = [c for c in df.columns if c.startswith(GRAD)]
        if df.empty or not cols:
            continue
        long = df[["step", *cols]].melt(id_vars="step", var_name="block", value_name="grad_norm")
        long["block"] = long["block"].str[len(GRAD):].astype(int)
        frames.append(long.assign(run=name))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[out["grad_norm"].map(lambda v: finite(v) is not None and v > 0)]


def curves(site, table: pd.DataFrame) -> pd.DataFrame:
    """Every run's training loss at every seed it was trained at (a diverged run ends at its last finite loss)."""
    frames = []
    for name in table["run"]:
        df = per_seed_csv(site.res, name, "curve.csv")
        if df.empty or "train_loss" not in df:
            continue
        df = df[["seed", "step", "train_loss"]]
        frames.append(df[df["train_loss"].map(lambda v: finite(v) is not None)].assign(run=name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


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


def init_chart(grads: pd.DataFrame) -> dict:
    return alt.Chart(grads).mark_line(point=True).encode(
        x=alt.X("block:O", title="block (1 = nearest the input)"),
        y=alt.Y("grad_norm:Q", title="gradient norm at step 0"),
        color=alt.Color("norm:N", title=None),
        tooltip=["run", "block", alt.Tooltip("grad_norm:Q", format=".4f")],
    ).properties(width=460, height=260).to_dict()


def early_chart(early: pd.DataFrame, runs: list[str]) -> dict:
    return alt.Chart(early).mark_line(point=True).encode(
        x=alt.X("step:Q", title="step (0 = before the first update)"),
        y=alt.Y("grad_norm:Q", title="gradient norm (log)", scale=alt.Scale(type="log")),
        color=alt.Color("block:O", title="block", scale=alt.Scale(scheme="viridis")),
        tooltip=["run", "step", "block", alt.Tooltip("grad_norm:Q", format=".4g")],
    ).properties(width=260, height=200).facet(
        facet=alt.Facet("run:N", sort=runs, title=None), columns=2).resolve_scale(y="shared").to_dict()


def curves_chart(c: pd.DataFrame, runs: list[str]) -> dict:
    return alt.Chart(c).mark_line(strokeWidth=1.2, opacity=0.8).encode(
        x=alt.X("step:Q"), y=alt.Y("train_loss:Q", title="training loss (nats/token)"),
        color=alt.Color("run:N", sort=runs), detail="seed:N",
        tooltip=["run", "seed", "step", alt.Tooltip("train_loss:Q", format=".3f")],
    ).properties(width=520, height=260, title=f"Training loss, {seeds_named(c)}").to_dict()


# --------------------------------------------------------------------- blocks

def blocks(site) -> dict[str, str]:
    out = site.skeleton(EXPERIMENT, rerun=site.snakemake(site.run_target(EXPERIMENT, ["E4-post"]), gpu=True)
                        + "\n# every run of E4\n" + site.snakemake("claims.csv", gpu=True))
    names = ("runs_table", "ppl_chart", "init_chart", "init_table", "init_reading", "early_chart", "curves_chart")
    table = runs_table(site)
    if table.empty:
        missing = not_run(f"{site.rdir}/{EXPERIMENT}/*/seed*/metrics.json", command=site.snakemake("claims.csv", gpu=True))
        return out | {"runs_table": missing} | {k: "" for k in names[1:]}
    out["runs_table"] = md_table(
        table, {"run": "run", "norm": "norm", "blocks": "blocks", "warmup": "warmup steps", "steps": "steps",
                "lr": "lr", "status": "status", "val_spread": "val ppl", "diverged_at": "diverged at step"},
        {"val_spread": spread(2), "warmup": lambda v: str(int(v)), "blocks": lambda v: str(int(v)),
         "steps": lambda v: str(int(v)), "diverged_at": lambda v: str(int(v)), "lr": lambda v: f"{v:g}"})
    out["ppl_chart"] = chart("chart-depth-ppl", ppl_chart(table))

    grads = init_grads(site, table)
    if grads.empty:
        out["init_chart"], out["init_table"], out["init_reading"] = "_No step-0 gradient probe recorded._", "", ""
    else:
        out["init_chart"] = chart("chart-depth-init", init_chart(grads))
        t = init_table(grads)
        out["init_table"] = md_table(t, {"norm": "norm", "run": "read from", "first": "block 1", "n": "last block",
                                         "last": "last block's norm", "ratio": "last / first"},
                                     {"first": num(4), "last": num(4), "ratio": num(3)})
        out["init_reading"] = init_reading(t)
    runs = list(table["run"])
    early = early_grads(site, table)
    out["early_chart"] = chart("chart-depth-early", early_chart(early, runs)) if len(early) else \
        "_No per-step gradient probes recorded._"
    c = curves(site, table)
    out["curves_chart"] = chart("chart-depth-curves", curves_chart(c, runs)) if len(c) else \
        "_No training curves recorded._"
    return out
