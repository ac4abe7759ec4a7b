"""E8's derive module: the numbers its page shows, from small hand-made results."""
from __future__ import annotations

import pandas as pd
import pytest

from attnlab.experiments.winograd import derive

DIVERGED = {"status": "diverged", "run": "closed-two_blocks", "diverged_at_step": 5}


def by_seed(*models) -> dict:
    return {str(k): {"versions": {"closed": {"models": {"two_blocks": m}}}} for k, m in enumerate(models, 1)}


def test_chance_inputs_are_the_accuracies_of_the_seeds_that_did_not_diverge():
    r = {"by_seed": by_seed({"accuracy": 0.6, "accuracy_se": 0.1}, DIVERGED, {"accuracy": 0.8, "accuracy_se": 0.2})}
    values, sampling = derive.chance_inputs(r, "closed", "two_blocks")
    assert values == [0.6, 0.8] and sampling == pytest.approx(0.15)
    r = {"by_seed": by_seed({"accuracy": 0.6}, {"accuracy": 0.8, "accuracy_se": 0.2})}
    assert derive.chance_inputs(r, "closed", "two_blocks") == ([0.6, 0.8], None)  # one seed states no error
    assert derive.chance_inputs({"by_seed": by_seed(DIVERGED)}, "closed", "two_blocks") is None


def test_accuracy_spreads_leave_out_a_model_diverged_at_every_seed():
    r = {"versions": {"closed": {"models": {"two_blocks": {}}}},
         "by_seed": by_seed({"accuracy": 0.5}, {"accuracy": 0.7})}
    rows = derive.accuracy_spreads(r)
    assert rows.accuracy.iloc[0].by_seed == {1: 0.5, 2: 0.7} and rows.accuracy.iloc[0].mean == pytest.approx(0.6)
    assert derive.accuracy_spreads({**r, "by_seed": by_seed(DIVERGED, DIVERGED)}).empty


def test_heaviest_takes_the_first_of_equal_weights_and_the_ends_are_0_and_1():
    assert derive.heaviest([0.2, 0.5, 0.3]) == 1 and derive.heaviest([0.4, 0.3, 0.3]) == 0
    assert derive.heaviest([0.25, 0.5, 0.5]) == 1
    rows = pd.DataFrame({"accuracy": [0.0, 0.5, 1.0, 1.0], "n": [10, 10, None, 20]})
    assert derive.at_the_ends(rows).index.tolist() == [0, 3]


def test_the_maps_weights_and_the_accuracies_name_their_sentence_version_and_model():
    m = {"sentences": {"crosser": {"adjective": "tired", "words": ["a", "b"], "blocks": [[1.0, 0.0], [0.4, 0.6]]}}}
    rows = derive.sentence_weights(m)
    assert rows.block.tolist() == [1, 1, 2, 2] and rows.weight.tolist() == [1.0, 0.0, 0.4, 0.6]
    assert set(rows.sentence) == {"tired"} and rows.word.tolist() == ["a", "b", "a", "b"]
    r = {"versions": {"closed": {"models": {"one_block": {"accuracy": 0.9}, "two_blocks": DIVERGED}}}}
    assert derive.accuracies(r).to_dict("records") == [{"version": "closed", "model": "one_block", "accuracy": 0.9}]
    assert derive.diverged_models(r) == [DIVERGED]
    assert list(derive.accuracies({"versions": {}}).columns) == ["version", "model"]


def test_the_two_se_band_is_clipped_to_0_and_1():
    band = derive.two_se_band(pd.DataFrame({"accuracy": [0.5, 0.95, 0.05], "accuracy_se": [0.1, 0.05, 0.05]}))
    assert band["low"].tolist() == pytest.approx([0.3, 0.85, 0.0])
    assert band["high"].tolist() == pytest.approx([0.7, 1.0, 0.15])
