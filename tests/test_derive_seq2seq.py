"""S1's derive module: the numbers its page shows, from small hand-made results."""
from __future__ import annotations

import math

import pytest

from attnlab.experiments.seq2seq import derive


def reverse_map(weights, predicted) -> dict:
    return {"source": [0, 1, 2], "target": [2, 1, 0], "predicted": predicted, "weights": weights,
            "source_length": 3}


def test_alignment_reads_the_weight_on_and_near_the_reversed_position():
    m = reverse_map([[0.1, 0.2, 0.7], [0.2, 0.6, 0.2], [0.5, 0.4, 0.1]], [2, 1, 1])
    a = derive.alignment(m)
    assert a["on"] == pytest.approx((0.7 + 0.6 + 0.5) / 3) and a["near"] == pytest.approx((0.9 + 1.0 + 0.9) / 3)
    assert (a["offset"], a["steps"], a["right"], a["S"]) == (0, 3, 2, 3)
    early = reverse_map([[0.1, 0.7, 0.2], [0.6, 0.2, 0.2], [0.5, 0.4, 0.1]], [2, 1, 0])  # two peaks one left
    a = derive.alignment(early)
    assert (a["offset"], a["steps"], a["right"]) == (-1, 2, 3) and a["on"] == pytest.approx((0.2 + 0.2 + 0.5) / 3)


def test_shift_after_mistake_finds_a_skip_and_says_nothing_without_one():
    target = list(range(8))
    assert derive.shift_after_mistake({"target": target, "predicted": target}) is None
    skipped = target[:3] + target[4:] + [0]  # target[3] skipped: steps 4.. are one ahead
    assert derive.shift_after_mistake({"target": target, "predicted": skipped}) == (3, 4, 1, 3)
    noise = target[:3] + [7, 7, 7, 7, 7]
    assert derive.shift_after_mistake({"target": target, "predicted": noise}) is None


def test_a_contrasts_degrees_of_freedom_come_from_where_its_error_came_from():
    assert derive.contrast({"mean": 0.2, "se": 0.05, "se_from": "seeds", "seeds": 3}, -1) == (-0.2, 0.05, 2)
    assert derive.contrast({"mean": 0.2, "se": 0.05, "se_from": "held-out rows", "seeds": 3}) == (0.2, 0.05, math.inf)
    assert derive.contrast({"mean": 0.2, "se": None, "se_from": "seeds", "seeds": 1})[2] == math.inf


def test_by_length_puts_each_variants_mean_and_sd_in_its_column_sorted_by_task_and_length():
    rows = [{"task": t, "source_length": S, "variant": v, "token_accuracy": a, "token_accuracy_sd": sd}
            for t, S, v, a, sd in [("reverse", 8, "none", 0.5, 0.1), ("copy", 16, "dot", 0.9, None),
                                   ("copy", 8, "none", 0.7, 0.0)]]
    table = derive.by_length({"summary": rows}, "token_accuracy")
    assert list(zip(table.task, table.length)) == [("copy", 8), ("copy", 16), ("reverse", 8)]
    assert table.loc[0, "none"] == (0.7, 0.0) and table.loc[1, "dot"] == (0.9, None)
    assert table["dot"].isna().tolist() == [True, False, True]  # no dot run at copy 8 or reverse 8


def test_geometric_mean_and_which_mean_a_summary_is():
    assert derive.geometric_mean([1.0, 4.0]) == pytest.approx(2.0) and derive.geometric_mean([0.0, 4.0]) == 0.0
    assert derive.summary_over_seeds(2.0, [1.0, 4.0]) == "geometric"
    assert derive.summary_over_seeds(2.5, [1.0, 4.0]) == "arithmetic"
    assert derive.times_T({"grad_short": 1.0, "grad_long": 0.01, "T_short": 2, "T_long": 256}) == pytest.approx(1.28)
    assert math.isnan(derive.times_T({"grad_short": 0.0, "grad_long": 0.0, "T_short": 2, "T_long": 4}))
    assert derive.decades_as_one_over_T({"T_short": 2, "T_long": 200}) == pytest.approx(2.0)


def test_wiring_rows_keep_a_measured_difference_and_drop_a_diverged_one():
    summary = [{"task": "copy", "source_length": 8, "variant": v, "token_accuracy": a}
               for v, a in (("bahdanau", 0.9), ("dot", 0.8), ("concat", 0.7))]
    diverged = {"status": "diverged", "run": "copy-S8-dot-seed1", "diverged_at_step": 3}
    wiring = [{"task": "copy", "source_length": 8, "luong": "dot", "difference": diverged},
              {"task": "copy", "source_length": 8, "luong": "concat", "difference": {"mean": 0.2}}]
    rows = derive.wiring_rows({"summary": summary, "contrasts": {"wiring": wiring}})
    assert [(w["luong_acc"], w["difference"]) for w in rows] == [(0.8, None), (0.7, {"mean": 0.2})]
    assert {w["bahdanau_acc"] for w in rows} == {0.9}


def test_seed_values_skip_a_diverged_runs_missing_measure_and_decoder_rows_sit_on_the_predictions():
    runs = [{"task": "copy", "source_length": 4, "variant": "none", "seed": 1, "token_accuracy": 0.5,
             "sequence_accuracy": None}]
    values = derive.seed_values({"runs": runs}, ["token_accuracy", "sequence_accuracy"])
    assert values.measure.tolist() == ["token_accuracy"] and values.value.tolist() == [0.5]
    rows = derive.decoder_rows({"source_length": 2, "source": [0, 1], "predicted": [1, 0],
                                "weights": [[0.12344, 0.87656], [1.0, 0.0]]})
    assert rows == [None, None, None, [0.1234, 0.8766, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0]]
