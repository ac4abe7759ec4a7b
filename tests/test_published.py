"""The committed versions (results/<version>/) are what `publish` promises: complete, from one commit, without
checkpoints, and their site rebuilds from them without training."""
from pathlib import Path

import pytest
import yaml

from attnlab import layout
from attnlab.crate import CRATE
from attnlab.provenance import read_json
from attnlab.registry import training
from attnlab.report.build import build_site
from attnlab.versions import MANIFEST, NAME, check_version, expected, runs_named, versions

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = [m["version"] for m in versions(REPO)]
COMPLETE = [m["version"] for m in versions(REPO) if m.get("complete", True)]


def test_at_least_one_version_is_published():
    assert PUBLISHED, "no version under results/: run the quick profile and `attnlab publish` it"
    assert all(NAME.match(v) for v in PUBLISHED)


@pytest.mark.parametrize("version", PUBLISHED)
def test_a_version_is_complete_and_from_one_commit(version):
    """Complete as the registry stood when it was published (later experiments are not asked of it): every
    run file the manifest counts is there, from the manifest's commit and profile."""
    folder = REPO / "results" / version
    manifest, cfg = read_json(folder / MANIFEST), yaml.safe_load((folder / "config.yaml").read_text())
    assert manifest["version"] == version and manifest["profile"] == cfg["profile"]
    run_files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.json") if p.name not in (MANIFEST, CRATE))
    assert len(run_files) == manifest["runs"]["files"] and run_files == manifest["runs"].get("run_files", run_files)
    for rel in run_files:
        prov = read_json(folder / rel)["provenance"]
        assert prov["commit"] == manifest["commit"] and prov["profile"] == cfg["profile"], rel
    only = None if manifest.get("complete", True) else runs_named(version, run_files) or manifest["experiments"]
    for rel in expected(cfg, only):
        if "/" in rel and rel.split("/")[0] in training():  # every training run the profile declared
            assert (folder / in_version(rel, before_seeds="seeds" not in cfg)).is_file(), rel
    assert (folder / "claims.csv").is_file() or only
    assert not list(folder.rglob("*.pt")) and not list(folder.rglob("*.bin")), "no checkpoints or token files"


def test_the_runs_a_version_was_published_with_are_read_from_its_name():
    files = [f"depth/{run}/seed1340/metrics.json" for run in ("E4-pre", "E4-post")]
    assert runs_named("2026-12-06-chapter-cpu-680862e-only-depth.E4-pre-depth.E4-post-set-seeds-1340to1346",
                          files) == ["depth.E4-post", "depth.E4-pre"]
    assert runs_named("2026-12-06-chapter-cpu-680862e-only-depth", files) == []  # the whole experiment


def in_version(rel: str, before_seeds: bool) -> str:
    """Where a version keeps a training run's file: a version from before seeds (its profile names one `seed`)
    in the run's own folder."""
    found = layout.parse(rel)
    return layout.run_file(found.experiment, found.run, None, found.file) if before_seeds else rel


@pytest.mark.parametrize("version", PUBLISHED)
def test_every_file_of_a_version_is_whole(version):
    """What `attnlab versions` checks before it builds any site: every JSON and CSV file parses, with the
    columns and rows its kind has, and every run file the manifest lists is there."""
    assert check_version(REPO / "results" / version)["version"] == version


@pytest.mark.parametrize("version", COMPLETE[:1])
def test_the_newest_site_rebuilds_from_its_run_files(version, tmp_path):
    build_site(REPO / "results" / version, None, None, tmp_path / "site")
    page = (tmp_path / "site" / "ladder.html").read_text()
    assert f"Version <code>{version}</code>" in page and "L9" in page
