"""E4's derived numbers (experiments/depth/derive.py) on small hand-made run files: the warmup read off a curve,
block 1 against the last block under one definition, the step-0 table over seeds, and which run a placement is
read from."""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from attnlab.experiments.depth import derive, settings


def test_warmup_is_the_first_step_at_the_peak_learning_rate():
    ramp = pd.DataFrame({"step": [1, 50, 100, 150], "lr": [0.1, 0.5, 1.0, 1.0]})
    assert derive.warmup_from_curve(ramp) == 100
    flat = pd.DataFrame({"step": [1, 50, 100], "lr": [1.0, 1.0, 1.0]})  # the peak at the first step: no warmup
    assert derive.warmup_from_curve(flat) == 0
    assert derive.warmup_from_curve(pd.DataFrame({"step": [1, 2]})) is None  # a curve without its learning rate


def test_first_and_last_block_under_one_definition():
    probe = {"grad_qkv_1": 0.05, "grad_qkv_2": 0.01, "grad_qkv_12": 0.066, "grad_block_1": 9.0, "grad_block_12": 3.0}
    got = derive.first_last(probe, "grad_qkv_")
    assert got == {"first": 0.05, "last": 0.066, "n": 12, "ratio": pytest.approx(1.32)}
    assert derive.first_last(probe)["ratio"] == pytest.approx(3.0 / 9.0)  # our definition by default: it falls
    assert derive.first_last({"grad_qkv_1": 0.05, "grad_qkv_12": float("nan")}, "grad_qkv_") is None  # one block left
    assert derive.first_last(probe, "grad_wo_") is None  # a definition the probe did not record


def test_the_step0_table_holds_every_seed_beside_the_chapters_numbers():
    seeds = pd.DataFrame([{"norm": "pre", "definition": "grad_qkv_", "run": "E4-pre", "seed": s, "first": a,
                           "last": b, "n": 12, "ratio": b / a} for s, a, b in (("1", 0.04, 0.06), ("2", 0.06, 0.06))])
    row = derive.init_table(seeds).iloc[0]
    assert row["seeds"] == 2 and row["n"] == 12
    assert row["first"].mean == pytest.approx(0.05) and row["first"].sd == pytest.approx(0.02 ** 0.5 / 10)
    assert row["ratio"].by_seed == {"1": pytest.approx(1.5), "2": pytest.approx(1.0)}
    chapter = settings.CHAPTER_GRADS["pre"]
    assert (row["chapter_first"], row["chapter_last"], row["chapter_ratio"]) == chapter
    post = derive.init_table(seeds.assign(norm="post")).iloc[0]
    assert post["chapter_ratio"] == settings.CHAPTER_GRADS["post"][2] != chapter[2]


def test_a_placement_is_read_from_its_run_without_warmup():
    def probe(scale):
        return {"probes_first": {"grad_block_1": 1.0 * scale, "grad_block_2": 2.0 * scale,
                                 "grad_qkv_1": 0.5 * scale, "grad_qkv_2": float("inf")}}
    res = SimpleNamespace(runs={"E4-pre": probe(1), "E4-pre-warm": probe(10), "E4-post": {}})
    table = pd.DataFrame({"run": ["E4-pre-warm", "E4-pre", "E4-post"], "norm": ["pre", "pre", "post"],
                          "warmup": [200, 0, 0]})
    g = derive.init_grads(res, table)
    assert set(g["run"]) == {"E4-pre"}  # the warmup run reads the same step 0; a run with no probe is left out
    assert sorted(zip(g["definition"], g["block"], g["grad_norm"])) == [
        ("grad_block_", 1, 1.0), ("grad_block_", 2, 2.0), ("grad_qkv_", 1, 0.5)]  # a non-finite norm is dropped


def test_a_curve_keeps_its_finite_losses_at_every_seed():
    post = pd.DataFrame({"step": [1, 2, 3, 1, 2], "train_loss": [5.0, float("nan"), float("inf"), 4.0, 3.5],
                         "lr": 0.1, "seed": [1, 1, 1, 2, 2]})
    c = derive.curves({"E4-post": post, "E4-pre": pd.DataFrame(), "E4-old": post.drop(columns="train_loss")})
    assert list(c.columns) == ["seed", "step", "train_loss", "run"] and set(c["run"]) == {"E4-post"}
    assert list(zip(c["seed"], c["step"])) == [(1, 1), (2, 1), (2, 2)]  # seed 1 diverged after its first step
    assert derive.curves({"E4-pre": pd.DataFrame()}).empty
