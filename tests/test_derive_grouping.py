"""S6's derived numbers: the runs in their order, which run is set against which, the up-training's steps."""
from __future__ import annotations

import pandas as pd

from attnlab.experiments.grouping import derive
from attnlab.results import Results, Spread

KV = {"S6-mha": 4, "S6-gqa": 2, "S6-mqa": 1, "S6-mqa-up": 1}


def results(ppl: dict) -> Results:
    """S6's runs at one seed, an up-trained one started from S6-mha at that seed."""
    files = {name: {"spec": {"d_model": 32, "context": 16, "n_blocks": 1, "n_heads": 4, "n_kv_heads": KV[name]},
                    "steps": 40 if name.endswith("-up") else 800, "val_ppl": val, "train_ppl": val,
                    "init_from": {"run": "S6-mha", "seed": 1} if name.endswith("-up") else None}
             for name, val in ppl.items()}
    return Results(root=None, runs=files, by_seed={n: {1: m} for n, m in files.items()},
                   owner=dict.fromkeys(files, "grouping"))


def test_the_runs_come_from_scratch_first_each_by_kv_heads_and_name_their_start():
    t = derive.runs(results({"S6-mqa-up": 41.2, "S6-gqa": 40.5, "S6-mha": 40.0, "S6-mqa": 41.5}))
    assert list(t["run"]) == ["S6-mha", "S6-gqa", "S6-mqa", "S6-mqa-up"]
    assert list(t["up"]) == [False, False, False, True]
    assert t["init_from"].tolist()[-1] == {1: {"run": "S6-mha", "seed": 1}} and t["kv_heads"].tolist() == [4, 2, 1, 1]
    assert t["val_ppl"].tolist() == [40.0, 40.5, 41.5, 41.2] and t["steps"].tolist() == [800, 800, 800, 40]
    assert derive.uptrain_steps(t) == [40]
    assert derive.runs(results({})).empty


def frame(rows):
    return pd.DataFrame([dict(zip(("run", "kv_heads", "heads", "up", "steps", "val_spread"), r)) for r in rows])


def test_each_run_is_set_against_multi_head_and_an_up_trained_one_against_its_shape_too():
    m, g, gu, mu = (Spread({1: ppl}) for ppl in (40.0, 40.5, 40.4, 41.2))
    t = frame([("mha", 4, 4, False, 800, m), ("gqa", 2, 4, False, 800, g), ("gqa-up", 2, 4, True, 40, gu),
               ("mqa-up", 1, 4, True, 60, mu)])
    assert derive.comparisons(t) == [("gqa", "mha", g, m), ("gqa-up", "mha", gu, m), ("mqa-up", "mha", mu, m),
                                     ("gqa-up", "gqa", gu, g)]
    assert derive.uptrain_steps(t) == [40, 60]
    diverged = t.assign(val_spread=[m, None, gu, mu])  # gqa has no perplexity: nothing is set against it
    assert [pair[:2] for pair in derive.comparisons(diverged)] == [("gqa-up", "mha"), ("mqa-up", "mha")]
    no_mha = t.iloc[1:3]  # nothing to set the others against
    assert derive.comparisons(no_mha) == [] and derive.uptrain_steps(no_mha[~no_mha["up"]]) == []


def test_a_runs_start_is_one_run_at_each_seeds_own_seed_or_each_seed_apart():
    at = {"run": "S6-mha", "seed": 1}
    assert derive.start({1: None, 2: None}) == ("fresh", None, [])
    assert derive.start({1: at, 2: {**at, "seed": 2}}) == ("same seed", "S6-mha", [])
    assert derive.start({None: "grouping/S6-mha/ckpt.pt"}) == ("one run", "S6-mha", [])
    how, run, per_seed = derive.start({1: at, 2: at})  # seed 2 started from seed 1's run: not the same seed
    assert (how, run, [(s, f.run, f.seed) for s, f in per_seed]) == ("per seed", None, [(1, "S6-mha", 1),
                                                                                      (2, "S6-mha", 1)])
    assert derive.start({1: at, 2: None})[2][1] == (2, None)
