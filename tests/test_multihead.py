"""S4: h heads of d/h - equal matmul FLOPs, measured forward times - and the page built from them."""
from __future__ import annotations

from pathlib import Path

import pytest

import torch

from attnlab.experiments.multihead import producer as multihead
from attnlab.config import schema
from attnlab.errors import AttnlabError
from attnlab.provenance import read_json
from attnlab.experiments.multihead import page
from attnlab.report.build import render
from attnlab.stats import bootstrap_se
from helpers import rendered_page, site_for

REPO = Path(__file__).resolve().parents[1]
TINY = {"d_model": 32, "context": 16, "batch_size": 2, "heads": [1, 2, 4], "repeats": 3}
CFG = {"profile": "smoke", "seed": 1337, "device": "cpu", "multihead": TINY}


@pytest.fixture(scope="module")
def s4(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    return root, multihead.main(CFG, root / "multihead" / "result.json")


def test_flops_do_not_depend_on_the_number_of_heads():
    d, T, B = 256, 256, 8
    counts = [multihead.flops(d, T, B, h) for h in (1, 2, 4, 8, 16)]
    assert all(c == counts[0] for c in counts)
    assert counts[0]["flops"] == 8 * B * T * d * d + 4 * B * T * T * d


def test_run_rows_and_settings(s4):
    result = s4[1]
    assert [r["heads"] for r in result["rows"]] == [1, 2, 4]
    assert [r["head_dim"] for r in result["rows"]] == [32, 16, 8]
    assert result["flops_equal"] and result["rows"][0]["ratio_to_one_head"] == 1
    defaults = schema()["properties"]["multihead"]["properties"]
    assert result["warmup"] == defaults["warmup"]["default"]  # keys the config leaves out take the schema's
    for r in result["rows"]:
        assert 0 < r["ms_min"] <= r["ms_median"] <= r["ms_max"] and r["ms_core_median"] > 0
        assert r["softmax_elements"] == 2 * r["heads"] * 16 * 16
    assert result["time_ratio_max_min"] >= 1 and result["time_ratio_se"] >= 0
    assert result["nvml"] is None  # CPU: no NVML sampler


def test_timing_interleaves_every_head_count_each_round():
    mods = multihead.layers(16, [1, 4], "cpu", seed=0)
    layer_s, core_s, nvml = multihead.time_heads(mods, torch.randn(1, 4, 16), repeats=4, warmup=1, inner=2)
    assert {h: len(v) for h, v in layer_s.items()} == {1: 4, 4: 4} == {h: len(v) for h, v in core_s.items()}
    assert nvml is None  # off a GPU


def test_ratio_max_min_reads_the_medians_and_its_error_grows_with_the_rounds_spread():
    steady = {1: [1.0, 1.0, 1.0, 1.0], 2: [2.0, 2.0, 2.0, 2.0]}
    assert multihead.ratio_max_min(steady) == 2.0
    assert bootstrap_se(steady, multihead.ratio_max_min) == 0.0
    jittery = {1: [1.0, 1.5, 0.8, 1.2, 0.9, 1.4], 2: [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]}
    assert bootstrap_se(jittery, multihead.ratio_max_min) > 0.05


def test_heads_must_divide_the_width():
    with pytest.raises(AttnlabError, match="do not divide"):
        multihead.layers(30, [4], "cpu", seed=0)


def test_main_writes_json_with_provenance(s4):
    on_disk = read_json(s4[0] / "multihead" / "result.json")
    assert on_disk["provenance"]["config_hash"] and on_disk["device"].startswith("cpu")
    assert on_disk["d_model"] == 32 and len(on_disk["rows"]) == 3



def test_page_fills_every_marker(s4):
    site = site_for(s4[0], CFG)
    text = rendered_page(site, "multihead", page.blocks)
    assert "chart-s4-time" in text
    (verdict,) = site.page_verdicts("multihead")
    assert verdict.claim.id == "S4" and verdict.verdict in ("reproduced", "not reproduced", "inconclusive")
    assert verdict.reproduced["flops_equal"] is True


def test_page_without_a_run_says_not_run(tmp_path):
    text = render((REPO / "src/attnlab/experiments/multihead/page.md").read_text(), page.blocks(site_for(tmp_path, CFG)), "multihead.md")
    assert "<!-- attnlab:" not in text and "not run" in text and "multihead/result.json" in text
