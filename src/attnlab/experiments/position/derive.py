"""E5 · Position and length: the numbers its page shows, from the run files (each run's perplexity, a mean over
its seeds, at every window it was read through, and the window it trained on)."""
from __future__ import annotations

import math

import pandas as pd

from attnlab.results import Results

EXPERIMENT = "position"
ORDER = ["learned", "sinusoidal", "rope", "alibi", "none"]  # the encodings in the order the page lists them


def windows(res: Results) -> list[str]:
    """Every evaluation window any run reports, in increasing order (keys as written: '64', '128', ...)."""
    keys = {k for m in res.experiment(EXPERIMENT).values() for k in (m.get("val_ppl_at") or {})}
    return sorted(keys, key=lambda k: (float(k) if k.replace(".", "", 1).isdigit() else math.inf, k))


def runs_table(res: Results) -> pd.DataFrame:
    """One line per run, in ORDER of its encoding: the window it trained on, its perplexity at every window (ppl_W,
    the mean over seeds; spread_W, every seed's), and how much it rose from the trained window to the longest one
    it has a perplexity at (rise, a ratio of the means)."""
    wins, rows = windows(res), []
    for name, m in res.experiment(EXPERIMENT).items():
        spec = m.get("spec") or {}
        trained = str(spec.get("context")) if spec.get("context") is not None else None
        at = {w: res.mean(name, "val_ppl_at", w) for w in m.get("val_ppl_at") or {}}  # finite means, else None
        row = {"run": name, "encoding": spec.get("position"), "trained": spec.get("context"),
               "status": res.status(name), "diverged_at": m.get("diverged_at_step")}
        row.update({f"ppl_{w}": at.get(w) for w in wins})
        row.update({f"spread_{w}": res.spread(name, "val_ppl_at", w) for w in wins})
        longest = next((w for w in reversed(wins) if at.get(w) is not None), None)
        base = at.get(trained) if trained else None
        row["rise"] = at[longest] / base if base and longest and longest != trained else None
        row["longest"] = longest
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    rank = {e: i for i, e in enumerate(ORDER)}
    return (pd.DataFrame(rows).assign(_o=lambda d: d["encoding"].map(rank).fillna(len(ORDER)))
            .sort_values(["_o", "run"]).drop(columns="_o").reset_index(drop=True))


def length_long(res: Results, table: pd.DataFrame) -> pd.DataFrame:
    """Long format (run, encoding, window, ppl, trained): every run's mean perplexity at every window it has one
    at, and whether that window is the one it trained on."""
    rows = []
    for _, r in table.iterrows():
        for w in res.runs[r["run"]].get("val_ppl_at") or {}:
            v = res.mean(r["run"], "val_ppl_at", w)
            if v is not None:
                rows.append({"run": r["run"], "encoding": r["encoding"], "window": float(w), "ppl": v,
                             "trained": float(w) == r["trained"]})
    return pd.DataFrame(rows)


def rise_spreads(res: Results, table: pd.DataFrame, trained: str, longest: str) -> dict[str, tuple]:
    """Encoding -> its perplexity at the `longest` window and at `trained` (results.Spread, every seed's), for the
    runs trained at that length that have both: what its rise is read from, seed by seed."""
    out = {}
    for _, r in table[table["trained"].astype(str) == trained].iterrows():
        at_long, at_trained = (res.spread(r["run"], "val_ppl_at", w) for w in (longest, trained))
        if at_long and at_trained:
            out[r["encoding"]] = (at_long, at_trained)
    return out


def trained_window(trained: list[float]) -> int | None:
    """The window most runs trained on (None: no run says)."""
    return int(max(set(trained), key=trained.count)) if trained else None
