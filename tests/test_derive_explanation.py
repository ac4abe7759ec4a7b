"""S9's derive module: the numbers its page shows, from small hand-made results."""
from __future__ import annotations

import pytest

from attnlab.experiments.explanation import derive


def result(**adversarial) -> dict:
    return {"n_examples": 4, "adversarial": {"n_feasible": 4, "median_max_jsd": 0.3, **adversarial},
            "seeds": {"median_jsd": 0.1}, "uniform": {"jsd_learned_uniform": [0.2, None]},
            "accuracy": {"learned": 0.9, "row": 0.6}}


def test_the_seed_ratio_is_the_adversaries_median_over_a_retrainings():
    ratio, se = derive.seed_ratio(result())
    assert ratio == pytest.approx(3.0) and se is None  # no per-sentence divergences: no bootstrap
    r = result(max_jsd=[0.2, 0.3, 0.4]) | {"seeds": {"median_jsd": 0.1, "jsd": [0.05, 0.1, 0.15]}}
    assert derive.seed_ratio(r)[1] > 0
    assert derive.seed_ratio(result() | {"seeds": {"median_jsd": 0.0}}) == (None, None)
    assert derive.seed_ratio(result() | {"seeds": None}) == (None, None)


def test_the_adversaries_median_over_all_sentences_falls_back_only_where_every_sentence_moved():
    assert derive.adversary_median(result(median_jsd_under_bound=0.2, se_median_jsd_under_bound=0.01)) == (0.2, 0.01)
    assert derive.adversary_median(result()) == (0.3, None)  # an older file: every sentence moved
    assert derive.adversary_median(result(n_feasible=3)) == (None, None)


def test_the_divergences_uniform_cost_and_second_seed():
    r = result(max_jsd=[0.4, None])
    rows = derive.divergences(r)
    assert rows.values.tolist() == [[0, "adversary", 0.4], [0, "uniform", 0.2]]
    assert derive.uniform_cost(r) == pytest.approx(0.3) and derive.uniform_cost({"accuracy": None}) == 0
    assert derive.second_seed({"seed": 1337}) == 1338


def test_the_studied_model_is_e8s_with_its_overrides():
    cfg = {"explanation": {"model": "two_blocks"},
           "winograd": {"model": {"mixer": "multihead", "d_model": 16, "n_heads": 2, "n_blocks": 1},
                        "models": {"two_blocks": {"n_blocks": 2}}}}
    name, spec = derive.studied(cfg)
    assert name == "two_blocks" and (spec.n_blocks, spec.d_model) == (2, 16)
