"""Every version is a Workflow Run RO-Crate: its ro-crate-metadata.json, read back with `rocrate`, lists exactly the
files the version holds with their sha256 and size and says what the manifest says of the run; roc-validator finds
it valid at the Workflow Run Crate profile's required level without the network; and a crate that disagrees with
its files is refused in one line, before any site is built."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from attnlab.crate import CRATE, NOT_RESULTS, OBJECT, WORKFLOW, check_crate, held
from attnlab.errors import AttnlabError
from attnlab.versions import check_version, versions
from crates import refusing_network, validate, warmed
from helpers import REPO

PUBLISHED = [m["version"] for m in versions(REPO)]
SMALLEST = min(PUBLISHED, key=lambda v: sum(p.stat().st_size for p in (REPO / "results" / v).rglob("*")))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return warmed(tmp_path_factory.mktemp("rocrate") / "http_cache")


@pytest.mark.parametrize("version", PUBLISHED)
def test_a_committed_crate_reads_back_with_rocrate_as_its_files_and_manifest_are(version):
    from rocrate.rocrate import ROCrate

    folder = REPO / "results" / version
    crate, manifest = ROCrate(folder), json.loads((folder / "manifest.json").read_text())
    files = {e.id: e for e in crate.data_entities if "File" in e.type}
    assert sorted(files) == held(folder) and CRATE not in files
    for rel, entity in files.items():
        data = (folder / rel).read_bytes()
        assert (entity["sha256"], entity["contentSize"]) == (hashlib.sha256(data).hexdigest(), str(len(data))), rel
    workflow = crate.mainEntity
    assert workflow.id == WORKFLOW and {"File", "SoftwareSourceCode", "ComputationalWorkflow"} <= set(workflow.type)
    assert workflow["version"] == manifest["commit"]
    assert (folder / WORKFLOW).read_text() == git_show(f"{manifest['commit']}:Snakefile")
    run = crate.root_dataset["mentions"][0]
    assert run.type == "CreateAction" and run["instrument"] is workflow
    assert [e.id for e in run["object"]] == [OBJECT]
    assert sorted(e.id for e in run["result"]) == sorted(set(files) - set(NOT_RESULTS))
    assert set(manifest["runs"].get("run_files", [])) <= {e.id for e in run["result"]}
    assert (run["startTime"], run["endTime"]) == (manifest["runs"]["first_started"], manifest["runs"]["last_finished"])
    said = {(p["propertyID"], p["value"]) for p in run["additionalProperty"]}
    assert ("hardware", manifest["hardware"]) in said and {("device", d) for d in manifest["devices"]} <= said
    clocks = {(k, v) for c in (manifest["gpu_clocks"] or {}).values() for k, v in c.items()}
    assert {(f"gpu_clocks.{k}", v) for k, v in clocks} <= said
    apps = {(a["name"], a["softwareVersion"]) for a in workflow["softwareRequirements"]}
    assert {("python", v) for v in manifest["software"]["python"]} | {("attnlab", manifest["commit"])} <= apps
    assert {("torch", v) for v in manifest["software"]["torch"]} <= apps
    assert crate.root_dataset["datePublished"] == manifest["published"]


def git_show(spec: str) -> str:
    import subprocess

    return subprocess.run(["git", "show", spec], cwd=REPO, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("version", PUBLISHED)
def test_a_committed_crate_is_a_valid_workflow_run_crate_offline(version, cache, monkeypatch):
    tried = refusing_network(monkeypatch)
    assert validate(REPO / "results" / version, cache) == []
    assert tried == [], "validation reached for the network"


def test_the_validator_refuses_a_crate_without_its_run(tmp_path, cache, monkeypatch):
    """What the validation above would say of a crate the profile does not accept: the run is the profile's core."""
    folder = shutil.copytree(REPO / "results" / SMALLEST, tmp_path / SMALLEST)
    doc = json.loads((folder / CRATE).read_text())
    doc["@graph"] = [e for e in doc["@graph"] if e["@id"] != "#run"]
    next(e for e in doc["@graph"] if e["@id"] == "./").pop("mentions")
    (folder / CRATE).write_text(json.dumps(doc))
    refusing_network(monkeypatch)
    issues = validate(folder, cache)
    assert issues and any("instrument" in issue for issue in issues), issues


@pytest.mark.parametrize("damage, said", [
    (lambda f: (f / CRATE).unlink(), "has no RO-Crate: {crate} is missing"),
    (lambda f: (f / CRATE).write_bytes((f / CRATE).read_bytes()[:500]), "RO-Crate {crate} cannot be read as JSON"),
    (lambda f: (f / CRATE).write_text(json.dumps({"@context": "x"})), "RO-Crate {crate} has no @graph"),
    (lambda f: (f / WORKFLOW).unlink(), "its RO-Crate {crate} lists {folder}/Snakefile, which is missing"),
    (lambda f: (f / "notes.txt").write_text("a note\n"), "holds {folder}/notes.txt, which its RO-Crate {crate} does not list"),
    (lambda f: (f / "config.yaml").write_text((f / "config.yaml").read_text() + "\n"),
     "{folder}/config.yaml is not the file its RO-Crate {crate} records"),
])
def test_a_crate_that_disagrees_with_its_files_is_one_line(damage, said, tmp_path):
    folder = shutil.copytree(REPO / "results" / SMALLEST, tmp_path / SMALLEST)
    check_crate(folder)
    damage(folder)
    with pytest.raises(AttnlabError) as err:
        check_version(folder)
    assert said.format(crate=folder / CRATE, folder=folder) in str(err.value) and "\n" not in str(err.value)


def test_publish_writes_a_crate_that_validates_offline(tmp_path, cache, monkeypatch):
    from attnlab.config import load
    from attnlab.versions import publish
    from test_versions import checkout

    cfg = load(REPO / "config" / "smoke.yaml")
    root = checkout(tmp_path / "project", cfg)
    dest = publish(root / "results" / "smoke", cfg, root=root)
    assert check_version(dest)["version"] == dest.name
    assert (dest / WORKFLOW).read_bytes() == (root / WORKFLOW).read_bytes() and (dest / "claims.csv").is_file()
    tried = refusing_network(monkeypatch)
    assert validate(dest, cache) == [] and tried == []


def test_publish_without_a_snakefile_is_one_line_and_publishes_nothing(tmp_path):
    from attnlab.config import load
    from attnlab.versions import publish
    from test_versions import checkout, commit_all, git, write_run

    cfg = load(REPO / "config" / "smoke.yaml")
    root = checkout(tmp_path / "project", cfg)
    (root / WORKFLOW).unlink()
    commit_all(root, "no workflow")
    write_run(root / "results" / "smoke", cfg, git(root, "rev-parse", "--short=12", "HEAD"))  # run without one
    with pytest.raises(AttnlabError, match=f"{root} has no Snakefile: a version's RO-Crate names") as err:
        publish(root / "results" / "smoke", cfg, root=root, only=["cost"])
    assert "\n" not in str(err.value) and sorted(p.name for p in (root / "results").iterdir()) == ["smoke"]
