"""S4's derived numbers: the cost in GFLOP and millions of scores, the time split into core and rest."""
from __future__ import annotations

import pytest

from attnlab.experiments.multihead import derive

ROWS = [{"heads": 1, "flops": 2e9, "softmax_elements": 3e6, "ms_median": 9.5, "ms_core_median": 4.0},
        {"heads": 8, "flops": 2e9, "softmax_elements": 24e6, "ms_median": 12.0, "ms_core_median": 12.5}]


def test_the_cost_is_in_billions_of_flops_and_millions_of_scores():
    t = derive.costs({"rows": ROWS})
    assert t["gflops"].tolist() == [2.0, 2.0] and t["msoftmax"].tolist() == [3.0, 24.0]


def test_the_time_splits_into_core_and_rest_never_below_zero_and_is_whole_where_the_core_is_untimed():
    t = derive.time_parts({"rows": ROWS + [{"heads": 16, "ms_median": 20.0}]})
    assert list(zip(t["heads"], t["part"], t["ms"])) == [
        (1, "core", 4.0), (1, "rest", pytest.approx(5.5)), (8, "core", 12.5), (8, "rest", 0.0),
        (16, "whole", 20.0)]


def test_the_slowest_and_the_fastest_head_count():
    slow, fast = derive.slowest_fastest({"rows": ROWS})
    assert (slow["heads"], fast["heads"]) == (8, 1)
    slow, fast = derive.slowest_fastest({"rows": [{**ROWS[0], "ms_median": 13.0}, ROWS[1]]})
    assert (slow["heads"], fast["heads"]) == (1, 8)


def test_the_core_and_the_rest_at_the_fewest_and_the_most_heads_only_where_both_timed_the_core():
    three = ROWS[:1] + [{"heads": 4, "ms_median": 10.0}] + ROWS[1:]  # the middle row's core is not needed
    assert derive.core_and_rest({"rows": three}) == [(1, 4.0, 5.5), (8, 12.5, -0.5)]
    assert derive.core_and_rest({"rows": ROWS + [{"heads": 16, "ms_median": 20.0}]}) is None
