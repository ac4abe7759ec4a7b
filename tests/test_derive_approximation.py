"""S8's derived numbers (experiments/approximation/derive.py and approximate_training/derive.py) on hand-made run
files: the errors pooled over seeds, a diverged seed left out, and the trained runs in the settings' order."""
from __future__ import annotations

import pytest

from attnlab.experiments.approximate_training import derive as trained
from attnlab.experiments.approximation import derive
from attnlab.results import Spread


def entry(window: float, favor: float, ratio: float, score_std: float) -> dict:
    """One seed's measurement: a window of 8 and 8 features, on the trained layer and on Gaussian inputs."""
    def errors(w, f):
        return {"window": [{"window": 8, "relative_error": w, "se": 0.01}],
                "favor": [{"features": 8, "relative_error": f, "se": 0.02}],
                "attention": {"score_std": score_std, "entropy": 1.0}}
    return {"trained": errors(window, favor), "gaussian": errors(window / 2, favor),
            "trained_over_gaussian": {"window": [{"ratio": ratio, "se": 0.1}], "favor": [{"ratio": 1.0, "se": 0.1}]}}


def test_one_seed_keeps_its_error_over_the_batches_and_two_pool_over_the_seeds():
    one = derive.table([entry(0.4, 1.2, 2.0, 3.0)]).set_index("method")
    assert (one.loc["window", "size"], one.loc["favor", "size"]) == (8, 8)
    assert (one.loc["window", "trained"], one.loc["window", "trained_se"]) == (0.4, 0.01)
    assert one.loc["window", "gaussian"] == 0.2 and one.loc["window", "ratio_se"] == 0.1
    two = derive.table([entry(0.4, 1.2, 2.0, 3.0), entry(0.6, 1.2, 4.0, 5.0)]).set_index("method")
    assert two.loc["window", "trained"] == pytest.approx(0.5)
    assert two.loc["window", "trained_se"] == pytest.approx(0.1)  # sd 0.1·√2 over √2 seeds, not the batches' 0.01
    assert (two.loc["window", "ratio"], two.loc["window", "ratio_se"]) == (pytest.approx(3.0), pytest.approx(1.0))
    assert two.loc["favor", "trained_se"] == 0.0  # the same error at both seeds: no spread between them
    assert derive.attention([entry(0.4, 1.2, 2.0, 3.0), entry(0.6, 1.2, 4.0, 5.0)], "score_std") == \
        {"trained": 4.0, "gaussian": 4.0}


def test_a_diverged_seed_is_left_out_of_the_measured_ones():
    lost = {"run": "L9", "status": "diverged", "diverged_at_step": 12}
    ok, diverged = derive.seeds_of({"by_seed": {"1": {"L9": entry(0.4, 1.2, 2.0, 3.0)}, "2": {"L9": lost}}})
    assert list(ok) == ["1"] and diverged == [lost]
    ok, diverged = derive.seeds_of({"by_seed": {"1": {"L9": entry(0.4, 1.2, 2.0, 3.0)}}})
    assert list(ok) == ["1"] and diverged == []


class Runs:
    """The few Results methods runs_table reads, over run -> validation perplexity by seed (None: no finite one)."""

    def __init__(self, val: dict):
        self.val = val

    def experiment(self, name):
        return {r: {} for r in self.val if r != trained.FULL}

    def spread(self, run, key):
        return Spread(self.val[run]) if self.val.get(run) and key == "val_ppl" else None

    def spec(self, run):
        return f"spec of {run}"

    def status(self, run):
        return "ok"


def test_the_trained_runs_follow_full_attention_in_the_settings_order():
    t = trained.runs_table(Runs({"S8-w32": {1: 60.0}, "S8-a-new-one": {1: 70.0}, "S8-w16": {1: 62.0, 2: 64.0},
                                 trained.FULL: {1: 50.0}, "S8-favor32": None}))
    assert list(t["run"]) == [trained.FULL, "S8-w16", "S8-w32", "S8-a-new-one"]  # no perplexity: left out
    assert list(t["val_ppl"]) == [50.0, 63.0, 60.0, 70.0] and t["train_spread"].isna().all()
    assert trained.pairs(set(t["run"])) == [("S8-w16", "S8-w32")]
    assert trained.pairs({"S8-w16"}) == []
