"""E9 · Equivalence: the numbers its page shows, from the result file (each case's largest differences between
attnlab's outputs and PyTorch's, as a table and one comparison to a line)."""
from __future__ import annotations

import pandas as pd

COMPARISONS = ("max_abs_diff_mha", "max_abs_diff_sdpa", "max_abs_diff_mha_vs_sdpa")  # what each case may measure


def cases_table(e9: dict) -> pd.DataFrame:
    """One line per case: its queries and keys (t_q, t_k), attnlab's largest |difference| from
    nn.MultiheadAttention (mha) and from SDPA (sdpa), PyTorch's between those two (torch, where measured),
    attnlab's largest error against float64 (err) and the outputs' mean magnitude (mean)."""
    rows = []
    for c in e9["cases"]:
        err = c.get("max_abs_err_vs_float64") or {}
        rows.append({"case": c["name"], "t_q": c["t_q"], "t_k": c["t_k"], "mha": c["max_abs_diff_mha"],
                     "sdpa": c["max_abs_diff_sdpa"], "torch": c.get("max_abs_diff_mha_vs_sdpa"),
                     "err": err.get("project"), "mean": c["mean_abs_output"]})
    return pd.DataFrame(rows)


def diff_long(e9: dict) -> pd.DataFrame:
    """One line per (case, comparison) measured (comparison: its key in COMPARISONS), exact zeros included and
    marked (`exact`)."""
    rows = [{"case": c["name"], "comparison": key, "max_abs_diff": c[key], "exact": c[key] == 0}
            for c in e9["cases"] for key in COMPARISONS if c.get(key) is not None]
    return pd.DataFrame(rows, columns=["case", "comparison", "max_abs_diff", "exact"])
