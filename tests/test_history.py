"""A claim's history across versions: every version that measured it, oldest commit first; a step where its value
moved beyond the noise or its verdict changed since the previous version of its budget, naming the commits that
touched its code and the settings that differ; bad input in one line."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from attnlab.errors import AttnlabError
from attnlab.history import compared, history, lines
from helpers import REPO, crated

CHAPTER = REPO / "results" / "2026-12-02-chapter-cpu-680862e-only-ladder-position-set-seeds"
A, B = "2026-12-03-chapter-cpu-aaaaaaa-only-ladder-position", "2026-12-04-chapter-cpu-bbbbbbb-only-ladder-position"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def commit(root: Path, path: str, text: str, message: str) -> str:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)
    git(root, "add", path)
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD")


def version(root: Path, name: str, sha: str, when: str, l4_times: float = 1.0, lr: float | None = None) -> None:
    """The committed chapter version as `name`, made at `sha`, its L4 perplexity scaled, its learning rate set."""
    folder = root / "results" / name
    shutil.copytree(CHAPTER, folder)
    metrics = folder / "ladder" / "L4" / "seed1337" / "metrics.json"
    m = json.loads(metrics.read_text())
    m["val_ppl"] *= l4_times
    metrics.write_text(json.dumps(m))
    if lr is not None:
        cfg = yaml.safe_load((folder / "config.yaml").read_text())
        cfg["train"]["lr"] = lr
        (folder / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(version=name, commit=sha, published=when)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    crated(folder)


@pytest.fixture
def project(tmp_path):
    """Two chapter versions two commits apart: the first of those commits touches the training loop (a file the
    ladder's runs rest on), the second only the README; and one setting apart (the learning rate)."""
    git(tmp_path, "init", "-q")
    first = commit(tmp_path, "src/attnlab/train.py", "one\n", "the loop as it was")
    commit(tmp_path, "src/attnlab/train.py", "two\n", "a change to the training loop")
    last = commit(tmp_path, "README.md", "words\n", "words only")
    version(tmp_path, A, first, "2026-12-03T09:00:00+00:00")
    version(tmp_path, B, last, "2026-12-04T09:00:00+00:00", l4_times=1.2, lr=0.002)
    return tmp_path


def test_a_step_names_the_commit_that_touched_the_code_and_the_setting(project):
    rows = history("C2.3", project)
    assert [r.version for r in rows] == [A, B]
    assert rows[0].step is None
    step = rows[1].step
    assert step.since == A and set(step.moved) == {""} and step.moved[""]["diff"] > 0
    assert str(step.was) == "reproduced" and str(rows[1].verdict.verdict) == "not reproduced"
    assert [subject for _, subject in step.commits] == ["a change to the training loop"]
    assert [(d.setting, d.before, d.after) for d in step.settings] == [("train.lr", 0.001, 0.002)]
    text = "\n".join(lines(rows))
    assert "◆ since " + A in text and "a change to the training loop" in text and "train.lr 0.001 → 0.002" in text


def test_nothing_moved_is_no_step(project):
    shutil.rmtree(project / "results" / B)
    version(project, B, git(project, "rev-parse", "HEAD"), "2026-12-04T09:00:00+00:00")
    rows = history("C2.3", project)
    assert len(rows) == 2 and rows[1].step is None and "◆" not in "\n".join(lines(rows))


def test_versions_of_another_budget_stay_in_the_table_but_are_never_compared(project):
    quick = "2026-12-02-quick-cpu-4303899"
    shutil.copytree(REPO / "results" / quick, project / "results" / quick)
    m = json.loads((project / "results" / quick / "manifest.json").read_text())
    m["commit"] = git(project, "rev-parse", "HEAD~2")
    (project / "results" / quick / "manifest.json").write_text(json.dumps(m))
    crated(project / "results" / quick)
    rows = history("C2.3", project)
    assert quick in [r.version for r in rows]
    assert next(r for r in rows if r.version == quick).step is None  # the only quick one: nothing to compare
    assert next(r for r in rows if r.version == B).step.since == A


def test_an_unknown_claim_is_one_line_naming_the_nearest(project):
    with pytest.raises(AttnlabError) as err:
        history("C2.33", project)
    assert "\n" not in str(err.value) and "no claim 'C2.33'" in str(err.value) and "C2.3" in str(err.value)


def test_a_claim_one_version_measured_is_refused_in_one_line(project):
    shutil.rmtree(project / "results" / B)
    with pytest.raises(AttnlabError) as err:
        compared("C2.3", project)
    assert "\n" not in str(err.value) and f"only one version measured C2.3 ({A})" in str(err.value)
    shutil.rmtree(project / "results" / A)
    with pytest.raises(AttnlabError, match="no published version measured C2.3"):
        compared("C2.3", project)


def test_the_sentence_names_the_steps_or_says_there_were_none(project):
    from attnlab.report.history_page import sentence

    rows = history("C2.3", project)
    said = sentence("C2.3", rows)
    assert said.startswith("2 published versions measured C2.3; it stepped 1 time: at " + B + ", since " + A)
    assert "its verdict went from reproduced to not reproduced" in said and "its value moved by" in said
    assert "1 commit between them touched its code" in said and "1 setting its runs read differ (train.lr)" in said
    rows[1].step.commits = None  # a copy outside git
    assert "git cannot list the commits between them here" in sentence("C2.3", rows)
    assert "Commits touching its code: unknown (git cannot list them here)" in "\n".join(lines(rows))
    rows[1].step = None
    assert sentence("C2.3", rows) == ("2 published versions measured C2.3; between the versions of each budget its "
                                      "value never moved beyond the noise and its verdict never changed.")
    assert sentence("C2.3", []) == "No published version measured C2.3."


def test_each_panel_of_the_chart_holds_its_own_parts_rows(project):
    from attnlab.report.history_page import chart, chart_rows
    from attnlab.claims.registry import load_registry

    rows = history("C2.3", project)
    data = chart_rows(rows, load_registry().by_id("C2.3").chapter_value)
    assert list(data["version"]) == [A, B] and set(data["part"]) == {"value"} and (data["source"] == 0.0124).all()
    assert (data["lo"] < data["value"]).all() and (data["value"] < data["hi"]).all()
    spec = chart("C2.3", data)
    assert spec["facet"]["row"]["field"] == "part" and spec["resolve"]["scale"]["y"] == "independent"
    shown = spec["datasets"][spec["data"]["name"]]
    assert [(r["version"], round(r["value"], 6)) for r in shown] == [(A, round(data["value"][0], 6)),
                                                                      (B, round(data["value"][1], 6))]
    assert chart("C2.3", chart_rows([], 0.0124)) is None
    assert "title" not in spec["spec"]["layer"][0]["encoding"]["y"] or \
        spec["spec"]["layer"][0]["encoding"]["y"]["title"] is None  # the row header names the part, once

    rows[0].verdict.parts[""].se = None  # one seed: a value without an interval is still a point, with no bar
    data = chart_rows(rows, 0.0124)
    assert list(data["version"]) == [A, B] and data["lo"].isna().tolist() == [True, False]


def test_the_history_page_has_a_section_per_claim_and_every_version_links_it(project):
    from attnlab.claims.registry import load_registry
    from attnlab.report.history_page import build_history
    from attnlab.sitedata import SiteData

    reg = load_registry()
    data = SiteData(None, reg, [], {}, versions_root=project, folder=project)
    claims = [reg.by_id(c) for c in ("C2.3", "C8.1")]
    page = build_history(project / "site", project, claims, data.verdicts_of, A).read_text()
    assert '<section id="claim-C2-3">' in page and '<section id="claim-C8-1">' in page
    assert "No published version measured C8.1." in page and 'id="chart-claim-C2-3"' in page
    assert f'src="../{A}/assets/vendor/vega.min.js"' in page and "vegaEmbed('#chart-claim-C2-3'" in page
    assert f'<a href="../{B}/index.html"><code>{B}</code></a>' in page

    from attnlab.report.build import context
    site = context(project / "results" / B, None, selector=True)
    assert '<a href="../history/index.html">every claim across the versions</a>' in site.stamp("ladder.md")
    v = next(v for v in site.verdicts if v.claim.id == "C2.3")
    assert '<a href="../history/index.html#claim-C2-3">C2.3 in every version</a>' in site.claim_details(v)
    alone = context(project / "results" / B, None)
    assert "history" not in alone.stamp("ladder.md") and "history/index" not in alone.claim_details(v)


COPIED = ["Snakefile", "workflow", "src", "config", "docs", "tools", "profiles", "environment.yml", "mkdocs.yml",
          ".gitignore"]


def attnlab(work: Path, *args: str) -> subprocess.CompletedProcess:
    import os
    import sys

    env = {**os.environ, "PYTHONPATH": str(work / "src")}
    done = subprocess.run([sys.executable, "-m", *args], cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def published(work: Path) -> str:
    """Run E1 (averaging) on the smoke profile at HEAD and publish it alone; the version's name."""
    attnlab(work, "attnlab.runner", "smoke", "--only", "averaging", "--jobs", "1")
    done = attnlab(work, "attnlab", "publish", "--config", "smoke", "--results", "results/smoke", "--only", "averaging")
    name = done.stdout.split(" as version ")[1].split()[0]
    git(work, "add", "results")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"version {name}")
    return name


def test_bisect_names_the_commit_that_moved_the_claim(tmp_path, corpus_path):
    """Two smoke versions of E1, one setting and two commits apart: one commit doubles the shuffle difference C1.1
    reads, the next sets averaging.n_shuffle in the smoke profile, a third touches prose only. History finds the
    step and names both commits and the setting; --bisect reruns E1 with the later version's settings at the older
    commit and at the commits that touched its code, in worktrees, and names the doubling one (with the settings
    held, the profile's commit moves nothing); an interrupted bisect resumes."""
    from attnlab.bisect import bisect

    work = tmp_path / "project"
    work.mkdir()
    for name in COPIED:
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(
            src, work / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if src.is_dir() else {}))
    cfg = yaml.safe_load((work / "config" / "smoke.yaml").read_text())
    cfg["data"]["path"] = str(corpus_path)
    (work / "config" / "smoke.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    old = published(work)
    producer = work / "src" / "attnlab" / "experiments" / "averaging" / "producer.py"
    producer.write_text(producer.read_text().replace('"shuffle_max_abs_diff": shuffle_diff,',
                                                     '"shuffle_max_abs_diff": 2 * shuffle_diff + 1e-7,'))
    moved_by = commit(work, str(producer.relative_to(work)), producer.read_text(), "double the shuffle difference")
    smoke = yaml.safe_load((work / "config" / "smoke.yaml").read_text())
    smoke["averaging"] = {"n_shuffle": 64}
    commit(work, "config/smoke.yaml", yaml.safe_dump(smoke, sort_keys=False), "fewer shuffled vectors at smoke")
    commit(work, "docs/about.md", (work / "docs" / "about.md").read_text() + "\nmore words\n", "prose only")
    new = published(work)

    rows = history("C1.1", work)
    assert [r.version for r in rows] == [old, new] and rows[1].step is not None
    assert [s for _, s in rows[1].step.commits] == ["double the shuffle difference", "fewer shuffled vectors at smoke"]
    assert [(d.setting, d.before, d.after) for d in rows[1].step.settings] == [("averaging.n_shuffle", 128, 64)]

    (work / "docs" / "about.md").write_text("dirty\n")
    with pytest.raises(AttnlabError, match="uncommitted changes"):
        bisect("C1.1", work)
    git(work, "checkout", "--", "docs/about.md")

    said = []
    found = bisect("C1.1", work, say=said.append)
    assert found == f"the first commit that moved C1.1 at seed 1337: {moved_by[:7]} double the shuffle difference"
    assert said[0].startswith(f"bisect C1.1 over 2 commits between {old} and {new}: at most 3 reruns of averaging")
    state = json.loads(next((work / ".attnlab-bisect").glob("C1.1-*/state.json")).read_text())
    assert len(state) == 3  # the older version's commit and the two between
    assert bisect("C1.1", work, say=said.append) == found and "(3 done before" in said[1]  # resumed: no rerun


def test_bisect_refuses_a_step_no_commit_explains_and_a_history_with_no_step_in_one_line(project):
    """Before any worktree or rerun: a step whose commits between touched no code of the claim (only the README
    here), an --at that names no step, and a claim that never stepped."""
    from attnlab.bisect import SCRATCH, bisect

    m = json.loads((project / "results" / A / "manifest.json").read_text())
    m["commit"] = git(project, "rev-parse", "HEAD~1")  # A now sits after the training loop's change
    (project / "results" / A / "manifest.json").write_text(json.dumps(m))
    crated(project / "results" / A)
    for at, said in [(None, f"no commit between {A} and {B} touched C2.3's code"),
                     (A, f"version {A} is no step of this claim's history; steps: {B}")]:
        with pytest.raises(AttnlabError) as err:
            bisect("C2.3", project, at=at)
        assert "\n" not in str(err.value) and said in str(err.value)
    shutil.rmtree(project / "results" / B)
    version(project, B, git(project, "rev-parse", "HEAD"), "2026-12-04T09:00:00+00:00")  # the same value: no step
    with pytest.raises(AttnlabError, match="never stepped between versions of one budget: nothing to bisect"):
        bisect("C2.3", project)
    assert not (project / SCRATCH).exists()


def test_a_version_that_did_not_measure_the_claim_is_named_apart_not_a_row(project):
    """Versions whose claim sets differ: the winograd-only version answers no ladder claim, so C2.3's history keeps
    its two rows and names that version as one that did not measure it."""
    from attnlab.history import unmeasured

    other = "2026-12-05-chapter-cpu-680862e-only-winograd-explanation"
    shutil.copytree(REPO / "results" / other, project / "results" / other)
    rows = history("C2.3", project)
    assert [r.version for r in rows] == [A, B] and unmeasured(rows, project) == [other]
    assert sorted(unmeasured(rows[:1], project)) == sorted([B, other])


def test_bisect_estimates_a_rerun_from_the_runs_of_its_own_seed_only(tmp_path):
    """The time `--bisect` announces is the experiment's recorded time at the one seed it reruns: another seed's
    runs and another experiment's are not counted."""
    from attnlab import eta
    from attnlab.bisect import rerun_seconds

    folder = tmp_path / "v"
    shutil.copytree(CHAPTER, folder)
    timed = eta.timed(folder)
    ladder = {rel: p["wall_seconds"] for rel, p in timed.items() if rel.startswith("ladder/")}
    assert ladder and {rel.split("/")[2] for rel in ladder} == {"seed1337"}
    assert rerun_seconds(folder, "ladder", 1337) == pytest.approx(sum(ladder.values()))
    moved = folder / "ladder" / "L4" / "seed1338"
    (folder / "ladder" / "L4" / "seed1337").rename(moved)  # one run at another seed: not this rerun's time
    assert rerun_seconds(folder, "ladder", 1337) == pytest.approx(sum(ladder.values()) - ladder[
        "ladder/L4/seed1337/metrics.json"])
    assert rerun_seconds(folder, "position", 1337) > 0 and rerun_seconds(folder, "ladder", 1340) == 0


def test_bisect_counts_one_seeds_share_of_a_file_of_several_seeds(tmp_path):
    """An analysis that reads every seed (its result file holds `by_seed`) ran once for all of them: a rerun at
    one seed is estimated at its share of that time, not the whole of it."""
    from attnlab import eta
    from attnlab.bisect import rerun_seconds

    folder = tmp_path / "v"
    src = REPO / "results" / "2026-12-02-quick-cpu-4303899" / "induction"
    shutil.copytree(src, folder / "induction")
    timed = eta.timed(folder)
    whole = eta.records_of(folder)["induction/result.json"]
    assert timed["induction/result.json"][eta.SEEDS] == whole.seeds == 3
    runs = sum(r.seconds for rel, r in eta.records_of(folder).items() if rel != "induction/result.json"
               and "/seed1337/" in rel)
    assert rerun_seconds(folder, "induction", 1337) == pytest.approx(runs + whole.seconds / 3)
