"""E7: parameter counts of spec-built models on the meta device, against the formula - and their page."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from attnlab.experiments.params import producer as params
from attnlab.nn.spec import ModelSpec
from attnlab.provenance import read_json
from attnlab.experiments.params import page
from attnlab.report.build import render
from helpers import rendered_page, site_for

REPO = Path(__file__).resolve().parents[1]
CFG = {"profile": "smoke", "seed": 1337}


@pytest.fixture(scope="module")
def e7(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    return root, params.main(CFG, root / "params" / "result.json")


def test_gpt2_small_is_exactly_the_published_size_line_by_line(e7):
    g = e7[1]["gpt2"]
    assert g["total"] == 124_439_808 == g["published_total"]
    assert g["token_embeddings"] == 38_597_376
    assert g["position_embeddings"] == 786_432
    assert g["one_block"] == 7_087_872 == g["block_formula"]
    assert g["blocks"] == 85_054_464 and g["n_blocks"] == 12
    assert g["final_norm"] == 1_536
    assert g["output_layer"] == 0  # tied: the token table is counted once
    assert g["token_embeddings"] + g["position_embeddings"] + g["blocks"] + g["final_norm"] == g["total"]


def test_an_untied_output_layer_would_be_counted():
    untied = params.on_meta(replace(params.GPT2_SMALL, tie_embeddings=False))
    assert params.count(untied) == 124_439_808 + 50_257 * 768 + 50_257


def test_meta_build_allocates_nothing_and_does_not_leak_the_device():
    model = params.on_meta(params.GPT2_SMALL)
    assert params.all_meta(model)
    assert all(p.device.type == "meta" for p in model.parameters())
    assert torch.zeros(1).device.type == "cpu"  # the meta default ended with the block


@pytest.mark.parametrize("d", [64, 96, 128, 768, 1024])
def test_one_block_is_12d2_plus_13d(d):
    r = params.block_row(d)
    assert r["counted"] == 12 * d * d + 13 * d
    assert r["attention"] == 4 * d * d + 4 * d and r["mlp"] == 8 * d * d + 5 * d and r["norms"] == 4 * d
    assert r["matches"]


def test_the_formula_check_can_fail():
    """A block with a 2x MLP does not match the 4x formula."""
    spec = ModelSpec(vocab_size=64, d_model=32, context=8, mixer="multihead", n_heads=4, mlp_ratio=2)
    assert not params.block_row(32, spec)["matches"]


def test_qkv_bias_saving_and_shares(e7):
    result = e7[1]
    assert result["qkv_bias_saving_per_block"] == 2_304 == 3 * 768
    assert result["gpt2_no_qkv_bias"]["total"] == 124_439_808 - 12 * 2_304
    assert result["gpt2"]["token_embedding_share"] == pytest.approx(0.3102, abs=1e-4)
    shares = result["shares"]
    assert [r["d"] for r in shares] == params.WIDTHS
    assert all(r["mlp_share"] == pytest.approx(2 / 3, abs=0.002) for r in shares)
    assert all(a["mlp_share"] < b["mlp_share"] < 2 / 3 for a, b in zip(shares, shares[1:]))  # biases fade
    assert all(a["embedding_share"] > b["embedding_share"] for a, b in zip(shares, shares[1:]))
    assert result["all_on_meta"]


def test_main_writes_json_with_provenance(e7):
    on_disk = read_json(e7[0] / "params" / "result.json")
    assert on_disk["provenance"]["config_hash"] and on_disk["gpt2"]["total"] == 124_439_808
    assert [r["d"] for r in on_disk["per_block"]] == params.WIDTHS



def test_page_fills_every_marker_and_claims_hold(e7):
    site = site_for(e7[0], CFG)
    text = rendered_page(site, "params", page.blocks)
    assert "chart-e7-shares" in text and "124,439,808" in text
    verdicts = {v.claim.id: v.verdict for v in site.page_verdicts("params")}
    assert verdicts == {"C7.1": "holds", "C7.2": "holds", "C7.3": "holds"}


def test_page_without_a_run_says_not_run(tmp_path):
    text = render((REPO / "src/attnlab/experiments/params/page.md").read_text(), page.blocks(site_for(tmp_path, CFG)), "params.md")
    assert "<!-- attnlab:" not in text and "not run" in text and "params/result.json" in text


def test_the_shares_charts_title_names_the_shape_the_run_built():
    """The one-block models' vocabulary and context in the title come from the run file, not from the page."""
    shares = [{"d": d, "mlp_share": 0.66, "embedding_share": 0.3, "output_share": 0.0} for d in (64, 128)]
    for vocab, context in ((1024, 128), (512, 64)):
        spec = page.shares_chart({"width_spec": {"vocab_size": vocab, "context": context}, "shares": shares})
        assert spec["title"] == f"One-block model (vocabulary {vocab}, context {context}) by width (dashed: 2/3)"
