"""Publishing: a complete run at one clean commit becomes an immutable version with a manifest; everything else
is refused in one line, before anything is copied, leaving earlier versions untouched. Then the site of every
version, stamped, with a selector and a comparison, rebuilt without training."""
from __future__ import annotations

import copy
import functools
import json
import shutil
import subprocess

import pandas as pd
import pytest
import yaml

from attnlab.config import load
from attnlab.crate import CRATE, WORKFLOW, holding
from attnlab.errors import AttnlabError
from attnlab.provenance import read_json, write_json
from attnlab.registry import experiments as registered
from attnlab.runs import spec_from_config, train_settings
from attnlab.versions import MANIFEST, check_version, claim_ids, claim_ids_at, expected, publish, versions
from helpers import DAMAGE, REPO


def git(root, *args):
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def cfg():
    """The smoke profile cut to one run per training experiment (the checks read every run; fewer is faster)."""
    full = load(REPO / "config" / "smoke.yaml")
    out = copy.deepcopy(full)
    for e in registered(trains=True):
        runs = full.get(e.name) or {}
        out[e.name] = {name: runs[name] for name in list(runs)[:1]}
    return out


def write_run(results, cfg, commit, date="2026-11-30T10:00:00+00:00", device="cpu: x86_64 (2 threads)", steps=None):
    """A complete run of `cfg` in `results` whose every run file says it came from `commit`."""
    prov = {"commit": commit, "config_hash": "0" * 16, "profile": cfg["profile"], "device": device, "clocks": None,
            "torch": "2.13.0", "python": "3.11.9", "date": date, "wall_seconds": 60.0, "seed": 1337, "host": "t"}
    for rel in expected(cfg):
        path = results / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        run = path.parent.parent.name  # <experiment>/<run>/seed<k>/{metrics.json,curve.csv}
        if rel.endswith("metrics.json"):
            write_json(path, {"name": run, "spec": spec_from_config(cfg, run).to_dict(), "status": "ok",
                              "steps": steps or train_settings(cfg, run)["steps"], "provenance": prov})
        elif rel.endswith(".json"):
            write_json(path, {"ratio_paired_median": 1.01, "provenance": prov})
        elif rel == "claims.csv":
            path.write_text("claim_id,chapter_value,reproduced_value,verdict,note\n"
                            + "".join(f"{claim},1,1,reproduced,✓\n" for claim in claim_ids()))
        else:  # curve.csv: a row per step, as train.py logs it
            n = steps or train_settings(cfg, run)["steps"]
            path.write_text("step,lr,train_loss,val_loss\n"
                            + "".join(f"{k},0.001,5.0,{5.1 if k % 10 == 0 else ''}\n" for k in range(1, n + 1)))
    (results / "ladder" / next(iter(cfg["ladder"])) / "seed1337" / "ckpt.pt").write_bytes(b"weights")  # never published
    return results


def checkout(root, cfg):
    """A git checkout (clean, one commit) with a complete run of `cfg` from that commit in results/smoke."""
    (root / "src" / "attnlab" / "nn").mkdir(parents=True)
    (root / "src" / "attnlab" / "nn" / "model.py").write_text("# the model\n")
    (root / "docs").mkdir()
    (root / "docs" / "page.md").write_text("prose\n")
    (root / ".gitignore").write_text((REPO / ".gitignore").read_text())
    (root / "Snakefile").write_text((REPO / "Snakefile").read_text())  # the workflow a version's crate names
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    write_run(root / "results" / "smoke", cfg, git(root, "rev-parse", "--short=12", "HEAD"))
    return root


@pytest.fixture()
def project(tmp_path, cfg):
    return checkout(tmp_path / "project", cfg)


def commit_all(root, message="change"):
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


