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


def test_the_fastest_is_attnlabs_setting_with_the_highest_mean_log_speedup():
    b = {"yardstick": "ref", "settings": [
        {"name": "ref", "model": "reference", "step_seconds": [1.0, 1.0]},
        {"name": "steady", "model": "attnlab", "step_seconds": [0.8, 0.8]},  # 1.25× in both rounds
        {"name": "jumpy", "model": "attnlab", "step_seconds": [0.25, 4.0]}]}  # 4× then ¼×: log mean 0
    r, logs = derive.fastest(b)
    assert r["name"] == "steady" and logs == pytest.approx([math.log(1.25)] * 2)
    b["settings"][0]["step_seconds"] = [0.5, 0.5]  # a reference faster than every attnlab setting: still attnlab's
    assert derive.fastest(b)[0]["name"] == "steady"
    assert derive.fastest({}) is None
