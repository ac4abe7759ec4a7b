"""S8 trained (experiment approximate_training): its settings keep every run L9 but for its attention, its claims
and page readings follow the perplexities on both sides, and its chart draws one point per run."""
from __future__ import annotations

import json

import pytest

from attnlab.claims.evaluate import evaluate
from attnlab.claims.registry import load_registry
from attnlab.config import chosen, validate
from attnlab.errors import AttnlabError
from attnlab.nn.spec import ModelSpec
from attnlab.provenance import write_json
from attnlab.experiments.approximate_training import page
from attnlab.experiments.approximate_training.settings import DEFAULTS, check
from attnlab.results import gather
from charts import problems
from helpers import eval_section, rendered_page, site_for

SEEDS = (1337, 1338, 1339)
L9 = {"mixer": "multihead", "position": "learned", "mlp": True, "norm": "pre"}
RUNS = {name: {**L9, **{k: v for k, v in entry.items()}} for name, entry in DEFAULTS.items() if name != "base"}


def write_runs(root, ppl: dict[str, tuple[float, ...]]):
    """Every run at every seed, with these validation perplexities (one per seed)."""
    for name, values in ppl.items():
        experiment = "ladder" if name == "L9" else "approximate_training"
        spec = ModelSpec(**(L9 if name == "L9" else RUNS[name])).to_dict()
        for seed, val in zip(SEEDS, values):
            write_json(root / experiment / name / f"seed{seed}" / "metrics.json", {
                "name": name, "experiment": experiment, "spec": spec, "status": "ok", "diverged_at_step": None,
                "steps": 800, "val_ppl": val, "train_ppl": val * 0.9, "eval": eval_section(f"{name}{seed}", val, val * 0.9),
                "probes_first": None, "probes_last": None,
                "provenance": {"commit": "abc123def456", "config_hash": "0123456789abcdef", "profile": "quick",
                               "device": "cpu", "clocks": None, "torch": "2.13.0", "python": "3.11.7",
                               "date": "2026-12-02T00:00:00+00:00", "wall_seconds": 2.0, "seed": seed, "host": "t"}})
    return root


def worse_by(factor: float, base=(40.0, 41.0, 39.5), jitter=(0.0, 0.01, -0.01)) -> tuple[float, ...]:
    return tuple(b * (factor + j) for b, j in zip(base, jitter))


COSTLY = {"L9": worse_by(1.0, jitter=(0, 0, 0)), "S8-w16": worse_by(1.3), "S8-w16-g4": worse_by(1.28),
          "S8-w32": worse_by(1.15), "S8-w32-g4": worse_by(1.14), "S8-w16-sym": worse_by(1.2),
          "S8-w32-sym": worse_by(1.25), "S8-favor32": worse_by(1.5), "S8-favor128": worse_by(1.2)}
FREE = {name: worse_by(1.0, jitter=(0.0, 0.002, -0.002)) if name != "L9" else worse_by(1.0, jitter=(0, 0, 0))
        for name in COSTLY}
BETTER = {name: worse_by(0.8) if name != "L9" else ppl for name, ppl in COSTLY.items()}


QUICK = validate(chosen({"profile": "quick"}, []))


def verdict(root, claim: str) -> str:
    return evaluate(load_registry().by_id(claim), gather(root)).verdict


def test_every_profile_keeps_the_runs_l9_but_for_their_attention():
    for profile in ("smoke", "quick", "chapter"):
        cfg = validate(chosen({"profile": profile}, []))
        assert list(cfg["approximate_training"]) == list(RUNS)
        check(cfg)


@pytest.mark.parametrize("edit, named", [
    (lambda cfg: cfg["approximate_training"]["S8-w16"].update(n_blocks=2), "approximate_training.S8-w16.n_blocks"),
    (lambda cfg: cfg["approximate_training"]["S8-favor32"].update(train={"steps": 5}),
     "approximate_training.S8-favor32.train"),
])
def test_a_run_that_differs_from_l9_beyond_its_attention_is_refused_naming_the_setting(edit, named):
    cfg = validate(chosen({"profile": "smoke"}, []))
    edit(cfg)
    with pytest.raises(AttnlabError, match=named.replace(".", r"\.")):
        check(cfg)