def test_a_complete_clean_run_becomes_a_version_with_its_manifest(project, cfg):
    head = git(project, "rev-parse", "--short=12", "HEAD")
    dest = publish(project / "results" / "smoke", cfg, root=project)
    assert dest.name == f"2026-11-30-smoke-cpu-{head[:7]}" and dest.parent == project / "results"
    m = read_json(dest / MANIFEST)
    assert m["commit"] == m["published_from"] == head and m["profile"] == "smoke" and m["hardware"] == "cpu"
    assert m["complete"] is True and m["experiments"] == [e.name for e in registered()]
    assert m["devices"] == ["cpu: x86_64 (2 threads)"] and m["gpu_clocks"] is None
    assert m["software"]["torch"] == ["2.13.0"] and m["software"]["at_publish"]["torch"]
    assert m["runs"]["files"] == len([r for r in expected(cfg) if r.endswith(".json")])
    assert m["runs"]["dag_wall_seconds"] == 60.0 and m["throughput_ratio"] == 1.01
    assert all((dest / rel).is_file() for rel in expected(cfg)) and (dest / "config.yaml").is_file()
    assert not list(dest.rglob("*.pt")), "checkpoints are never published"
    untracked = git(project, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert untracked and all(line.startswith(f"?? results/{dest.name}/") for line in untracked), \
        "the version is meant for git; the live run stays ignored"
    assert [v["version"] for v in versions(project)] == [dest.name]


def test_the_manifest_spans_the_whole_dag_and_names_the_gpu(project, cfg):
    results = project / "results" / "smoke"
    head = git(project, "rev-parse", "--short=12", "HEAD")
    write_run(results, cfg, head, device="NVIDIA H200")
    m = read_json(results / "data" / "stats.json")
    m["provenance"].update(date="2026-11-30T09:00:00+00:00", clocks={"sm_mhz": 1980})
    write_json(results / "data" / "stats.json", m)
    meta = read_json(publish(results, cfg, root=project) / MANIFEST)
    assert meta["hardware"] == "nvidia-h200" and meta["gpu_clocks"] == {"data/stats.json": {"sm_mhz": 1980}}
    assert meta["runs"]["first_started"] == "2026-11-30T08:59:00+00:00" and meta["runs"]["dag_wall_seconds"] == 3660


def test_some_experiments_alone_become_a_version_that_names_them(project, cfg):
    """What a GPU machine ran without the DAG (tools/gpu-benchmarks.sh) is published alone: only their files, a
    name and a manifest that say so; the other experiments' files need not exist."""
    results = project / "results" / "smoke"
    (results / "averaging" / "result.json").unlink()  # not among those published
    head = git(project, "rev-parse", "--short=12", "HEAD")
    dest = publish(results, cfg, root=project, only=["cost", "decode"])
    assert dest.name == f"2026-11-30-smoke-cpu-{head[:7]}-only-cost-decode"
    kept = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert kept == sorted([CRATE, WORKFLOW, "config.yaml", "cost/result.json", "decode/result.json", MANIFEST])
    m = read_json(dest / MANIFEST)
    assert m["experiments"] == ["cost", "decode"] and m["complete"] is False and m["runs"]["files"] == 2


def test_a_night_of_the_ladder_and_position_becomes_a_partial_version(project, cfg):
    """A CPU owner's chapter night (`runner chapter --only ladder position`, then `publish --only ladder
    position`): their runs alone, named by profile, hardware and commit; the other experiments may be missing."""
    results = project / "results" / "smoke"
    for rel in expected(cfg):
        if not rel.startswith(("ladder/", "position/")):
            (results / rel).unlink()
    head = git(project, "rev-parse", "--short=12", "HEAD")
    dest = publish(results, cfg, root=project, only=["ladder", "position"])
    assert dest.name == f"2026-11-30-smoke-cpu-{head[:7]}-only-ladder-position"
    kept = {str(p.relative_to(dest)).split("/")[0] for p in dest.rglob("*") if p.is_file()}
    assert kept == {"ladder", "position", "config.yaml", MANIFEST, WORKFLOW, CRATE}
    m = read_json(dest / MANIFEST)
    assert m["experiments"] == ["ladder", "position"] and m["complete"] is False


def test_some_runs_of_an_experiment_become_a_version_that_names_them(project, cfg):
    """A second look that adds seeds only to the runs its claim reads (`--only depth.E4-pre depth.E4-post`): their
    files alone, a name, manifest and crate that say which runs, and a version that checks whole; the experiment's
    other runs need not exist, its named runs must."""
    whole = copy.deepcopy(cfg) | {"depth": load(REPO / "config" / "smoke.yaml")["depth"]}
    results, head = project / "results" / "smoke", git(project, "rev-parse", "--short=12", "HEAD")
    write_run(results, whole, head)
    for run in ("E4-pre-warm", "E4-post-warm"):
        shutil.rmtree(results / "depth" / run)
    only = ["depth.E4-pre", "depth.E4-post"]
    (results / "depth" / "E4-post" / "seed1337" / "metrics.json").rename(results / "held.json")
    with pytest.raises(AttnlabError, match=r"is not a smoke run of depth.E4-pre, depth.E4-post: 1 run files missing "
                                           r"\(depth/E4-post/seed1337/metrics.json"):
        publish(results, whole, root=project, only=only)
    (results / "held.json").rename(results / "depth" / "E4-post" / "seed1337" / "metrics.json")
    dest = publish(results, whole, root=project, only=only)
    assert dest.name == f"2026-11-30-smoke-cpu-{head[:7]}-only-depth.E4-pre-depth.E4-post"
    assert sorted({str(p.relative_to(dest / "depth")).split("/")[0] for p in (dest / "depth").rglob("*")}) == [
        "E4-post", "E4-pre"]
    m = check_version(dest)
    assert m["experiments"] == ["depth"] and m["only"] == only and m["complete"] is False
    assert holding(m) == "depth (runs E4-pre, E4-post)" and holding({**m, "only": None}) == "depth"
    assert "only depth (runs E4-pre, E4-post)" in (dest / CRATE).read_text()


def test_the_cli_takes_the_experiments_spaced_or_comma_separated():
    from attnlab.cli import parser
    from attnlab.registry import named

    for only in (["ladder", "position"], ["ladder,position"], ["ladder,", "position"]):
        a = parser().parse_args(["publish", "--config", "chapter", "--results", "r", "--only", *only])
        assert named(a.only) == ["ladder", "position"]
    assert named(None) is None
    with pytest.raises(AttnlabError, match="unknown experiment 'ladders'"):
        named(["ladders"])


def test_a_partial_version_needs_its_own_files_and_known_names(project, cfg):
    (project / "results" / "smoke" / "decode" / "result.json").unlink()
    with pytest.raises(AttnlabError, match=r"is not a smoke run of cost, decode: 1 run files missing \(decode/"):
        publish(project / "results" / "smoke", cfg, root=project, only=["cost", "decode"])
    with pytest.raises(AttnlabError, match="unknown experiment 'costs'"):
        publish(project / "results" / "smoke", cfg, root=project, only=["costs"])
    assert sorted(p.name for p in (project / "results").iterdir()) == ["smoke"]


def refused(project, cfg, match):
    """Publishing fails with one line matching `match`, and the results/ folder is as it was."""
    before = sorted(p.relative_to(project) for p in (project / "results").rglob("*"))
    with pytest.raises(AttnlabError, match=match) as err:
        publish(project / "results" / "smoke", cfg, root=project)
    assert "\n" not in str(err.value)
    assert sorted(p.relative_to(project) for p in (project / "results").rglob("*")) == before
    return str(err.value)


def test_a_version_is_never_rewritten(project, cfg):
    dest = publish(project / "results" / "smoke", cfg, root=project)
    commit_all(project, "publish")
    manifest = (dest / MANIFEST).read_text()
    refused(project, cfg, f"version {dest.name} already exists")
    assert (dest / MANIFEST).read_text() == manifest


def test_a_dirty_tree_is_refused(project, cfg):
    (project / "src" / "attnlab" / "nn" / "model.py").write_text("# edited, not committed\n")
    assert "src/attnlab/nn/model.py" in refused(project, cfg, "cannot publish from a dirty tree")


def test_an_incomplete_run_is_refused(project, cfg):
    (project / "results" / "smoke" / "averaging" / "result.json").unlink()
    assert "averaging/result.json" in refused(project, cfg, "is not a complete smoke run: 1 run files missing")


def test_run_files_from_several_commits_are_refused(project, cfg):
    m = read_json(project / "results" / "smoke" / "scores" / "result.json")
    m["provenance"]["commit"] = "0123456789ab"
    write_json(project / "results" / "smoke" / "scores" / "result.json", m)
    refused(project, cfg, r"holds run files from 2 commits .*0123456789ab: 1 \(e.g. scores/result.json\)")


def test_runs_from_a_dirty_tree_are_refused(project, cfg):
    write_run(project / "results" / "smoke", cfg, git(project, "rev-parse", "--short=12", "HEAD") + "+dirty")
    refused(project, cfg, r"its runs were made from a dirty tree")


def test_runs_whose_code_changed_since_are_refused_but_prose_may_move_on(project, cfg):
    (project / "docs" / "page.md").write_text("better prose\n")
    commit_all(project, "prose")
    publish(project / "results" / "smoke", cfg, root=project)  # the docs shape no run file
    (project / "src" / "attnlab" / "nn" / "model.py").write_text("# a different model\n")
    commit_all(project, "model (and the version just published)")
    refused(project, cfg, r"since then 1 files that shape them changed \(src/attnlab/nn/model.py\)")


def test_a_partial_version_is_blocked_only_by_what_shapes_its_own_runs(project, cfg):
    """A night of the ladder and position, published after the tree moved on: another experiment's settings
    module and another profile's file shape none of its runs; its own experiments' settings modules (imported by
    name, so no import statement names them) and its profile's file do."""
    results = project / "results" / "smoke"
    for name in ("cost", "ladder"):
        (project / "src" / "attnlab" / "experiments" / name).mkdir(parents=True)
    (project / "config").mkdir()
    profile = yaml.safe_dump(cfg, sort_keys=False)  # a profile publish can read, to name what was laid over it
    for rel in ("src/attnlab/experiments/cost/settings.py", "src/attnlab/experiments/ladder/settings.py", "config/chapter.yaml",
                "config/smoke.yaml"):
        (project / rel).write_text(profile * rel.endswith("smoke.yaml") + "# as the runs had it\n")
    commit_all(project, "the files the runs were made with")
    write_run(results, cfg, git(project, "rev-parse", "--short=12", "HEAD"))
    for rel in ("src/attnlab/experiments/cost/settings.py", "config/chapter.yaml"):
        (project / rel).write_text("# changed since\n")
    commit_all(project, "another experiment's settings, another profile")
    publish(results, cfg, root=project, only=["ladder", "position"])
    commit_all(project, "the version")
    with pytest.raises(AttnlabError, match=r"since then 1 files that shape them changed \(src/attnlab/experiments/cost/settings"):
        publish(results, cfg, root=project, only=["cost"])
    for rel in ("src/attnlab/experiments/ladder/settings.py", "config/smoke.yaml"):
        (project / rel).write_text("# changed since\n")
        commit_all(project, rel)
        with pytest.raises(AttnlabError, match=rf"since then 1 files that shape them changed \({rel}\)"):
            publish(results, cfg, root=project, only=["ladder", "position"])
        (project / rel).write_text(profile * rel.endswith("smoke.yaml") + "# as the runs had it\n")
        commit_all(project, f"{rel} back")


def test_runs_trained_with_other_settings_are_refused(project, cfg):
    write_run(project / "results" / "smoke", cfg, git(project, "rev-parse", "--short=12", "HEAD"), steps=3)
    refused(project, cfg, r"was trained with other settings than profile 'smoke' declares")


def test_the_cli_refuses_in_one_line(project, cfg, capsys):
    from attnlab.cli import main

    (project / "stray.txt").write_text("untracked\n")
    assert main(["publish", "--config", str(REPO / "config" / "smoke.yaml"),
                 "--results", str(project / "results" / "smoke")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnlab: error: cannot publish from a dirty tree") and "\n" not in err


def test_the_cli_publishes_the_run_as_the_runners_set_described_it(project, cfg, capsys):
    """`publish --set seeds=[...]`: the seeds (or any setting) the runner was given, so a night at one seed of the
    chapter is published as that, and its files are looked for at those seeds; a bad setting is one line."""
    from attnlab.cli import main

    results = str(project / "results" / "smoke")
    smoke = str(REPO / "config" / "smoke.yaml")
    assert main(["publish", "--config", smoke, "--results", results, "--set", "seeds=[1338]"]) == 2
    err = capsys.readouterr().err.strip()
    assert "run files missing" in err and "seed1338" in err and "\n" not in err
    assert main(["publish", "--config", smoke, "--results", results, "--set", "seeds"]) == 2
    assert capsys.readouterr().err.strip() == ("attnlab: error: 'seeds' is not a setting: give KEY=VALUE "
                                               "(e.g. seeds=[1337])")


def test_a_version_run_with_settings_laid_over_its_profile_says_so_in_its_name_manifest_and_stamp(tmp_path, cfg):
    """`runner quick --set 'train={precision: bf16}'`, then `publish --set` the same: the version's name, its
    manifest (`set`) and the stamp on its pages name each setting laid over the profile's file; a version run
    as its file stands has none."""
    from attnlab.config import merged, validate
    from attnlab.report.site import holds

    filed = tmp_path / "smoke.yaml"
    filed.write_text(yaml.safe_dump(cfg, sort_keys=False))  # the profile's file
    as_filed = load(filed)
    bf16 = validate(merged(as_filed, {"train": {"precision": "bf16"}}))
    for label, run_cfg, laid in (("as filed", as_filed, {}), ("bf16", bf16, {"train.precision": "bf16"})):
        root = tmp_path / label
        (root / "config").mkdir(parents=True)
        shutil.copy(filed, root / "config" / "smoke.yaml")
        checkout(root, run_cfg)
        dest = publish(root / "results" / "smoke", run_cfg, root=root, only=["ladder"])
        m = read_json(dest / MANIFEST)
        assert m["set"] == laid
        assert dest.name.endswith("-only-ladder" + ("-set-train.precision" if laid else ""))
        stamp = holds(m)
        assert ("set over its profile: <code>train.precision</code>\u00a0=\u00a0bf16" in stamp) == bool(laid)
    assert holds({"complete": True, "set": None}) == ""  # a version published before `set` was recorded


def test_outside_git_a_run_records_the_given_commit_or_unknown(tmp_path, monkeypatch):
    """A tree copied to a GPU machine has no .git: its run files carry $ATTNLAB_COMMIT, marked as given, or
    'unknown' (which publish refuses); inside a checkout the variable is ignored."""
    from attnlab.provenance import GIVEN_COMMIT, record

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(GIVEN_COMMIT, raising=False)
    assert (record({})["commit"], record({})["commit_given"]) == ("unknown", None)
    monkeypatch.setenv(GIVEN_COMMIT, "0123456789ab")
    assert (record({})["commit"], record({})["commit_given"]) == ("0123456789ab", True)
    monkeypatch.chdir(REPO)
    assert record({})["commit"].split("+")[0] == git(REPO, "rev-parse", "--short=12", "HEAD")
    assert record({})["commit_given"] is None


NEWEST = next(m["version"] for m in versions(REPO) if m.get("complete", True))  # it holds every kind of file


def one_line_error(capsys, argv) -> str:
    """The CLI's one line of error output for `argv`, which must fail without a traceback."""
    from attnlab.cli import main

    code, err = main(argv), capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize("verb, case", [(verb, case) for case, (_, _, verbs) in DAMAGE.items() for verb in verbs])
def test_a_damaged_file_is_refused_in_one_line_naming_it(verb, case, tmp_path, capsys, monkeypatch):
    """`publish` checks every file it would copy, and `versions` every file of every version before building any
    site: a damaged one is named in one line, and nothing is published or built."""
    from attnlab.report import build

    damage, name, _ = DAMAGE[case]
    if verb == "publish":
        root = checkout(tmp_path / "project", load(REPO / "config" / "smoke.yaml"))
        path = damage(root / "results" / "smoke")
        line = one_line_error(capsys, ["publish", "--config", str(REPO / "config" / "smoke.yaml"),
                                       "--results", str(root / "results" / "smoke")])
        assert sorted(p.name for p in (root / "results").iterdir()) == ["smoke"]
    else:
        shutil.copytree(REPO / "results" / NEWEST, tmp_path / "results" / NEWEST)
        path = damage(tmp_path / "results" / NEWEST)
        monkeypatch.setattr(build, "build_versions", functools.partial(build.build_versions, root=tmp_path))
        line = one_line_error(capsys, ["versions", "--site", str(tmp_path / "site")])
        assert not (tmp_path / "site" / NEWEST).exists()
    assert path.name == name and str(path) in line, line


def test_a_run_file_field_of_the_wrong_type_is_named_with_the_file_not_as_a_claims_error(tmp_path):
    """A count written as text once surfaced as claim C2.8's TypeError, after other versions' sites were built."""
    shutil.copytree(REPO / "results" / NEWEST, tmp_path / NEWEST)
    path = sorted((tmp_path / NEWEST / "ladder").rglob("metrics.json"))[0]
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "n_params": str(doc["n_params"])}))
    with pytest.raises(AttnlabError) as err:
        check_version(tmp_path / NEWEST)
    assert str(err.value) == (f"run file {path}: its field 'n_params' is '{doc['n_params']}' (a str), not a count: "
                              "it is garbled")


