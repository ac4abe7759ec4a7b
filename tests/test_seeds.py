"""Seeds: every training run at each seed of the profile, claims computed per seed, their spread on the site."""
from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.report.build import template as template_of
from attnlab.claims.design import LOOKS, Noise, k_at
from attnlab.claims.evaluate import evaluate
from attnlab.claims.table import seed_table, verdict_table
from attnlab.provenance import write_json
from attnlab.results import gather
from helpers import REPO, site_for
from test_report import CONFIG, VAL, write_fake_results

SEEDS = (1337, 1338, 1339)


def seeded_results(root: Path, l3_by_seed: dict[int, float]) -> Path:
    """A results tree whose ladder runs sit at <row>/seed<k>/, L3's validation perplexity set per seed."""
    for seed, l3 in l3_by_seed.items():
        one = write_fake_results(root.parent / f"one-{seed}", val={"L3": l3})
        for row_dir in (one / "ladder").iterdir():
            target = root / "ladder" / row_dir.name / f"seed{seed}"
            target.mkdir(parents=True)
            for f in row_dir.iterdir():
                shutil.copy(f, target / f.name)
        for other in ("data", "averaging", "throughput"):
            if not (root / other).exists():
                shutil.copytree(one / other, root / other)
    return root


def c22(root: Path):
    from attnlab.claims.registry import load_registry

    return evaluate(load_registry().by_id("C2.2"), gather(root))


def test_gather_reads_every_seed_and_a_version_from_before_seeds(tmp_path):
    root = seeded_results(tmp_path / "r", {1337: 240.0, 1338: 241.0})
    legacy = write_fake_results(tmp_path / "old")  # <run>/metrics.json: one seed, named in its provenance
    res, old = gather(root), gather(legacy)
    assert res.seeds("L3") == [1337, 1338] and res.values("L3", "val_ppl") == [240.0, 241.0]
    assert res.run_paths["L3"] == "ladder/L3/seed1337/metrics.json" and res.runs["L3"]["val_ppl"] == 240.0
    assert res.spread("L3", "val_ppl").mean == pytest.approx(240.5)
    assert len(res.provenance()) == 3 + 2 * len(VAL)  # data, averaging, throughput, and every run at every seed
    assert old.seeds("L3") == [1339] and old.run_paths["L3"] == "ladder/L3/metrics.json"
    assert old.common_seeds(["L2", "L3"]) == []  # made at different seeds: read as they are, not per seed


def test_a_direction_inside_the_seed_spread_holds_nothing(tmp_path):
    """C2.2's gain (L2 - L3) is 8.45, -3.55 and 6.45 at three seeds: the sampling error of each is a fraction of
    a point, so two seeds alone would pass it, but on the mean (3.78) the interval ± 6.1 (the first look's t at
    2 degrees of freedom, weighed with the sampling error's at 19) × SE 3.78 (the seeds' sd 6.4 / √3 = 3.7 and
    the sampling error 0.69, in quadrature) holds 0: inconclusive. At that spread, 22 seeds would settle it at the
    second look's k (21 would not)."""
    v = c22(seeded_results(tmp_path / "r", {1337: 240.0, 1338: 252.0, 1339: 242.0}))
    gains = [VAL["L2"] - x for x in (240.0, 252.0, 242.0)]
    assert v.seeds == {s: pytest.approx({"gain": g, "share_of_L2_minus_L4": g / (VAL["L2"] - VAL["L4"])})
                       for s, g in zip(SEEDS, gains)}
    mean = sum(gains) / 3
    sd = (sum((g - mean) ** 2 for g in gains) / 2) ** 0.5
    sampling = math.sqrt(v.se["gain"] ** 2 - sd ** 2 / 3)  # the evaluation's, shared by the seeds
    assert v.reproduced["gain"] == pytest.approx(mean) and 0.5 < sampling < 0.9 and v.parts["gain"].dominant == "seeds"
    assert v.verdict == "inconclusive" and "mean of 3 seeds" in v.note and v.settle == "22"
    noise = Noise(3, sd, sampling, 19)
    assert [noise.k(n) * noise.at(n)[0] < mean for n in (21, 22)] == [False, True]
    assert v.parts["gain"].k == pytest.approx(noise.k(3)) and k_at(19, LOOKS[0]) < noise.k(3) < k_at(2, LOOKS[0])
    assert v.single == {1337: "reproduced", 1338: "not reproduced", 1339: "reproduced"}
    assert v.survives() == "some seeds"


