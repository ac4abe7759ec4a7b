"""E3 without training: score variance, effective tokens, saturation - and the page built from them."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
import torch

from attnlab.experiments.scores import producer as scores
from attnlab.provenance import read_json
from attnlab.experiments.scores import page
from attnlab.report.build import render
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



def test_a_divided_row_can_freeze_so_its_share_is_measured_not_counted():
    """Dividing by √d_k bounds no score: a query and a key long enough and aligned still freeze a row."""
    q = torch.tensor([[10.0, 0, 0, 0]])
    k = torch.zeros(1, 64, 4).index_fill_(1, torch.tensor([0]), 0.0)
    k[0, 0, 0] = 10.0  # one key along q: score 100 / 2 = 50 against 0 for the other 63
    assert scores.row_stats(scores.softmax_rows(q, k, scale=True))["frozen"].item()


def test_the_recorded_errors_match_the_spread_of_repeated_runs():
    """Independent small runs: the spread of each value the claims read is what its recorded (or binomial) error
    says: the means' sd/√n, the median's bootstrap, a fraction's binomial error."""
    from attnlab.stats import binomial_se

    runs = [scores.run(seed, widths=[256], n_pairs=10, n_rows=100) for seed in range(100)]  # sd within ~7 %
    eff, sat = [r["effective_tokens"][0] for r in runs], [r["saturation"][0] for r in runs]
    pairs = {
        "undivided median": ([e["undivided_median"] for e in eff], [e["undivided_median_se"] for e in eff]),
        "divided mean": ([e["divided_mean"] for e in eff], [e["divided_mean_se"] for e in eff]),
        "divided mass": ([s["mass_divided"] for s in sat], [s["mass_divided_se"] for s in sat]),
        "frozen, undivided": ([s["frozen_undivided"] for s in sat],
                              [binomial_se(s["frozen_undivided"], 100) for s in sat]),
    }
    for name, (values, errors) in pairs.items():
        assert statistics.stdev(values) == pytest.approx(statistics.mean(errors), rel=0.3), name


def test_page_fills_every_marker_and_every_claim_is_judged_on_its_errors(e3):
    """Every measured part carries the error of its rows (or pairs) and is reproduced on its interval; the errors
    are the run file's own."""
    from attnlab.stats import binomial_se

    site = site_for(e3[0], CFG)
    text = rendered_page(site, "scores", page.blocks)
    assert "chart-e3-variance" in text and "chart-e3-saturation" in text and "· not run" not in text
    verdicts = {v.claim.id: v for v in site.page_verdicts("scores")}
    assert {c: v.verdict for c, v in verdicts.items()} == dict.fromkeys(("C3.1", "C3.2", "C3.3", "S2"), "reproduced")
    for v in verdicts.values():
        for p in v.parts.values():
            exact = p.kind == "computed" or p.name == "undivided_never_falls"
            assert exact or (p.se > 0 and round(p.k, 2) == 1.96), (v.claim.id, p.name)
    result = e3[1]
    assert verdicts["C3.1"].parts["var_d256"].se == row(result["variance"], "d", 256)["se_var_sample"]
    assert verdicts["C3.2"].parts["undivided_256_median"].se == row(result["effective_tokens"], "d_k", 256)[
        "undivided_median_se"]
    at_1024 = row(result["saturation"], "d_k", 1024)["frozen_undivided"]
    assert verdicts["C3.3"].parts["frozen_undivided_1024"].se == binomial_se(at_1024, result["n_rows"])


def test_run_files_without_the_row_errors_leave_c3_2_and_c3_3_not_run(e3, tmp_path):
    """A result from before the rows' errors were recorded: the parts that need them are not run, never judged
    without an error; C3.1 and S2 read errors such a file already allows."""
    old = json.loads((e3[0] / "scores" / "result.json").read_text())
    for r in old["effective_tokens"]:
        del r["divided_mean_se"], r["undivided_mean_se"], r["undivided_median_se"]
    for r in old["saturation"]:
        del r["mass_divided_se"], r["mass_undivided_se"]
    (tmp_path / "scores").mkdir()
    (tmp_path / "scores" / "result.json").write_text(json.dumps(old))
    verdicts = {v.claim.id: v for v in site_for(tmp_path, CFG).page_verdicts("scores")}
    assert {c: v.verdict for c, v in verdicts.items()} == {"C3.1": "reproduced", "C3.2": "not run",
                                                           "C3.3": "not run", "S2": "reproduced"}
    assert "undivided_256_median" in verdicts["C3.2"].note and "mass_divided_min" in verdicts["C3.3"].note


def test_page_without_a_run_says_not_run(tmp_path):
    text = render((REPO / "src/attnlab/experiments/scores/page.md").read_text(), page.blocks(site_for(tmp_path, CFG)), "scores.md")
    assert "<!-- attnlab:" not in text and "not run" in text and "scores/result.json" in text
