"""E5's derive module: each run's perplexity at every window and its rise past the trained one, from run files
written by hand, each with a case on the other side."""
from __future__ import annotations

import pandas as pd
import pytest

from attnlab import layout
from attnlab.experiments.position import derive
from attnlab.provenance import write_json
from attnlab.results import gather


def write_run(root, enc: str, seed: int, at: dict, context: int = 64) -> None:
    name = f"E5-{enc}"
    write_json(root / layout.run_file("position", name, seed), {
        "name": name, "experiment": "position", "spec": {"context": context, "position": enc}, "status": "ok",
        "val_ppl_at": at, "provenance": {"seed": seed}})


@pytest.fixture()
def res(tmp_path):
    write_run(tmp_path, "alibi", 1, {"64": 45.0, "128": 44.0, "256": 43.0})
    write_run(tmp_path, "learned", 1, {"64": 40.0, "128": 60.0, "256": None})
    write_run(tmp_path, "learned", 2, {"64": 44.0, "128": 64.0, "256": None})
    return gather(tmp_path)


def test_windows_are_in_increasing_order_not_as_strings(res):
    assert derive.windows(res) == ["64", "128", "256"]


def test_a_rise_is_the_longest_windows_mean_over_the_trained_ones(res):
    table = derive.runs_table(res).set_index("run")
    assert list(table.index) == ["E5-learned", "E5-alibi"]  # in the page's order of encodings
    learned = table.loc["E5-learned"]
    assert learned["ppl_64"] == 42.0 and learned["ppl_128"] == 62.0 and pd.isna(learned["ppl_256"])
    assert learned["longest"] == "128" and learned["rise"] == pytest.approx(62 / 42)  # it climbs
    assert table.loc["E5-alibi", "rise"] == pytest.approx(43 / 45)  # it falls


def test_a_run_read_only_at_its_trained_window_has_no_rise(tmp_path):
    write_run(tmp_path, "rope", 1, {"64": 50.0, "128": None})
    assert derive.runs_table(gather(tmp_path)).iloc[0]["rise"] is None


def test_the_long_table_has_a_point_per_window_with_a_perplexity(res):
    long = derive.length_long(res, derive.runs_table(res))
    learned = long[long["run"] == "E5-learned"]
    assert list(learned["window"]) == [64.0, 128.0] and list(learned["ppl"]) == [42.0, 62.0]
    assert list(learned["trained"]) == [True, False] and len(long) == 5


def test_the_trained_window_is_the_one_most_runs_trained_on():
    assert derive.trained_window([64.0, 64.0, 128.0]) == 64
    assert derive.trained_window([128.0]) == 128
    assert derive.trained_window([]) is None


def test_a_rise_is_read_from_the_runs_trained_at_that_length_that_have_both_windows(res):
    pairs = derive.rise_spreads(res, derive.runs_table(res), "64", "128")
    assert set(pairs) == {"learned", "alibi"}
    at_long, at_trained = pairs["learned"]
    assert at_long.by_seed == {1: 60.0, 2: 64.0} and at_trained.by_seed == {1: 40.0, 2: 44.0}
    assert set(derive.rise_spreads(res, derive.runs_table(res), "64", "256")) == {"alibi"}  # learned has no 256
    assert derive.rise_spreads(res, derive.runs_table(res), "128", "256") == {}  # none trained at 128