def test_a_direction_every_seed_agrees_on_holds(tmp_path):
    v = c22(seeded_results(tmp_path / "r", {1337: 240.0, 1338: 240.5, 1339: 241.0}))
    assert v.verdict == "reproduced" and v.survives() == "every seed"
    assert v.reproduced["gain"] == pytest.approx(VAL["L2"] - 240.5)
    row = verdict_table([v]).iloc[0]
    assert (row["part"], row["n_seeds"], row["part_verdict"]) == ("gain", 3, "reproduced")
    by_seed = seed_table([v])
    assert list(by_seed[by_seed.part == "gain"].seed) == list(SEEDS)
    assert set(by_seed.seed_verdict) == {"reproduced"}


def test_a_seed_that_diverged_is_named(tmp_path):
    root = seeded_results(tmp_path / "r", {1337: 240.0, 1338: 240.5})
    metrics = root / "ladder" / "L3" / "seed1338" / "metrics.json"
    m = json.loads(metrics.read_text())
    write_json(metrics, {**m, "status": "diverged", "diverged_at_step": 9, "val_ppl": None})
    v = c22(root)
    assert v.verdict == "diverged" and v.note == "L3 (seed 1338) diverged at step 9"


def test_a_seeded_result_is_read_at_each_seed(tmp_path):
    """An analysis that trains at every seed (E8) keeps each seed's result under by_seed; at(seed) reads it."""
    root = seeded_results(tmp_path / "r", {1337: 240.0, 1338: 241.0})
    write_json(root / "winograd" / "result.json", {"accuracy": 0.5, "by_seed": {"1337": {"accuracy": 0.5},
                                                                                "1338": {"accuracy": 0.7}}})
    res = gather(root)
    assert res.common_seeds(["L3"], ["winograd"]) == [1337, 1338]
    assert [res.at(s).files["winograd"]["accuracy"] for s in (1337, 1338)] == [0.5, 0.7]
    assert res.at(1338).runs["L3"]["val_ppl"] == 241.0


def test_pages_show_the_mean_and_every_seed_on_hover(tmp_path):
    from attnlab.report.build import page_blocks, render

    root = seeded_results(tmp_path / "r", {1337: 240.0, 1338: 252.0, 1339: 242.0})
    site = site_for(root, {**CONFIG, "seeds": list(SEEDS)})
    ladder = render((REPO / "src/attnlab/experiments/ladder/page.md").read_text(), page_blocks(site, "ladder.md"), "ladder.md")
    # the table: mean ± sd, each seed on hover; the rerun command trains every seed
    assert '<span class="seeds" title="seed 1337: 240.00; seed 1338: 252.00; seed 1339: 242.00">244.67\u00a0±\u00a06.43' \
        in ladder
    assert "snakemake results/smoke/ladder/L6/seed{1337,1338,1339}/metrics.json" in ladder
    assert 'vegaEmbed("#chart-seeds-ladder"' in ladder
    assert re.search(r"Relative to its mean, the widest spread of validation perplexity is L3's: a standard deviation of 6\.43, "
                     r"2\.6 %", ladder)
    assert "one seed alone: 2 of 3 reproduce" in ladder and "seed 1338: " in ladder
    board = render(template_of("dashboard.md").read_text(), page_blocks(site, "dashboard.md"), "dashboard.md")
    assert re.search(r"reproduce at some seeds alone and not at others[^\n]*on the mean over seeds: [^\n]*"
                     r"inconclusive: [^\n]*\[C2\.2\]", board)


def test_the_dag_trains_every_run_at_every_seed_and_up_trains_from_the_same_seed(tmp_path):
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1", "--config", "profile=smoke",
                          "seeds=[5,6]"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    for seed in (5, 6):
        assert f"results/smoke/ladder/L9/seed{seed}/metrics.json" in text
        assert re.search(rf"input: [^\n]*results/smoke/grouping/S6-mha/seed{seed}/metrics.json[^\n]*\n\s*output: "
                         rf"results/smoke/grouping/S6-gqa-up/seed{seed}/metrics.json", text)
    assert "seed1337" not in text


def test_the_e8_page_gives_every_seeds_accuracy():
    from attnlab.experiments.winograd.page import seeds_table

    def at(acc):
        return {"versions": {"closed": {"models": {"one_block": {"accuracy": acc}, "average": {"accuracy": 0.5}}}}}

    r = {**at(0.9), "seed": 1337, "by_seed": {"1337": at(0.9), "1338": at(0.7), "1339": at(0.8)}}
    text = seeds_table(r)
    assert '<span class="seeds" title="seed 1337: 0.900; seed 1338: 0.700; seed 1339: 0.800">0.800\u00a0±\u00a00.100' \
        in text
    assert "The widest spread is the one block's on the closed version: a standard deviation of 0.100." in text
    assert "trained at one seed (1337)" in seeds_table({**at(0.9), "seed": 1337})
