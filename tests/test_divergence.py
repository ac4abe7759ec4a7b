"""Runs that diverge, rerun over a copy of the finished smoke run: L9 alone, then every run at lr 100. What read a
diverged run says so, and never reads the healthy run's old weights as this run's."""
import json

import pandas as pd
import yaml

from dag import by_claim, clone, profile, snakemake


def test_a_diverged_rerun_is_shown_as_diverged_where_its_old_weights_were_read(smoke, tmp_path):
    """The healthy smoke run, then L9 again at lr 100 in the same folder: S8.2, S10 and S11 must report L9 as diverged,
    never measure the healthy run's checkpoint as this run's, and the claims that need L9 say why they did not run."""
    work = clone(smoke, tmp_path / "clone")
    r = work / "results" / "smoke"
    def diverge(cfg):  # L9 and the S8 runs, which must train as L9 does (experiments/approximate_training/settings.py)
        for run in [cfg["ladder"]["L9"], *cfg["approximate_training"].values()]:
            run["train"] = {**run.get("train", {}), "lr": 100}

    diverging = profile(work, "l9-diverges", diverge)
    snakemake(work, "--cores", "2", "--resources", "gpu=1", "--configfile", diverging)
    m = json.loads((r / "ladder" / "L9" / "seed1337" / "metrics.json").read_text())
    assert m["status"] == "diverged" and not (r / "ladder" / "L9" / "seed1337" / "ckpt.pt").exists()
    why = f"L9 diverged at step {m['diverged_at_step']}"
    record = {"status": "diverged", "run": "L9", "diverged_at_step": m["diverged_at_step"]}
    assert json.loads((r / "induction" / "result.json").read_text())["text"]["L9"] == record
    viewer = json.loads((r / "viewer" / "result.json").read_text())
    assert {json.dumps(ex["models"]["L9 (Shakespeare)"]) for ex in viewer["examples"] if "L9 (Shakespeare)" in ex["models"]} \
        == {json.dumps(record)}
    approximation = json.loads((r / "approximation" / "result.json").read_text())
    assert approximation["by_seed"]["1337"]["L9"] == {**record, "seed": 1337}
    claims = by_claim(pd.read_csv(r / "claims.csv"))
    for claim in ("S10.3", "S11", "S8.2"):
        assert (claims.loc[claim, "verdict"], claims.loc[claim, "note"]) == ("not run", why), claim
    assert claims.loc["S10.1", "verdict"] != "not run"  # the control task reads no ladder run
    for page in ("induction", "viewer"):
        assert f"Not measured, because the run diverged: {why}." in (r / "site" / f"{page}.html").read_text()
    assert f"Not measured, because the run diverged: {why.replace('L9', 'L9 at seed 1337')}." in (
        r / "site" / "approximation.html").read_text()


def test_the_smoke_dag_at_lr_100_everywhere_builds_its_site(smoke, tmp_path):
    """train.lr: 100 for every run of the smoke profile (one key), rerun over the finished smoke run: every
    analysis that trains or reads trained models finishes with its diverged runs recorded, and the site shows
    them."""
    work = clone(smoke, tmp_path / "clone")
    r = work / "results" / "smoke"
    cfg = yaml.safe_load((work / "config" / "smoke.yaml").read_text())
    cfg["train"]["lr"] = 100
    (work / "config" / "lr100.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    snakemake(work, "--cores", "2", "--resources", "gpu=1", "--configfile", "config/lr100.yaml")
    assert (r / "site" / "index.html").is_file()
    for run in ("L9", "B2"):
        assert json.loads((r / "ladder" / run / "seed1337" / "metrics.json").read_text())["status"] == "diverged"
    up = json.loads((r / "grouping" / "S6-gqa-up" / "seed1337" / "metrics.json").read_text())
    assert up["status"] == "diverged" and up["init_diverged"]["run"] == "S6-mha"
    induction = json.loads((r / "induction" / "result.json").read_text())
    assert {c["status"] for c in [*induction["control"].values(), *induction["text"].values()]} == {"diverged"}
    winograd = json.loads((r / "winograd" / "result.json").read_text())
    assert {m["status"] for v in winograd["versions"].values() for m in v["models"].values()} == {"diverged"}
    assert json.loads((r / "explanation" / "result.json").read_text())["status"] == "diverged"
    claims = by_claim(pd.read_csv(r / "claims.csv"))
    for claim in ("S10.1", "S10.3", "C8.1", "S9.1", "S11", "S6.3"):
        assert claims.loc[claim, "verdict"] in ("not run", "diverged") and "diverged at step" in claims.loc[claim, "note"]
    for page in ("induction", "winograd", "explanation", "viewer"):
        assert "Not measured, because the run diverged" in (r / "site" / f"{page}.html").read_text(), page
