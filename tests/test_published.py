"""The committed snapshot (published/quick) is honest: its verdicts recompute from its run files, and the
site builds from it without retraining."""
from pathlib import Path

import pandas as pd
import pytest

from attnlab.config import load
from attnlab.registry import training
from attnlab.report.results import result_files
from attnlab.report.verdicts import write_claims_csv
from attnlab.report.site import build_site

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "published" / "quick"
CLAIMS = REPO / "claims"


@pytest.fixture(scope="module")
def recomputed(tmp_path_factory):
    assert PUBLISHED.is_dir(), "published/quick is missing: run the quick profile and `attnlab publish`"
    out = tmp_path_factory.mktemp("claims") / "claims.csv"
    return write_claims_csv(PUBLISHED, CLAIMS, out), pd.read_csv(PUBLISHED / "claims.csv")


def test_published_verdicts_recompute_from_published_runs(recomputed):
    fresh, committed = recomputed
    assert list(fresh["claim_id"]) == list(committed["claim_id"])
    assert list(fresh["verdict"]) == list(committed["verdict"])


def test_every_run_and_analysis_was_published(recomputed):
    cfg = load(REPO / "config" / "quick.yaml")
    for experiment in training():
        for run in cfg.get(experiment) or {}:
            assert (PUBLISHED / experiment / run / "metrics.json").is_file(), run
            assert (PUBLISHED / experiment / run / "curve.csv").is_file(), run
    for rel in result_files().values():
        assert (PUBLISHED / rel).is_file(), rel
    assert not list(PUBLISHED.rglob("*.pt")) and not list(PUBLISHED.rglob("*.bin")), "no checkpoints or tokens"


def test_site_builds_from_the_snapshot(tmp_path):
    build_site(PUBLISHED, CLAIMS, load(REPO / "config" / "quick.yaml"), tmp_path / "site")
    assert "L9" in (tmp_path / "site" / "ladder.html").read_text()
