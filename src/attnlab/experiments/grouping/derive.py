"""S6's numbers from its run files: each run's shape, where it started, its steps and perplexities; which runs
a page sets against which; how long the up-trained runs trained."""
from __future__ import annotations

import pandas as pd

from attnlab import layout

EXPERIMENT = "grouping"


def start(init_from: dict) -> tuple[str, str | None, list]:
    """Where a run's seeds started training (init_from: seed -> its run file's init_from, {run, seed}, or a
    checkpoint's path in a version published before that; None: from scratch), as (how, run, per seed):
    ('fresh', None, []) where every seed started from scratch; ('one run', run, []) where each started from one
    run that records no seed; ('same seed', run, []) where each started from that run at its own seed; else
    ('per seed', None, [(seed, layout.RunPath or None: from scratch)])."""
    if not any(init_from.values()):
        return "fresh", None, []
    found = [layout.source_of(where) for where in init_from.values()]
    if all(found) and len({f.run for f in found}) == 1:
        seeds = [f.seed for f in found]
        if not any(s is not None for s in seeds):
            return "one run", found[0].run, []
        if seeds == list(init_from):
            return "same seed", found[0].run, []
    return "per seed", None, list(zip(init_from, found))


def runs(res) -> pd.DataFrame:
    """One row per run (res: results.Results): its heads, where each seed started (`init_from`: seed -> its run
    file's init_from, None: from scratch) and whether any seed was up-trained (`up`), its steps, status,
    perplexities (mean and results.Spread over seeds), parameters and KV cache bytes per token; from scratch
    first, then up-trained, each by key/value heads, most first."""
    rows = []
    for name, m in res.experiment(EXPERIMENT).items():
        spec = res.spec(name)
        init_from = {seed: r.get("init_from") for seed, r in res.by_seed[name].items()}
        rows.append({"run": name, "kv_heads": spec.kv_heads, "heads": spec.heads, "init_from": init_from,
                     "steps": m.get("steps"), "status": res.status(name),
                     "val_ppl": res.mean(name, "val_ppl"), "train_ppl": res.mean(name, "train_ppl"),
                     "val_spread": res.spread(name, "val_ppl"), "train_spread": res.spread(name, "train_ppl"),
                     "n_params": m.get("n_params"), "cache_bytes": spec.cache_bytes_per_token(),
                     "up": any(init_from.values())})
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows)
    return table.sort_values(["up", "kv_heads"], ascending=[True, False]).reset_index(drop=True)


def comparisons(t: pd.DataFrame) -> list[tuple]:
    """(run, the run it is set against, their validation perplexities' results.Spread) over runs(): every run but
    the multi-head one trained from scratch against it, and each up-trained run also against the run of its shape
    trained from scratch; only where both have a perplexity."""
    fresh = t[~t["up"]]
    mha = fresh[fresh["kv_heads"] == fresh["heads"]]["run"]
    if mha.empty:
        return []
    base = mha.iloc[0]
    shape = dict(zip(fresh["kv_heads"], fresh["run"]))
    pairs = [(r, base) for r in t["run"] if r != base]
    pairs += [(r["run"], shape[r["kv_heads"]]) for _, r in t[t["up"]].iterrows() if r["kv_heads"] in shape]
    spreads = dict(zip(t["run"], t["val_spread"]))
    return [(a, b, spreads[a], spreads[b]) for a, b in pairs
            if spreads.get(a) is not None and spreads.get(b) is not None]


def uptrain_steps(t: pd.DataFrame) -> list[int]:
    """The steps the up-trained runs of runs() trained for, each once, fewest first."""
    return sorted({int(s) for s in t[t["up"]]["steps"].dropna()}) if not t.empty else []