def test_every_complete_version_holds_the_claims_of_the_registry_it_was_published_with():
    """What check_version holds a version's claims.csv to (as publish did): the registry at its publishing commit,
    from git; a commit this checkout lacks (or text that is no commit) checks it row by row only."""
    for m in versions(REPO):
        if (REPO / "results" / m["version"] / "claims.csv").is_file():
            rows = pd.read_csv(REPO / "results" / m["version"] / "claims.csv")
            assert sorted(claim_ids_at(m["published_from"], REPO)) == sorted(set(rows["claim_id"])), m["version"]
    assert claim_ids_at("0" * 12, REPO) is None and claim_ids_at("--output=x", REPO) is None


def test_a_damaged_run_file_is_named_wherever_results_are_read(project):
    """A live results folder too: the report reads every JSON run file through the same checks."""
    from attnlab.results import gather

    metrics = sorted((project / "results" / "smoke").rglob("metrics.json"))[0]
    metrics.write_text(metrics.read_text()[:40])
    with pytest.raises(AttnlabError, match=f"run file {metrics} cannot be read as JSON") as err:
        gather(project / "results" / "smoke")
    assert "\n" not in str(err.value)


# ------------------------------------------------------------ the version of record

def test_the_version_of_record_is_the_one_results_latest_names(project, cfg):
    """`publish --latest` writes results/LATEST; without the file, the newest complete version is the record; a
    file that names no version is one line; a version of some experiments alone cannot be the record."""
    from attnlab.versions import LATEST, latest

    assert latest(project) is None
    first = publish(project / "results" / "smoke", cfg, root=project, record=True)
    assert (project / "results" / LATEST).read_text() == first.name + "\n" and latest(project) == first.name
    (project / "results" / LATEST).write_text("2026-01-01-smoke-cpu-nothere\n")
    with pytest.raises(AttnlabError, match=r"names '2026-01-01-smoke-cpu-nothere', which is not a published") as err:
        latest(project)
    assert "\n" not in str(err.value)
    (project / "results" / LATEST).unlink()
    assert latest(project) == first.name
    with pytest.raises(AttnlabError, match="only some experiments cannot be the version of record"):
        publish(project / "results" / "smoke", cfg, root=project, only=["cost"], record=True)


