"""E6, S7 and S8: the numbers the cost page shows, from its result file: the sweep as one table in the page's
order, the rows that hold a measurement, each method's log-log slopes re-fit as the producer fits them, and the
S8 errors as tables."""
from __future__ import annotations

import pandas as pd

from attnlab.experiments.cost import settings
from attnlab.stats import log_fit

SLOPE_ROWS = settings.SLOPE_ROWS  # a method's slopes are fit over its last sizes that ran, this many
ORDER = ["naive", "sdpa", "tiled", "window", "favor", "projections"]


def table(r: dict) -> pd.DataFrame:
    """One row per size and method (projections alone as a method of their own), OOM and not-run rows included."""
    rows = [{**p, "method": "projections"} for p in r["projections"]] + list(r["rows"])
    t = pd.DataFrame(rows)
    t["score_mb"] = t.get("score_bytes", pd.Series(dtype=float)) / 2**20
    t["peak_mb"] = t["peak_bytes"].astype(float) / 2**20 if "peak_bytes" in t else None
    t["gflop_s"] = t["flops_per_s"].astype(float) / 1e9 if "flops_per_s" in t else None
    t["_o"] = t["method"].map({m: i for i, m in enumerate(ORDER)})
    return t.sort_values(["_o", "n"]).drop(columns="_o").reset_index(drop=True)


def methods(t: pd.DataFrame) -> list[str]:
    """The methods `t` holds, in the page's order."""
    return [m for m in ORDER if m in set(t["method"])] + sorted(set(t["method"]) - set(ORDER))


def ran_rows(t: pd.DataFrame) -> pd.DataFrame:
    """The rows that hold a measurement: neither out of memory nor not run here (a version from before not-run
    rows has no such column)."""
    oom = t["oom"].fillna(False).astype(bool)
    skipped = t["not_run"].notna() if "not_run" in t else False
    return t[~oom & ~skipped]


def fit(rows: list[dict], key: str) -> tuple[float, float | None, int] | None:
    """The log-log slope of `key` on n over the last SLOPE_ROWS sizes that ran, as the producer fits it: (slope,
    the fit's residual standard error (None from two sizes), its degrees of freedom n − 2); None with fewer than
    two sizes."""
    done = [x for x in rows if settings.ran(x) and x.get(key)]
    line = log_fit([x["n"] for x in done], [x[key] for x in done], SLOPE_ROWS)
    return None if line is None else (line["slope"], line["se"], line["n"] - 2)


def draws(e: dict) -> int:
    """How many draws the S8 errors are means over (the settings' `errors.seeds`; 1 where the file does not say)."""
    return e.get("draws") or 1


def draws_against(row: dict, of: float) -> str | None:
    """Where every draw of one size's error lies against `of`, from its lowest and highest draw: 'above',
    'below', or 'within' where the draws straddle it; None where the run file records neither."""
    if row.get("min") is None:
        return None
    return "above" if row["min"] > of else "below" if row["max"] < of else "within"


def errors(e: dict) -> pd.DataFrame:
    """S8's mean error against exact attention per method and size (a window's length, a feature count)."""
    return pd.DataFrame([{"method": method, "size": row[key], "error": row["relative_error"]}
                         for method, key in (("window", "window"), ("favor", "features")) for row in e[method]])


def error_tables(e: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """S8's errors against exact attention: the window's per window length, and FAVOR+'s per feature count (the
    mean over the draws, its standard error where recorded, the lowest and the highest draw)."""
    window = pd.DataFrame([{"window": w["window"], "window_error": w["relative_error"]} for w in e["window"]])
    favor = pd.DataFrame([{"features": f["features"], "favor_error": f["relative_error"], "favor_se": f.get("se"),
                           "favor_min": f["min"], "favor_max": f["max"]} for f in e["favor"]])
    return window, favor
