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


def test_a_rounds_share_is_the_settings_flop_rate_over_the_peaks_in_the_same_round():
    row = {"flops": 10.0, "peak": "fp32", "step_seconds": [1.0, 0.5]}  # 10 and 20 FLOP/s
    b = {"peak": {"fp32": {"flops": 100.0, "seconds": [2.0, 4.0]}}}  # 50 and 25 FLOP/s
    assert derive.round_shares(b, row) == pytest.approx([0.2, 0.8])
    assert derive.round_shares({}, row) is None  # a run file from before the peak
    assert derive.round_shares(b, {"peak": "fp32", "step_seconds": [1.0]}) is None


def profiled_file(matmul_ms: float, attention_ms: float, step_ms: float = 50.0, alone_ms=None) -> dict:
    """A run file whose attnlab fp32 step does 1 GFLOP against a peak of 100 GFLOP/s (10 ms at the peak); with
    alone_ms, (matmul, attention) milliseconds of its 0.8 and 0.2 GFLOP replayed alone beside the same peak."""
    named = {"matmul": matmul_ms, "attention": attention_ms, "normalisation": 2.0, "activation": 1.0, "loss": 3.0,
             "optimiser": 4.0}
    cats = {**named, "rest": step_ms - sum(named.values())}
    return {"peak": {"fp32": {"flops": 2e9, "flops_per_s": 1e11, "seconds": [0.02]}},
            "settings": [{"name": "attnlab fp32", "peak": "fp32", "flops": 1e9, "step_seconds": [0.05]}],
            "breakdown": [{"setting": "attnlab fp32", "step_ms": step_ms, "steps": 5,
                           "categories": {c: {"ms": v, "share": v / step_ms} for c, v in cats.items()},
                           **({} if alone_ms is None else {"alone": alone(*alone_ms)})}]}


def alone(matmul_ms: float, attention_ms: float) -> dict:
    return {"repeats": 5, "peak_flops": 2e9, "peak_seconds": 0.02,
            "categories": {"matmul": {"calls": 6, "layouts": 4, "flops": 0.8e9, "seconds": matmul_ms / 1e3},
                           "attention": {"calls": 2, "layouts": 2, "flops": 0.2e9, "seconds": attention_ms / 1e3}}}


def test_the_counted_time_bounds_the_share_a_step_can_reach_at_the_peak():
    c = derive.counted_time(profiled_file(15.0, 5.0), "attnlab fp32")
    assert c["counted_ms"] == 20 and c["counted_share"] == pytest.approx(0.4)
    assert c["running_share"] == pytest.approx(0.5)  # 10 ms of work at the peak done in 20 ms
    assert c["bound"] == pytest.approx(10 / (10 + 30))  # the 30 ms that count no FLOPs stay
    assert derive.counted_time(profiled_file(15.0, 5.0), "reference fp32") is None
    assert derive.counted_time({"settings": profiled_file(1, 1)["settings"]}, "attnlab fp32") is None
    assert "alone_bound" not in c  # a run file from before the replay
    rows = derive.breakdown_rows(profiled_file(15.0, 5.0))
    assert [r["category"] for r in rows][:2] == ["matmul", "attention"] and sum(r["share"] for r in rows) == 1


def test_replayed_alone_the_counted_operators_take_their_own_time_and_leave_the_rest_of_the_timed_step():
    c = derive.counted_time(profiled_file(15.0, 5.0, alone_ms=(10.0, 4.0)), "attnlab fp32")
    assert c["alone_share"] == pytest.approx({"matmul": 0.8, "attention": 0.5})  # 80 and 50 of 100 GFLOP/s
    assert c["alone_ms"] == pytest.approx(14) and c["step_ms_timed"] == pytest.approx(50)  # the timed 0.05 s
    assert c["others_ms"] == pytest.approx(36) and c["at_peak_ms"] == pytest.approx(10)
    faster = profiled_file(15.0, 5.0, alone_ms=(8.0, 2.0))
    faster["settings"][0]["step_seconds"] = [0.02, 0.012, 0.013]
    c = derive.counted_time(faster, "attnlab fp32")
    assert c["alone_share"]["matmul"] == pytest.approx(1.0) and c["others_ms"] == pytest.approx(3)