# ------------------------------------------------------------ the compare page's readings

def verdict(value, verdict="reproduced", se=None):
    from attnlab.claims.registry import Claim
    from attnlab.claims.verdicts import Verdict

    return Verdict(Claim("T1", "t", 1, {"": "1"}, {"": {"equals": 1}}, "t"), verdict, value, se={"": se} if se else {})


def test_a_claim_measured_in_one_version_only_is_not_a_changed_verdict():
    from attnlab.comparison import status

    assert status(verdict(1.0), verdict(1.0)) == "same"
    assert status(verdict(1.0), verdict(1.0, "not reproduced")) == "changed"
    assert status(verdict(1.0), verdict(None, "not run")) == "only here"
    assert status(verdict(None, "not run"), verdict(1.0, "inconclusive")) == "only there"
    assert status(verdict(None, "not run"), verdict(None, "not run")) == "neither"


def test_the_tally_counts_each_kind_of_change_by_name():
    from attnlab.report.pages.compare import tally

    assert tally({"C1": "same", "C2": "same"}) == "<strong>2</strong> of 2 claims have the same verdict in both."
    assert tally({"C1": "same", "C2": "changed", "C3": "only here", "C4": "only there", "C5": "changed"}) == (
        "<strong>1</strong> of the 3 claims measured in both have the same verdict; changed: C2, C5; only here "
        "(not run there): C3; only there (not run here): C4.")
    assert tally({"C1": "same", "C6.3": "neither"}) == (  # a claim run in neither is not "the same" in both
        "<strong>1</strong> of the 1 claims measured in both have the same verdict; not run in either: C6.3.")
    assert tally({"C1": "neither"}).startswith("<strong>0</strong> of the 0 claims measured in both")