@pytest.mark.parametrize("ppl, s83, s84", [(COSTLY, "reproduced", "reproduced"),
                                           (FREE, "inconclusive", "inconclusive"),
                                           (BETTER, "not reproduced", "inconclusive")])
def test_the_claims_follow_the_perplexities_on_both_sides(tmp_path, ppl, s83, s84):
    write_runs(tmp_path, ppl)
    assert verdict(tmp_path, "S8.3") == s83
    assert verdict(tmp_path, "S8.4") == s84


def test_the_page_reads_each_cost_on_its_side_of_full_attention(tmp_path):
    costly = rendered_page(site_for(write_runs(tmp_path / "a", COSTLY), QUICK),
                           "approximate_training", page.blocks)
    assert costly.count("worse than full attention") == len(RUNS) and "better than full attention" not in costly
    assert "S8-w32 against S8-w16" in costly and "better" in costly.split("What giving")[1]
    more = dict(line.split(": ", 1) for line in costly.split("What giving")[1].splitlines() if line.startswith("- "))
    assert more["- a symmetric global token every 16 added to a window of 16"].startswith("S8-w16-sym against S8-w16")
    assert "better" in more["- a symmetric global token every 16 added to a window of 16"]
    assert "worse" in more["- a symmetric global token every 16 added to a window of 32"]
    text = rendered_page(site_for(write_runs(tmp_path / "b", BETTER), QUICK),
                         "approximate_training", page.blocks)
    assert text.count("better than full attention") == len(RUNS) and "worse than full attention" not in text
    free = rendered_page(site_for(write_runs(tmp_path / "c", FREE), QUICK),
                         "approximate_training", page.blocks)
    assert free.count("equal within the noise") == len(RUNS)


def test_the_pages_ratios_have_the_verdicts_intervals(tmp_path):
    """The page's interval on each approximation's ratio to full attention is the one S8.3 is judged on (the
    larger of the seeds' spread and the evaluation's sampling error), so the two never read differently."""
    write_runs(tmp_path, {**COSTLY, "S8-w16": worse_by(1.3, jitter=(0, 0, 0))})  # the blocks' error alone
    parts = evaluate(load_registry().by_id("S8.3"), gather(tmp_path)).parts
    t = page.runs_table(site_for(tmp_path, QUICK)).set_index("run")
    for part, run in (("window16_over_full", "S8-w16"), ("favor128_over_full", "S8-favor128")):
        e = t.loc[run, "estimate"]
        assert (e.value, e.se, e.df) == pytest.approx((parts[part].value, parts[part].se, parts[part].df))
    assert t.loc["S8-w16", "estimate"].se > 0 and t.loc["S8-w16", "estimate"].df == 19  # 20 blocks


def test_the_chart_draws_one_point_per_approximation_at_its_ratio(tmp_path):
    site = site_for(write_runs(tmp_path, COSTLY), QUICK)
    t = page.runs_table(site)
    spec = page.ratio_chart(t)
    assert problems("approximate_training", spec) == []
    drawn = t.dropna(subset=["ratio"]).set_index("run")["ratio"]
    assert sorted(drawn.index) == sorted(RUNS) and drawn["S8-favor32"] == pytest.approx(1.5, abs=0.02)


def test_without_runs_the_page_says_not_run_once(tmp_path):
    text = rendered_page(site_for(tmp_path, QUICK), "approximate_training",
                         page.blocks)
    assert text.count('!!! warning "not run"') == 1 and "approximate_training/*/seed*/metrics.json" in text


def test_when_every_run_diverged_the_page_says_so_instead_of_failing(tmp_path):
    write_runs(tmp_path, {"L9": worse_by(1.0)})
    for name in RUNS:  # every S8 run diverged: no perplexity to set against L9's
        write_runs(tmp_path, {name: worse_by(1.0)})
        for seed in SEEDS:
            f = tmp_path / "approximate_training" / name / f"seed{seed}" / "metrics.json"
            m = json.loads(f.read_text())
            f.write_text(json.dumps({**m, "status": "diverged", "diverged_at_step": 3, "val_ppl": None}))
    text = rendered_page(site_for(tmp_path, QUICK), "approximate_training", page.blocks)
    assert "No run has a finite perplexity beside full attention's" in text
