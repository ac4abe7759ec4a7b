"""SiteData, what a site shows without its words, sits below the report: it loads a version's run files and verdicts
as the site does, and names the run files each claim reads."""
from __future__ import annotations

from types import SimpleNamespace

from attnlab import versions
from attnlab.report import build
from attnlab.sitedata import SiteData
from helpers import REPO


def data_over(seed_paths: dict) -> SiteData:
    """A SiteData over run files found only by name: a result file at <name>/result.json, a run's metrics at
    <run>/metrics.json where it has no seed folders."""
    data = SiteData.__new__(SiteData)
    data.res = SimpleNamespace(path=lambda what: f"{what}/result.json" if what == "cost" else f"{what}/metrics.json",
                               seed_paths=seed_paths)
    return data


def test_a_claim_reads_its_result_files_then_each_run_at_every_seed():
    claim = SimpleNamespace(files={"cost"}, rows={"L2", "L1"})
    seeded = {"L1": {1337: "ladder/L1/seed1337/metrics.json", 1338: "ladder/L1/seed1338/metrics.json"},
              "L2": {1337: "ladder/L2/seed1337/metrics.json"}}
    assert data_over(seeded).claim_files(claim) == [
        "cost/result.json", "ladder/L1/seed1337/metrics.json", "ladder/L1/seed1338/metrics.json",
        "ladder/L2/seed1337/metrics.json"]
    # a run with no seed folder (a version from before seeds, or a run not there): its one path
    assert data_over({"L1": seeded["L1"]}).claim_files(claim)[-1] == "L2/metrics.json"
    assert data_over({}).claim_files(SimpleNamespace(files=set(), rows=set())) == []


def test_it_loads_a_version_as_the_site_does():
    """SiteData.load, outside the report, gives the verdicts and the profile the site of that version shows."""
    version = versions.latest(REPO)
    folder = REPO / "results" / version
    data, site = SiteData.load(folder, None), build.context(folder, None)
    assert data.manifest["version"] == version and data.config == site.config
    assert [(v.claim.id, v.verdict, v.reproduced) for v in data.verdicts] == \
        [(v.claim.id, v.verdict, v.reproduced) for v in site.verdicts]
    assert data.rdir == f"results/{version}" and data.pool is not None