@pytest.mark.parametrize("diff, se, words", [
    (0.5, None, "+0.5"), (-0.5, None, "-0.5"),              # no error: the difference alone
    (0.5, 0.25, "+0.5\u00a0±\u00a00.25 (within the noise)"),  # exactly two errors: not clear of the noise
    (0.51, 0.25, "+0.51\u00a0±\u00a00.25"),                  # just past: a change
    (-0.51, 0.25, "-0.51\u00a0±\u00a00.25"),
    (-0.49, 0.25, "-0.49\u00a0±\u00a00.25 (within the noise)"),
])
def test_a_change_of_value_is_read_as_one_only_past_two_standard_errors(diff, se, words):
    from attnlab.report.pages.compare import change_words

    assert change_words(diff, se) == words


def test_the_change_column_combines_both_errors_and_skips_what_is_not_a_number():
    from attnlab.report.pages.compare import change

    assert change(verdict(1.3, se=0.3), verdict(1.0, se=0.4)) == "+0.3\u00a0±\u00a00.5 (within the noise)"
    assert change(verdict(2.5, se=0.3), verdict(1.0)) == "+1.5\u00a0±\u00a00.3"
    parts = change(verdict({"a": 2.0, "b": "text"}), verdict({"a": 1.5, "b": "text"}))
    assert '<span class="part-name">a</span> +0.5' in parts and ">b<" not in parts
    assert change(verdict(1.0), verdict(None, "not run")) == change(verdict(True), verdict(False)) == "–"


