"""E3 without training: score variance, effective tokens, saturation - and the page built from them."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attnlab.experiments import scores
from attnlab.provenance import read_json
from attnlab.report.pages import scores as page
from attnlab.report.site import render
from helpers import rendered_page, site_for

REPO = Path(__file__).resolve().parents[1]
CFG = {"profile": "smoke", "seed": 1337}


@pytest.fixture(scope="module")
def e3(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    result = scores.main(CFG, root / "scores" / "result.json")
    return root, result


def row(table, key, value):
    return next(r for r in table if r[key] == value)


def test_main_writes_json_with_provenance(e3):
    root, result = e3
    on_disk = read_json(root / "scores" / "result.json")
    assert on_disk["provenance"]["seed"] == 1337 and on_disk["provenance"]["config_hash"]
    assert [r["d"] for r in on_disk["variance"]] == scores.WIDTHS
    assert on_disk["frozen_definition"] == result["frozen_definition"]
    assert on_disk["provenance"]["wall_seconds"] > 0  # timed (how long is a benchmark's business, not a test's)


def test_variance_is_d_within_sampling_error(e3):
    for r in e3[1]["variance"]:
        assert abs(r["z"]) < 4, r
        assert r["se_var_sample"] == pytest.approx(r["se_var"], rel=0.15)  # the 4th-moment model fits the sample
        assert r["std"] == pytest.approx(math.sqrt(r["d"]), rel=0.03)


def test_the_standard_error_formula_matches_the_spread_of_repeated_estimates():
    """Many small samples: the spread of their variance estimates is what variance_se predicts."""
    g = torch.Generator().manual_seed(0)
    d, n, repeats = 8, 200, 2000
    q, k = torch.randn(repeats, n, d, generator=g), torch.randn(repeats, n, d, generator=g)
    estimates = (q * k).sum(-1).double().var(dim=1)
    assert estimates.mean().item() == pytest.approx(d, rel=0.02)
    assert estimates.std().item() == pytest.approx(scores.variance_se(d, n), rel=0.06)


def test_scores_are_the_attention_cores_and_a_wrong_scale_would_show():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(5, 16, generator=g), torch.randn(5, 7, 16, generator=g)
    raw = torch.einsum("nd,nkd->nk", q, k)
    torch.testing.assert_close(scores.dot_scores(q, k, scale=False), raw)
    torch.testing.assert_close(scores.dot_scores(q, k, scale=True), raw / 4)
    w = scores.softmax_rows(q, k, scale=True)
    torch.testing.assert_close(w, torch.softmax(raw / 4, -1))
    torch.testing.assert_close(w.sum(-1), torch.ones(5))


def test_undivided_head_at_256_attends_to_about_one_token(e3):
    r = row(e3[1]["effective_tokens"], "d_k", 256)
    assert 1 <= r["undivided_median"] < 1.5
    assert e3[1]["undivided_256_frac_below_1_5"] > 0.5
    assert r["divided_mean"] > 30  # the same rows, divided, spread over dozens of keys
    widths = e3[1]["effective_tokens"]
    assert all(a["undivided_mean"] > b["undivided_mean"] for a, b in zip(widths, widths[1:]))


def test_divided_jacobian_mass_is_flat_near_one_minus_e_over_64(e3):
    result = e3[1]
    assert result["mass_reference"] == pytest.approx(1 - math.e / 64)
    for r in result["saturation"]:
        assert r["mass_divided"] == pytest.approx(0.958, abs=0.02)
        assert r["frozen_divided"] == 0
    top = row(result["saturation"], "d_k", 1024)
    assert top["mass_undivided"] < 0.15
    assert 0.65 <= top["frozen_undivided"] <= 0.75  # the chapter's seven rows in ten


def test_frozen_means_largest_weight_above_0_9899():
    g = torch.Generator().manual_seed(2)
    w = torch.softmax(torch.randn(4000, 64, generator=g) * torch.linspace(0.5, 40, 4000)[:, None], -1)
    stats = scores.row_stats(w)
    assert stats["frozen"].any() and not stats["frozen"].all()
    assert torch.equal(stats["frozen"], w.amax(-1) > 0.98990)
    torch.testing.assert_close(stats["mass"], 1 - (w ** 2).sum(-1))
    one_hot = torch.zeros(1, 64).index_fill_(1, torch.tensor([3]), 1.0)
    uniform = torch.full((1, 64), 1 / 64)
    assert scores.row_stats(one_hot)["effective"].item() == pytest.approx(1.0)
    assert scores.row_stats(uniform)["effective"].item() == pytest.approx(64.0, rel=1e-5)



def test_page_fills_every_marker_and_claims_hold_on_their_values_but_state_no_error(e3):
    """The analysis states no sampling error for its Monte Carlo values, so the interval rule cannot judge them
    (inconclusive, "no error estimate"), though every value passes its test on its own."""
    from attnlab.report.claims import passes

    site = site_for(e3[0], CFG)
    text = rendered_page(site, "scores", page.blocks)
    assert "chart-e3-variance" in text and "chart-e3-saturation" in text and "not run" not in text
    verdicts = {v.claim.id: (v.verdict, v.settle) for v in site.page_verdicts("scores")}
    assert verdicts == dict.fromkeys(("C3.1", "C3.2", "C3.3", "S2"), ("inconclusive", "no error estimate"))
    for v in site.page_verdicts("scores"):
        assert all(passes(v.claim.checks[p.name], p.value) for p in v.parts.values()), v.claim.id


def test_page_without_a_run_says_not_run(tmp_path):
    text = render((REPO / "docs" / "scores.md").read_text(), page.blocks(site_for(tmp_path, CFG)), "scores.md")
    assert "<!-- attnlab:" not in text and "not run" in text and "scores/result.json" in text
