"""The experiments whose settings differ between two profiles, as the plan sees them, listed on the home page."""
import copy

import yaml

from attnlab.config import load
from attnlab.report.differences import differences_text, shown
from attnlab.versions import differences
from attnlab.report.pages import index
from helpers import REPO, rendered_page, site_for

SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())


def profile(tmp_path, file: str, edit=lambda p: None, name: str = "smoke") -> dict:
    """The smoke profile file, edited, named `name`, written to `file` and loaded as any profile is (resolved,
    validated)."""
    doc = copy.deepcopy(SMOKE)
    doc["profile"] = name
    edit(doc)
    path = tmp_path / f"{file}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load(path)


def test_two_profiles_that_differ_in_one_experiment_list_only_that_one(tmp_path):
    before = profile(tmp_path, "one")
    after = profile(tmp_path, "two", lambda p: p.setdefault("multihead", {}).update(repeats=7), name="quick")
    assert list(differences(before, after)) == ["multihead"]
    text = differences_text(before, after)
    lines = [x for x in text.splitlines() if x.startswith("- ")]
    assert lines == [f"- [S4 · Multi-head cost](multihead.md): `multihead.repeats` {before['multihead']['repeats']} → 7"]
    assert "between the `smoke` and `quick` profiles (1 of" in text


def test_a_run_of_its_own_is_named_and_a_shared_setting_every_run_overrides_is_no_difference(tmp_path):
    def l2_longer(p):
        p.setdefault("ladder", {}).setdefault("L2", {})["train"] = {"steps": 99}

    before = profile(tmp_path, "one")
    found = differences(before, profile(tmp_path, "two", l2_longer))
    assert list(found) == ["ladder"] and [(d.setting, d.after, d.runs) for d in found["ladder"]] == \
        [("train.steps", 99, ("L2",))]

    def every_depth_run_keeps_its_steps(p):  # the profile's steps change, but every depth run sets its own
        p["train"]["steps"] += 1
        p.setdefault("depth", {}).setdefault("base", {}).setdefault("train", {})["steps"] = before["depth"]["E4-pre"]["train"]["steps"]

    assert "depth" not in differences(before, profile(tmp_path, "three", every_depth_run_keeps_its_steps))


def test_identical_profiles_say_so(tmp_path):
    assert differences_text(profile(tmp_path, "one"), profile(tmp_path, "two", name="quick")) == \
        "The `smoke` and `quick` profiles set every experiment alike.\n"


def test_a_long_list_is_shown_by_its_ends():
    assert shown([1, 2, 3, 4, 5]) == "[1, …, 5] (5)" and shown([1, 2]) == "[1, 2]" and shown(None) == "not set"


def test_the_home_page_lists_what_the_chapter_budget_changes(tmp_path):
    """Every experiment the issue names as changed by the chapter's budget is on the list, read from the
    profile files; the ones the two profiles set alike are not."""
    found = differences(load(REPO / "config" / "quick.yaml"), load(REPO / "config" / "chapter.yaml"))
    assert {"ladder", "position", "depth", "scaling", "winograd", "induction", "grouping", "seq2seq"} <= set(found)
    assert not {"data", "averaging", "params", "equivalence"} & set(found)
    text = rendered_page(site_for(tmp_path, load(REPO / "config" / "quick.yaml")), "index", index.blocks)
    listed = [x for x in text.splitlines() if x.startswith("- [") and "→" in x]
    assert [x.split("](")[1].split(".md")[0] for x in listed] == list(found)


def test_the_gpu_script_runs_every_listed_experiment_at_three_seeds():
    """tools/gpu-chapter.sh chapter --dry-run: the jobs the prepared GPU run would start (checked as it checks them,
    on this machine, run none) hold every experiment the chapter's budget changes, each training run at 1337,
    1338 and 1339."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from attnlab.plan import plan

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO / "src")}
    env.pop("OUT", None)
    proc = subprocess.run(["bash", "tools/gpu-chapter.sh", "chapter", "12", "--dry-run"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    listed = {x.strip() for x in proc.stdout.splitlines() if x.startswith("  ")}
    chapter = load(REPO / "config" / "chapter.yaml")
    assert chapter["seeds"] == [1337, 1338, 1339] and "none run" in proc.stdout
    for name in differences(load(REPO / "config" / "quick.yaml"), chapter):
        wanted = {job.name for job in plan(chapter, [name])}
        assert wanted and wanted <= listed, (name, sorted(wanted - listed)[:3])
        runs = {job.run for job in plan(chapter, [name]) if job.run}
        assert {f"{name}/{run}/seed{seed}" for run in runs for seed in chapter["seeds"]} <= listed