def test_a_comparison_warns_where_the_two_versions_ran_other_settings():
    from attnlab.report.pages.compare import profile_warning

    here = {"profile": "quick", "seeds": [1337, 1338, 1339], "digest": "57894f82c260d470"}
    assert profile_warning(here, dict(here)) == ""
    fewer = profile_warning(here, {**here, "seeds": [1337], "digest": "17ea790277d72f1a"})
    assert "seeds 1337, 1338, 1339 here, 1337 there; profile digest <code>57894f82c260d470</code> here, " \
           "<code>17ea790277d72f1a</code> there." in fewer and "admonition warning" in fewer
    digest_only = profile_warning(here, {**here, "digest": "0000000000000000"})
    assert "seeds" not in digest_only and "profile digest" in digest_only
    assert "profile quick here, smoke there" in profile_warning(here, {**here, "profile": "smoke"})


def test_a_comparison_names_the_settings_that_differ_and_counts_the_rest():
    from attnlab.report.pages.compare import profile_warning
    from attnlab.versions import leaves

    cfg = {"profile": "quick", "seeds": [1337], "train": {"steps": 800, "lr": 1e-3}, "ladder": {"L1": {}}}
    assert leaves(cfg) == {"profile": "quick", "seeds": [1337], "train.steps": 800, "train.lr": 1e-3,
                           "ladder.L1": {}}
    settings = leaves({"train": cfg["train"], "ladder": cfg["ladder"]})
    here = {"profile": "quick", "seeds": [1337], "digest": "a", "settings": settings}
    bf16 = {**here, "digest": "b", "settings": {**settings, "train.precision": "bf16"}}
    assert "The settings that differ: <code>train.precision</code> unset here, bf16 there." in \
        profile_warning(here, bf16)
    assert "threads" not in profile_warning(here, {**bf16, "settings": {**bf16["settings"], "threads": None}})
    same = {**here, "digest": "b"}  # a digest that moved with nothing named
    assert "settings that differ" not in profile_warning(here, same)
    many = {**here, "digest": "c", "settings": {f"x.k{i}": i for i in range(7)}}
    told = profile_warning(here, many)
    assert "<code>ladder.L1</code> {} here, unset there" in told and "; and 6 more." in told
    assert "x.k0" in told and "x.k1" not in told  # named: train.lr, train.steps (every run's), ladder.L1, x.k0
    assert told.index("train.steps") < told.index("ladder.L1")


