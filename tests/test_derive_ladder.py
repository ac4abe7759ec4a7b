"""The ladder's derive module: the numbers its page shows, from run files written by hand (every expected value
worked out in the test), each with a case on the other side."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from attnlab import layout
from attnlab.claims.outcome import Outcome
from attnlab.experiments.ladder import derive
from attnlab.provenance import write_json
from attnlab.results import Spread, gather


def write_rung(root, row: str, seed: int, val: float, **extra) -> None:
    write_json(root / layout.run_file("ladder", row, seed), {
        "name": row, "experiment": "ladder", "spec": {"mixer": "multihead", "position": "learned"},
        "status": "ok", "val_ppl": val, "train_ppl": val - 1, "n_params": 1000, "provenance": {"seed": seed},
        **extra})


def test_a_rung_is_the_mean_of_its_seeds_and_a_diverged_or_missing_one_has_none(tmp_path):
    write_rung(tmp_path, "L1", 1, 10.0)
    write_rung(tmp_path, "L1", 2, 14.0)
    write_rung(tmp_path, "L2", 1, 9.0)
    write_rung(tmp_path, "L2", 2, float("nan"), status="diverged", diverged_at_step=7)
    table = derive.ladder_values(gather(tmp_path), ["L1", "L2", "L3"], {"ladder": {"L1": {"val_ppl": 11.5}}})
    l1, l2, l3 = (table.iloc[i] for i in range(3))
    assert l1["val_ppl"] == 12.0 and l1["train_ppl"] == 11.0 and l1["val_spread"].by_seed == {1: 10.0, 2: 14.0}
    assert l1["chapter_val_ppl"] == 11.5 and l1["n_heads"] == 4 and l1["status"] == "ok"
    assert l2["status"] == "diverged" and l2["val_spread"] is None and pd.isna(l2["val_ppl"])
    assert l3["status"] == Outcome.NOT_RUN and pd.isna(l3["n_params"])


def test_numbers_only_gives_the_seeds_count_sd_and_each_seed():
    table = pd.DataFrame({"row": ["L1", "L2", "L3"], "val_ppl": [12.0, 9.0, None], "train_ppl": [11.0, 8.0, None],
                          "val_spread": [Spread({1: 10.0, 2: 14.0}), Spread({1: 9.0}), None],
                          "train_spread": [Spread({1: 9.0, 2: 13.0}), Spread({1: 8.0}), None]})
    csv = derive.numbers_only(table)
    assert list(csv["n_seeds"][:2]) == [2, 1] and pd.isna(csv["n_seeds"][2])
    assert csv["val_ppl_sd"][0] == pytest.approx(math.sqrt(8))  # (10 - 12)² + (14 - 12)² over n − 1 = 1
    assert pd.isna(csv["val_ppl_sd"][1])  # one seed: no sd
    assert list(csv["val_ppl_seed1"][:2]) == [10.0, 9.0] and pd.isna(csv["val_ppl_seed2"][1])
    assert "val_spread" in table  # the table it was given is left as it was


def test_curves_are_thinned_to_about_max_points_and_keep_every_val_point():
    curve = pd.DataFrame({"step": range(1, 1001), "train_loss": [5.0] * 1000,
                          "val_loss": [4.0 if s % 100 == 0 else None for s in range(1, 1001)], "seed": 1})
    long = derive.curves_long({"L1": curve, "L2": pd.DataFrame()}, max_points=250)
    assert (long["split"] == "train").sum() == 250  # every 4th of 1000
    assert (long["split"] == "val").sum() == 10 and set(long["row"]) == {"L1"}
    assert len(derive.curves_long({"L1": curve}, max_points=2000)[lambda d: d["split"] == "train"]) == 1000
    assert list(derive.curves_long({}).columns) == ["row", "seed", "step", "split", "loss"]


def evals(rows) -> pd.DataFrame:
    return pd.DataFrame([{"row": r, "seed": s, "step": step, "curve_loss": c, "steps": 800, "final_loss": f,
                          "context": 128, "final_tokens": 4096, "windows": w} for r, s, step, c, f, w in rows])


def test_only_the_last_dots_at_the_final_weights_are_set_against_the_final_loss():
    e = evals([("L1", 1, 800, 4.0, 4.2, 32), ("L1", 2, 700, 4.1, 4.3, 32), ("L9", 1, 800, 3.0, None, 32)])
    assert list(derive.at_final_weights(e)["seed"]) == [1]


def test_seed_spans_are_largest_less_smallest_for_rungs_of_more_than_one_seed():
    e = evals([("L1", 1, 800, 4.0, 4.2, 32), ("L1", 2, 800, 3.9, 4.25, 32), ("L9", 1, 800, 3.0, 3.1, 32)])
    spans = derive.seed_spans(e)
    assert list(spans.index) == ["L1"]
    assert spans.at["L1", "curve"] == pytest.approx(0.1) and spans.at["L1", "final"] == pytest.approx(0.05)


def test_the_dots_score_part_of_the_split_when_their_windows_fall_short_of_it():
    assert not derive.scores_part(evals([("L1", 1, 800, 4.0, 4.2, 32)]))  # 32 × 128 = 4096: the whole split
    assert derive.scores_part(evals([("L1", 1, 800, 4.0, 4.2, 16)]))
    assert derive.scores_part(evals([("L1", 1, 800, 4.0, 4.2, None)]))  # unknown: not said to be the whole


def test_a_gap_in_nats_is_the_perplexitys_distance_in_per_cent_either_way():
    assert derive.pct(math.log(2)) == pytest.approx(50.0)  # the dot's perplexity half the final one
    assert derive.pct(-math.log(2)) == pytest.approx(100.0)  # twice it
    assert derive.pct(0.0) == 0.0


def test_a_variant_is_read_only_where_it_and_the_rung_it_is_against_both_ran():
    declared = {"L9": {}, "L8": {}, "L8-x": {"like": "L8"}, "L7-x": {"like": "L7"}, "mine": {}, "later": {}}
    ran = {"L9": Spread({1: 40.0}), "L8": Spread({1: 41.0}), "L8-x": Spread({1: 39.0}),
           "L7-x": Spread({1: 42.0}), "mine": Spread({1: 43.0})}
    assert derive.read_against(declared, ran) == [("L8-x", "L8"), ("L7-x", "L9"), ("mine", "L9")]  # later: not run
    assert derive.read_against(declared, {**ran, "L9": None}) == [("L8-x", "L8")]
