"""E6's derived numbers (experiments/cost/derive.py) on a hand-made result: the table in the page's order with its
units, the rows that ran, and the slopes re-fit over the last sizes that ran."""
from __future__ import annotations

import pytest

from attnlab.experiments.cost import derive

ROWS = [{"n": n, "method": "naive", "oom": False, "median_ms": n ** 2 / 100, "peak_bytes": 2 ** 20 * n,
         "score_bytes": 2 ** 21, "flops_per_s": 3e9} for n in (2, 4, 8, 16, 32)]


def test_the_slope_is_fit_over_the_last_sizes_that_ran():
    assert derive.SLOPE_ROWS == 4
    slope, se, df = derive.fit(ROWS, "median_ms")
    assert slope == pytest.approx(2.0) and se == pytest.approx(0.0, abs=1e-9) and df == 2  # four sizes
    assert derive.fit(ROWS, "peak_bytes")[0] == pytest.approx(1.0)
    bent = ROWS[:1] + [{**r, "median_ms": r["median_ms"] * 1e3} for r in ROWS[1:]]  # the first size falls out
    assert derive.fit(bent, "median_ms")[0] == pytest.approx(2.0)
    assert derive.fit(bent[:3], "median_ms")[0] > 2.0  # three sizes: the first is in, and steepens the fit
    stopped = ROWS[:2] + [{"n": 8, "method": "naive", "oom": True}, {"n": 16, "method": "naive", "not_run": "why"}]
    assert derive.fit(stopped, "median_ms")[1:] == (None, 0)  # an out-of-memory or not-run row holds no measurement
    assert derive.fit(ROWS[:1], "median_ms") is None


def test_the_table_orders_methods_and_keeps_rows_that_did_not_run():
    r = {"projections": [{"n": 2, "median_ms": 0.1}],
         "rows": [{"n": 4, "method": "tiled", "oom": True, "score_bytes": 2 ** 21}] + ROWS[:2]}
    t = derive.table(r)
    assert list(zip(t["method"], t["n"])) == [("naive", 2), ("naive", 4), ("tiled", 4), ("projections", 2)]
    assert t.loc[0, "score_mb"] == 2.0 and t.loc[0, "peak_mb"] == 2.0 and t.loc[0, "gflop_s"] == 3.0
    assert derive.methods(t) == ["naive", "tiled", "projections"]
    assert list(derive.ran_rows(t)["method"]) == ["naive", "naive", "projections"]  # NaN oom: never recorded


def test_the_error_tables_hold_each_size():
    e = {"window": [{"window": 8, "relative_error": 0.5}, {"window": 16, "relative_error": 0.2}],
         "favor": [{"features": 8, "relative_error": 1.4, "min": 1.2, "max": 1.6}]}
    window, favor = derive.error_tables(e)
    assert list(window["window_error"]) == [0.5, 0.2]
    assert favor.iloc[0].to_dict() == {"features": 8, "favor_error": 1.4, "favor_se": None, "favor_min": 1.2,
                                       "favor_max": 1.6}


def test_the_draws_lie_on_one_side_only_where_the_lowest_and_highest_do():
    assert derive.draws_against({"min": 1.1, "max": 1.9}, 1.0) == "above"
    assert derive.draws_against({"min": 0.2, "max": 0.9}, 1.0) == "below"
    assert derive.draws_against({"min": 0.95, "max": 1.2}, 1.0) == "within"
    assert derive.draws_against({"relative_error": 1.4}, 1.0) is None  # a file from before the range was recorded
    assert derive.draws({"draws": 3}) == 3 and derive.draws({}) == 1