def test_a_csv_whose_last_row_lost_its_end_is_cut_even_with_every_field(tmp_path):
    from attnlab.runfiles import check_claims

    whole = "claim_id,chapter_value,verdict,note\nC2.1,4,reproduced,within the interval\n"
    (tmp_path / "claims.csv").write_text(whole)
    check_claims(tmp_path / "claims.csv")
    (tmp_path / "claims.csv").write_text(whole[:-6])  # the note cut short: four fields still
    with pytest.raises(AttnlabError, match="does not end with a line end: its last row is cut"):
        check_claims(tmp_path / "claims.csv")


@pytest.mark.parametrize("speed, rows", [({}, []), ({"precision": "bf16"}, ["| precision | bf16 |"])])
def test_the_settings_table_shows_a_speed_setting_only_where_the_profile_sets_it(cfg, speed, rows):
    from types import SimpleNamespace

    from attnlab.report.site import Site

    table = Site.settings_table(SimpleNamespace(config={**cfg, "train": {**cfg["train"], **speed}}, profile="smoke",
                                                seeds=lambda: cfg["seeds"], pool=None))
    assert [line for line in table.splitlines() if "precision" in line] == rows


def test_a_night_of_one_seed_lays_one_setting_the_seeds(tmp_path):
    """`--set 'seeds=[1338]'` lays the seeds; the first seed that follows them is not a second setting, so the
    version is named by the seeds alone (-set-seeds-1338), as the README says."""
    from attnlab.config import chosen, command_line, validate
    from attnlab.versions import laid_over

    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config" / "chapter.yaml", tmp_path / "config" / "chapter.yaml")
    night = validate(chosen({"profile": "chapter", **command_line(["seeds=[1338]"])}, []))
    assert night["seed"] == 1338 and laid_over(night, tmp_path) == {"seeds": [1338]}
    both = validate(chosen({"profile": "chapter", **command_line(["seeds=[1338]", "train={steps: 10}"])}, []))
    assert laid_over(both, tmp_path) == {"seeds": [1338], "train.steps": 10}
    as_filed = validate(chosen({"profile": "chapter"}, []))
    assert laid_over(as_filed, tmp_path) == {}


