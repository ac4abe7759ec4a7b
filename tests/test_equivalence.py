"""E9: the project's attention equals PyTorch's, masks hold in low precision, and the page renders."""
import json
import re

import pytest
import torch

from attnlab.claims.evaluate import evaluate_all
from attnlab.claims.registry import load_registry
from attnlab.config import load
from attnlab.errors import AttnlabError
from attnlab.experiments.equivalence import producer as eq
from attnlab.nn.attention import attention
from attnlab.nn.model import SelfAttention
from attnlab.experiments.equivalence.page import blocks
from attnlab.report.build import render
from attnlab.results import gather
from helpers import REPO, site_for

TOL = 1e-5  # float32, outputs of order 0.1-1 (see src/attnlab/experiments/equivalence/claims.yaml)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """One full run through main(): its result, the JSON it wrote, and the results folder."""
    root = tmp_path_factory.mktemp("results")
    cfg = load(REPO / "config" / "smoke.yaml")
    result = eq.main(cfg, root / "equivalence" / "result.json")
    return result, json.loads((root / "equivalence" / "result.json").read_text()), root, cfg


@pytest.fixture(scope="module")
def layer():
    attn = eq.make_attention(128, 4, seed=0)
    return attn, eq.to_mha(attn), eq.cases(eq.SETTINGS, seed=0)


@pytest.mark.parametrize("name", ["causal self-attention", "unmasked self-attention", "cross-attention",
                                  "key padding (self", "key padding + causal", "causal cross-attention"])
def test_project_equals_multihead_attention_and_sdpa(layer, name):
    attn, mha, cases = layer
    case = next(c for c in cases if c["name"].startswith(name))
    ours, theirs, sdpa = eq.run_case(attn, mha, case)
    assert ours.shape == theirs.shape == sdpa.shape
    assert ours.abs().mean() > 0.01  # a real output, not near-zeros that would agree trivially
    assert (ours - theirs).abs().max() <= TOL
    assert (ours - sdpa).abs().max() <= TOL


def test_cross_attention_gives_one_output_per_query(layer):
    attn, _, cases = layer
    case = next(c for c in cases if c["name"].startswith("cross-attention"))
    out = attn(case["x"], context=case["context"], causal=False)
    assert case["x"].shape[1] == 7 and case["context"].shape[1] == 11
    assert out.shape == (3, 7, 128)


def test_a_wrong_weight_mapping_would_be_caught(layer):
    """The comparison can fail: swap W_q and W_k in PyTorch's packed projection and the outputs part."""
    attn, _, cases = layer
    mha = eq.to_mha(attn)
    with torch.no_grad():
        w = mha.in_proj_weight
        w[:128], w[128:256] = w[128:256].clone(), w[:128].clone()
    ours, theirs, _ = eq.run_case(attn, mha, cases[1])
    assert (ours - theirs).abs().max() > 1e-3


def test_is_causal_aligns_differently_when_lengths_differ(layer):
    attn, _, cases = layer
    cross = next(c for c in cases if c["name"].startswith("causal cross"))
    assert eq.causal_alignment(attn, cross)["project_vs_sdpa_is_causal_max_abs_diff"] > 1e-2


def test_every_case_in_the_json_agrees_with_pytorch(written):
    result, _, _, _ = written
    assert {c["kind"] for c in result["cases"]} == {"self", "cross", "masked"}
    for c in result["cases"]:
        assert c["max_abs_diff_mha"] <= TOL and c["max_abs_diff_sdpa"] <= TOL, c["name"]
        assert c["shapes_agree"]
    assert result["causal"]["above_diagonal_weight_max"] == 0
    assert result["causal"]["future_perturbation_max_diff"] == 0 and result["causal"]["later_positions_changed"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_minus_inf_masking_survives_low_precision(written, dtype):
    row = next(r for r in written[0]["low_precision"] if r["dtype"] == dtype)
    assert row["masked_weight_max"] == 0 and row["masked_weights_exactly_zero"]
    assert not row["has_nan"] and not row["project_fully_masked_has_nan"]
    assert row["max_abs_diff_vs_fp32"] <= row["tolerance"]
    assert row["minus_1e9_is_inf"] == (dtype == "float16")  # −1e9 overflows float16 only


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_core_in_low_precision_masks_exactly(dtype):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 6, 8, generator=g).to(dtype) for _ in range(3))
    out, w = attention(q, k, v, causal=True)
    assert out.dtype == dtype and not torch.isnan(out).any()
    assert torch.equal(w.triu(1), torch.zeros_like(w))  # exactly zero above the diagonal
    ref, _ = attention(q.float(), k.float(), v.float(), causal=True)
    assert (out.float() - ref).abs().max() <= 4 * torch.finfo(dtype).eps * ref.abs().max()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fully_masked_row_gives_zeros_in_the_project(dtype):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=g).to(dtype) for _ in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False
    out, w = attention(q, k, v, causal=False, mask=mask)
    assert torch.equal(out[:, :, 2], torch.zeros_like(out[:, :, 2]))
    assert torch.equal(w[:, :, 2], torch.zeros_like(w[:, :, 2]))
    assert not torch.isnan(out).any()


