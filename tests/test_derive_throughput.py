"""The throughput page's derive module: the paired rounds' ratios and the settings' log speedups, worked by hand,
each with a case on the other side."""
from __future__ import annotations

import math

import pytest

from attnlab.experiments.throughput import derive


def test_each_round_is_the_references_step_time_over_attnlabs():
    assert derive.round_ratios({"attnlab_step_seconds": [1.0, 2.0], "reference_step_seconds": [1.5, 1.0]}) == \
        [1.5, 0.5]
    assert derive.round_ratios({"attnlab_step_seconds": [1.0], "reference_step_seconds": [1.0, 2.0]}) is None
    assert derive.round_ratios({}) is None


def test_a_speedup_is_the_log_of_the_yardsticks_time_over_the_settings_round_by_round():
    b = {"yardstick": "ref", "settings": [{"name": "ref", "step_seconds": [2.0, 4.0]},
                                          {"name": "fast", "step_seconds": [1.0, 8.0]}]}
    (ref, ref_logs), (fast, logs) = derive.log_speedups(b)
    assert ref_logs == [0.0, 0.0] and fast["name"] == "fast"
    assert logs == pytest.approx([math.log(2), -math.log(2)])  # twice as fast, then half as fast
    assert derive.log_speedups({"yardstick": "gone", "settings": b["settings"]}) == []
    assert derive.log_speedups({}) == []