def test_nights_of_other_seeds_at_one_commit_and_day_have_other_names():
    """Two nights' versions of one commit, published the same day, differed only in their seeds and were given one
    name (the second was moved into the first's folder): the seeds a version lays name it."""
    from attnlab.versions import laid_name, version_name

    prov = {"x.json": {"date": "2026-12-06T10:00:00+00:00", "device": "cpu"}}
    named = lambda laid: version_name({"profile": "chapter"}, prov, "680862e0", ["ladder"], laid)  # noqa: E731
    assert named({"seeds": [1340]}) == "2026-12-06-chapter-cpu-680862e-only-ladder-set-seeds-1340"
    assert named({"seeds": [1341, 1342]}) != named({"seeds": [1340]})
    assert named({"seeds": [1341, 1342], "train.precision": "fp32"}).endswith("-set-seeds-1341-1342-train.precision")
    assert laid_name("seeds", list(range(1340, 1347))) == "seeds-1340to1346"
    assert laid_name("seeds", [1337, 1340, 1342, 1350]).startswith("seeds-") and \
        laid_name("seeds", [1337, 1340, 1342, 1350]) != laid_name("seeds", [1337, 1340, 1342, 1351])
    assert laid_name("train.precision", "fp32") == "train.precision"


def test_the_settings_table_ends_before_its_note_and_its_hashes_may_break(cfg):
    """Rendered as the site renders it (Markdown's tables): the note under the table is a paragraph, not one more
    row (it was: a narrow first cell holding a paragraph), and the 64-digit hashes carry the class that lets them
    break on a phone."""
    from types import SimpleNamespace

    import markdown

    from attnlab.report.site import Site

    cfg = {**cfg, "data": {**cfg["data"], "sha256": "ab" * 32}}
    html = markdown.markdown(Site.settings_table(SimpleNamespace(config=cfg, profile="smoke", seeds=lambda: cfg["seeds"],
                                                                 pool=None)), extensions=["tables"])
    table, _, after = html.partition("</table>")
    assert "The profile digest hashes" not in table and after.strip().startswith("<p>The profile digest hashes")
    assert f'<td><span class="hash">{"ab" * 32}</span></td>' in table and table.count('class="hash"') == 2
