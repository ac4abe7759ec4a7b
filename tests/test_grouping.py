"""S6.3: up-trained GQA and MQA are judged against the multi-head model they came from (as Ainslie et al.), and,
in a second labelled comparison, against the same shape trained from scratch."""
from __future__ import annotations

import pytest

from attnlab.claims.evaluate import evaluate
from attnlab.claims.registry import load_registry
from attnlab.provenance import write_json
from attnlab.results import gather
from helpers import eval_section

HEADS = {"S6-mha": 4, "S6-gqa": 2, "S6-mqa": 1, "S6-gqa-up": 2, "S6-mqa-up": 1}


def write_grouping(root, ppl: dict):
    for name, val in ppl.items():
        write_json(root / "grouping" / name / "metrics.json", {
            "name": name, "experiment": "grouping",
            "spec": {"d_model": 128, "context": 64, "n_blocks": 1, "n_heads": 4, "kv_heads": HEADS[name]},
            "status": "ok", "diverged_at_step": None, "steps": 40 if name.endswith("-up") else 800,
            "init_from": "S6-mha" if name.endswith("-up") else None,
            "val_ppl": val, "train_ppl": val * 0.9, "eval": eval_section(name, val, val * 0.9),
            "probes_first": None, "probes_last": None,
            "provenance": {"commit": "abc123def456", "config_hash": "0123456789abcdef", "profile": "quick",
                           "device": "cpu", "clocks": None, "torch": "2.4.0", "python": "3.11.7",
                           "date": "2025-01-01T00:00:00+00:00", "wall_seconds": 2.0, "seed": 1337, "host": "t"}})
    return root


def s63(root):
    return evaluate(load_registry().by_id("S6.3"), gather(root))


@pytest.mark.parametrize("ppl, verdict, failing", [
    ({"S6-mha": 40.0, "S6-gqa": 40.5, "S6-mqa": 41.5, "S6-gqa-up": 40.4, "S6-mqa-up": 41.2}, "reproduced", []),
    # as good as MQA from scratch, but 8 % worse than the MHA checkpoint: the paper's comparison fails
    ({"S6-mha": 40.0, "S6-gqa": 40.5, "S6-mqa": 43.2, "S6-gqa-up": 40.4, "S6-mqa-up": 43.2}, "not reproduced",
     ["mqa_up_over_mha"]),
])
def test_s63_reads_the_mha_checkpoint_first(tmp_path, ppl, verdict, failing):
    v = s63(write_grouping(tmp_path, ppl))
    assert v.verdict == verdict, v.note
    assert v.reproduced["mqa_up_over_mha"] == pytest.approx(ppl["S6-mqa-up"] / ppl["S6-mha"])
    assert v.reproduced["mqa_up_over_scratch"] == pytest.approx(ppl["S6-mqa-up"] / ppl["S6-mqa"])
    assert [p for p in v.reproduced if "✗ " + p in v.note] == failing
    assert all(v.se[p] > 0 for p in v.reproduced)  # every ratio carries the evaluation's sampling error


def test_starts_from_names_each_seeds_own_checkpoint_or_lists_them():
    """The runs table's "starts from": one seed's checkpoint is never shown as every seed's."""
    from attnlab.experiments.grouping.page import start_of

    path = "grouping/S6-mha/seed{}/ckpt.pt".format  # as versions published before {run, seed} recorded it
    for at in (path, lambda seed: {"run": "S6-mha", "seed": seed}):
        assert start_of({1337: None, 1338: None}) == "fresh"
        assert start_of({1337: at(1337), 1338: at(1338)}) == "S6-mha, at the same seed"
        assert start_of({1337: at(1337)}) == "S6-mha (seed 1337)"
        crossed = start_of({1337: at(1337), 1338: at(1337)})
        assert crossed == "seed 1337: S6-mha at seed 1337; seed 1338: S6-mha at seed 1337"
        assert start_of({1337: at(1337), 1338: None}) == "seed 1337: S6-mha at seed 1337; seed 1338: fresh"
    assert start_of({None: "grouping/S6-mha/ckpt.pt"}) == start_of({None: "S6-mha"}) == "S6-mha"
