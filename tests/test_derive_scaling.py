"""E3 trained's derive module: perplexities, the probes' first and last values over seeds and C3.5's probe step,
from run files written by hand, each with a case on the other side."""
from __future__ import annotations

import pandas as pd
import pytest

from attnlab import layout
from attnlab.experiments.scaling import derive
from attnlab.provenance import write_json
from attnlab.results import gather


def write_run(root, name: str, seed: int, first: float, last: float, step: int = 1500, wall=None, **spec) -> None:
    write_json(root / layout.run_file("scaling", name, seed), {
        "name": name, "experiment": "scaling", "spec": {"mixer": "head", **spec}, "status": "ok", "steps": step,
        "val_ppl": 50.0 + seed, "train_ppl": 40.0, "provenance": {"seed": seed, "wall_seconds": wall},
        "probes_first": {"score_std_0": first, "step": 0}, "probes_last": {"score_std_0": last, "step": step}})


@pytest.fixture()
def res(tmp_path):
    write_run(tmp_path, "E3-h1024-raw", 1, 1.0, 30.0, d_k=1024, scale=False)
    write_run(tmp_path, "E3-h1024-raw", 2, 3.0, float("nan"), d_k=1024, scale=False)  # diverged by the end
    write_run(tmp_path, "E3-h1024-div", 1, 1.0, 1.5, step=800, d_k=1024)
    return gather(tmp_path)


def test_a_probe_is_its_seeds_mean_and_a_nan_seed_is_left_out(res):
    raw = derive.probe_spreads(res)["E3-h1024-raw"]
    assert raw[("score_std", "start")].mean == 2.0  # (1 + 3) / 2
    assert raw[("score_std", "end")].by_seed == {1: 30.0}
    assert ("saturated", "start") not in raw  # not recorded: no spread


def test_the_runs_table_reads_the_spec_and_the_seeds_mean(res):
    table = derive.runs_table(res).set_index("run")
    assert table.loc["E3-h1024-raw", "d_k"] == 1024 and not table.loc["E3-h1024-raw", "divided"]
    assert table.loc["E3-h1024-div", "divided"] and table.loc["E3-h1024-raw", "val_ppl"] == 51.5
    assert table.loc["E3-h1024-div", "heads"] == 1


def test_c35_steps_are_every_step_the_pair_was_last_probed_at(res, tmp_path):
    assert derive.c35_steps(res) == [800, 1500]
    assert derive.c35_steps(gather(tmp_path / "none")) == []


def test_the_probes_long_table_keeps_the_first_head_only():
    df = pd.DataFrame({"seed": [1, 1], "step": [0, 10], "score_std_0": [1.0, 2.0], "score_std_1": [5.0, 6.0]})
    long = derive.probes_long({"E3-h32-raw": df, "E3-h32-div": pd.DataFrame()})
    assert list(long["value"]) == [1.0, 2.0] and set(long["probe"]) == {"score_std"}
    assert derive.probes_long({}).empty


def test_c35s_time_is_its_pairs_wall_time_at_every_seed(tmp_path):
    write_run(tmp_path, "E3-h1024-raw", 1, 1.0, 2.0, wall=100.0, d_k=1024, scale=False)
    write_run(tmp_path, "E3-h1024-raw", 2, 1.0, 2.0, wall=120.5, d_k=1024, scale=False)
    write_run(tmp_path, "E3-h1024-div", 1, 1.0, 2.0, wall=80.0, d_k=1024)
    write_run(tmp_path, "E3-h256-div", 1, 1.0, 2.0, wall=999.0, d_k=256)  # not the pair
    write_run(tmp_path, "E3-h1024-div", 2, 1.0, 2.0, d_k=1024)  # no wall time recorded: counts nothing
    assert derive.c35_seconds(gather(tmp_path)) == 300.5
    assert derive.c35_seconds(gather(tmp_path / "none")) == 0