def test_fully_masked_row_is_reported_for_both(written):
    fm = written[0]["fully_masked"]
    assert fm["project_row_is_zero"] and not fm["project_has_nan"] and set(fm["project_row"]) == {0.0}
    assert isinstance(fm["sdpa_row_has_nan"], bool)  # whatever this torch does, it is measured and recorded
    assert fm["module"]["project_row_equals_out_bias"]
    assert fm["other_rows_max_abs_diff"] <= TOL


def test_main_writes_json_with_provenance(written):
    result, on_disk, _, cfg = written
    for key in ("cases", "low_precision", "fully_masked", "settings", "provenance"):
        assert key in on_disk
    assert on_disk["provenance"]["seed"] == cfg["seed"] and on_disk["provenance"]["config_hash"]
    assert on_disk["settings"]["seed"] == cfg["seed"]
    for c in on_disk["cases"]:
        assert {"name", "max_abs_diff_mha", "max_abs_diff_sdpa", "mean_abs_output", "t_q", "t_k"} <= set(c)
    assert on_disk["cases"] == json.loads(json.dumps(result["cases"]))


def test_mask_of_the_wrong_shape_is_refused():
    attn = SelfAttention(32, 4, out_proj=True)
    x = torch.randn(2, 5, 32)
    with pytest.raises(AttnlabError, match=re.escape("(3, 4)")) as err:
        attn(x, mask=torch.ones(3, 4, dtype=torch.bool))
    assert "(..., 5, 5)" in str(err.value)


def test_heads_must_divide_the_width():
    with pytest.raises(AttnlabError, match="n_heads=5") as err:
        SelfAttention(128, 5, out_proj=True)
    assert "d_model=128" in str(err.value)


def test_claims_hold_on_a_real_run(written):
    _, _, root, _ = written
    registry = load_registry()
    verdicts = {v.claim.id: v for v in evaluate_all(registry, gather(root)) if v.claim.experiment == "equivalence"}
    assert set(verdicts) == {"C9.1", "C9.2", "S3"}
    assert all(v.verdict == "holds" for v in verdicts.values()), {k: v.note for k, v in verdicts.items()}




def test_blocks_fill_every_marker(written):
    _, _, root, cfg = written
    template = (REPO / "src/attnlab/experiments/equivalence/page.md").read_text()
    page = render(template, blocks(site_for(root, cfg)), "equivalence.md")
    assert "<!-- attnlab:" not in page
    assert "chart-equivalence" in page and "vegaEmbed" in page
    assert "causal self-attention" in page and "bfloat16" in page
    assert "equivalence/result.json" in page  # rerun command and provenance


def test_blocks_render_not_run_without_results(tmp_path, written):
    cfg = written[3]
    template = (REPO / "src/attnlab/experiments/equivalence/page.md").read_text()
    page = render(template, blocks(site_for(tmp_path, cfg)), "equivalence.md")
    assert "<!-- attnlab:" not in page
    assert "not run" in page and "results/smoke/equivalence/result.json" in page


def test_permutation_equivariance_is_recorded_for_c5_5():
    from attnlab.experiments.equivalence.producer import run

    perm = run(seed=3)["permutation"]
    assert perm["max_abs_diff_no_position"] < 1e-6 < 1e-3 < perm["max_abs_diff_rope"]
