"""E1's numbers from its result file: the causal averaging matrix as a table and as one row per weight, and the
largest of its three differences."""
from __future__ import annotations

import pandas as pd

DIFFERENCES = ("shuffle_max_abs_diff", "loop_vs_matmul_max_abs_diff", "loop_vs_softmax_max_abs_diff")


def matrix(e1: dict) -> pd.DataFrame:
    """The causal averaging matrix: one row per query position t (its first column, "t=0" ...), one column per
    key position s ("s=0" ...)."""
    rows = e1.get("matrix") or []
    cols = [f"s={j}" for j in range(len(rows[0]) if rows else 0)]
    index = pd.Index([f"t={i}" for i in range(len(rows))], name="")
    return pd.DataFrame(rows, columns=cols, index=index).reset_index()


def weights(e1: dict) -> pd.DataFrame:
    """The same matrix as one row per weight: t, s, weight."""
    rows = e1.get("matrix") or []
    return pd.DataFrame([{"t": i, "s": j, "weight": w} for i, r in enumerate(rows) for j, w in enumerate(r)])


def largest_difference(e1: dict) -> float | None:
    """The largest of the three ways' differences the result states (None where it states none)."""
    diffs = [d for d in (e1.get(k) for k in DIFFERENCES) if isinstance(d, (int, float))]
    return max(diffs) if diffs else None
