"""E4 (C4.1, C4.2): the numbers the depth page shows, from the run files: each run's settings and outcome, the
step-0 gradient norm per block under every definition the probe recorded (beside the chapter's numbers), the
per-block gradient over the first steps and the training curves. A frame names a definition by its probe key prefix and a placement by
the spec's `norm` ('pre', 'post'); the page puts them into words."""
from __future__ import annotations

import math

import pandas as pd

from attnlab import layout
from attnlab.errors import AttnlabError
from attnlab.experiments.depth import settings
from attnlab.results import Results, Spread
from attnlab.runs import train_settings

EXPERIMENT = "depth"
PLACEMENTS = {"pre": 0, "post": 1}  # the order of the runs: pre-norm first, then by warmup
OUR_DEFINITION, CHAPTER_DEFINITION = settings.OUR_DEFINITION, settings.CHAPTER_DEFINITION  # the page names both
# C4.2 as the chapter prints it: each run's validation perplexity (the claims test ratios of them; the page sets
# every run's own number beside its run)
CHAPTER_PPL = {"E4-pre": 37.82, "E4-pre-warm": 37.62, "E4-post": 308.05, "E4-post-warm": 37.88}


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _train_settings(config, name: str) -> dict:
    """The run's train settings from the profile (empty when the config does not name the run)."""
    try:
        return train_settings(config, name)
    except (AttnlabError, KeyError, TypeError):
        return {}


def _csv(res: Results, name: str, file: str) -> pd.DataFrame:
    path = res.root / layout.sibling(res.run_paths[name], file)
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


def warmup_from_curve(curve: pd.DataFrame) -> int | None:
    """Warmup steps as the loop applied them: the first logged step whose learning rate is the peak."""
    if curve.empty or "lr" not in curve:
        return None
    lr = curve["lr"].dropna()
    if lr.empty:
        return None
    reached = curve.loc[lr.index[lr >= lr.max() * (1 - 1e-9)], "step"]
    first = int(reached.iloc[0])
    return 0 if first <= 1 else first


def runs_table(res: Results, config) -> pd.DataFrame:
    """One row per run: its placement, depth, warmup (the profile's, else read off its curve), steps, learning
    rate, status, final validation and training perplexity over the seeds (the chapter's validation perplexity
    beside them) and where it diverged; pre-norm first, then by warmup."""
    rows = []
    for name, m in res.experiment(EXPERIMENT).items():
        spec, ts = m.get("spec") or {}, _train_settings(config, name)
        warmup = ts.get("warmup_steps")
        if warmup is None:
            warmup = warmup_from_curve(_csv(res, name, "curve.csv"))
        rows.append({"run": name, "norm": spec.get("norm"), "blocks": spec.get("n_blocks"), "warmup": warmup,
                     "steps": m.get("steps"), "lr": ts.get("lr"), "status": res.status(name),
                     "val_ppl": res.mean(name, "val_ppl"), "val_spread": res.spread(name, "val_ppl"),
                     "train_spread": res.spread(name, "train_ppl"), "chapter_ppl": CHAPTER_PPL.get(name),
                     "diverged_at": m.get("diverged_at_step")})
    if not rows:
        return pd.DataFrame()
    return (pd.DataFrame(rows).assign(_o=lambda d: d["norm"].map(PLACEMENTS).fillna(2))
            .sort_values(["_o", "warmup", "run"], na_position="first").drop(columns="_o").reset_index(drop=True))


def init_grads(res: Results, table: pd.DataFrame) -> pd.DataFrame:
    """Gradient norm per block at step 0 under every definition the probe recorded, one run per norm placement
    (no-warmup runs first: the step-0 gradient is taken before the schedule ever acts, so both runs of a
    placement read the same)."""
    rows, seen = [], set()
    for _, r in table.sort_values("warmup", na_position="first").iterrows():
        first = res.runs[r["run"]].get("probes_first") or {}
        if r["norm"] in seen or not any(k.startswith(OUR_DEFINITION) for k in first):
            continue
        seen.add(r["norm"])
        for prefix in settings.GRAD_DEFINITIONS:
            for k, v in first.items():
                if k.startswith(prefix) and _finite(v):
                    rows.append({"norm": r["norm"], "definition": prefix, "run": r["run"],
                                 "block": int(k[len(prefix):]), "grad_norm": v})
    return pd.DataFrame(rows)


def init_seeds(res: Results, table: pd.DataFrame) -> pd.DataFrame:
    """Per norm placement and definition of a block's gradient, the step-0 gradient of its run without warmup at
    every seed: block 1, the last block and their ratio, one row per seed (the claim C4.1 reads every seed, and
    so does the page). A run file made before a definition was recorded has no rows for it."""
    rows = []
    for norm, runs in table.sort_values("warmup", na_position="first").groupby("norm", sort=False):
        for run in runs["run"]:
            found = [{"norm": norm, "definition": prefix, "run": run, "seed": str(seed), **row}
                     for prefix in settings.GRAD_DEFINITIONS for seed, m in (res.by_seed.get(run) or {}).items()
                     if (row := first_last(m.get("probes_first") or {}, prefix))]
            if found:
                rows += found
                break
    return pd.DataFrame(rows)


def first_last(first: dict, prefix: str = OUR_DEFINITION) -> dict | None:
    """Block 1's and the last block's gradient norm under one definition in one probe, and their ratio (None
    without two blocks)."""
    g = {int(k[len(prefix):]): v for k, v in first.items() if k.startswith(prefix) and _finite(v)}
    if len(g) < 2:
        return None
    n = max(g)
    return {"first": g[min(g)], "last": g[n], "n": n, "ratio": g[n] / g[min(g)]}


def init_table(seeds: pd.DataFrame) -> pd.DataFrame:
    """One row per definition and norm placement: block 1, the last block and last/first over the seeds
    (results.Spread: mean ± sd, each seed on hover), beside the chapter's three numbers."""
    rows = []
    for (definition, norm, run), g in seeds.groupby(["definition", "norm", "run"], sort=False):
        spreads = {k: Spread(dict(zip(g["seed"], g[k]))) for k in ("first", "last", "ratio")}
        chapter = dict(zip(("chapter_first", "chapter_last", "chapter_ratio"), settings.CHAPTER_GRADS[norm]))
        rows.append({"definition": definition, "norm": norm, "run": run, "seeds": len(g), "n": int(g["n"].max()),
                     **spreads, **chapter})
    return pd.DataFrame(rows)


def early_grads(res: Results, table: pd.DataFrame) -> pd.DataFrame:
    """Per-block gradient norms (our definition) over the probed first steps, every run (long form)."""
    frames = []
    for name in table["run"]:
        df = _csv(res, name, "probes.csv")
        cols = [c for c in df.columns if c.startswith(OUR_DEFINITION)]
        if df.empty or not cols:
            continue
        long = df[["step", *cols]].melt(id_vars="step", var_name="block", value_name="grad_norm")
        long["block"] = long["block"].str[len(OUR_DEFINITION):].astype(int)
        frames.append(long.assign(run=name))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[out["grad_norm"].map(lambda v: _finite(v) and v > 0)]


def curves(per_seed: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every run's training loss at every seed it was trained at (`per_seed`: run -> its curve.csv at every seed,
    with a `seed` column); a diverged run's ends at its last finite loss."""
    frames = [df[["seed", "step", "train_loss"]][df["train_loss"].map(_finite)].assign(run=name)
              for name, df in per_seed.items() if not df.empty and "train_loss" in df]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
