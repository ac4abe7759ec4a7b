"""Seeds that add up across versions: two published versions of one budget, shaped alike, are judged on the union
of their seeds; a seed held twice with other numbers is refused; other settings or other code keep them apart;
the verdicts, the dashboard and the home page name what they pooled."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from attnlab.claims.evaluate import evaluate
from attnlab.claims.registry import load_registry
from attnlab.errors import AttnlabError
from attnlab.pooling import pool, why_apart
from attnlab.report import build
from helpers import REPO, crated

CHAPTER = REPO / "results" / "2026-12-02-chapter-cpu-680862e-only-ladder-position-set-seeds"
A, B = "2026-12-02-chapter-cpu-680862e-only-ladder-position", "2026-12-05-chapter-cpu-680862e-only-ladder-position"


def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def reseed(folder: Path, seed: int, shift: float) -> None:
    """Move every training run of a version to `seed`, its perplexities moved by `shift` (another run)."""
    for metrics in sorted(folder.glob("*/*/seed*/metrics.json")):
        def change(m):
            m["provenance"]["seed"] = seed
            for key in ("val_ppl", "train_ppl"):
                if isinstance(m.get(key), (int, float)):
                    m[key] += shift
        edit_json(metrics, change)
        metrics.parent.rename(metrics.parent.with_name(f"seed{seed}"))
    config = yaml.safe_load((folder / "config.yaml").read_text())
    config["seeds"], config["seed"] = [seed], seed
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture
def two(tmp_path):
    """A project holding the committed chapter version (seed 1337) and a second one at seed 1338, same commit."""
    results = tmp_path / "results"
    shutil.copytree(CHAPTER, results / A)
    shutil.copytree(CHAPTER, results / B)
    reseed(results / B, 1338, 0.5)
    for name, when in ((A, "2026-12-02T09:28:55+00:00"), (B, "2026-12-05T09:00:00+00:00")):
        edit_json(results / name / "manifest.json", lambda m: m.update(version=name, published=when))
        crated(results / name)
    return tmp_path


def test_two_versions_of_one_budget_pool_their_seeds(two):
    p = pool(two, A)
    assert p.pooled and p.seeds("ladder") == [1337, 1338] and p.seeds("position") == [1337, 1338]
    assert p.members["ladder"] == [(A, [1337]), (B, [1338])]
    assert p.words("ladder") == f"pooled over 2 versions: {A} (seed 1337), {B} (seed 1338)"
    assert p.results.seeds("L9") == [1337, 1338]
    assert p.results.seed_paths["L9"][1338] == f"{B}/ladder/L9/seed1338/metrics.json"
    assert (p.results.root / p.results.seed_paths["L9"][1338]).is_file()
    # a claim on the ladder is now the mean of two seeds, with the seeds' spread in its error
    c23 = load_registry().by_id("C2.3")
    v = evaluate(c23, p.results)
    assert sorted(v.seeds) == [1337, 1338] and v.note.startswith("mean of 2 seeds")
    # from the other side, the same pool
    assert pool(two, B).seeds("ladder") == [1337, 1338]


def test_a_seed_in_two_versions_with_other_numbers_is_refused(two):
    results = two / "results"
    shutil.rmtree(results / B)
    shutil.copytree(CHAPTER, results / B)  # seed 1337 again ...
    edit_json(results / B / "manifest.json", lambda m: m.update(version=B, published="2026-12-05T09:00:00+00:00"))
    edit_json(results / B / "ladder" / "L3" / "seed1337" / "metrics.json", lambda m: m.update(val_ppl=m["val_ppl"] + 1))
    with pytest.raises(AttnlabError) as err:  # ... with one number changed
        pool(two, A)
    message = str(err.value)
    assert "\n" not in message and "run L3 at seed 1337" in message and A in message and B in message


def test_the_same_seed_twice_with_the_same_numbers_counts_once(two):
    results = two / "results"
    shutil.rmtree(results / B)
    shutil.copytree(CHAPTER, results / B)
    edit_json(results / B / "manifest.json", lambda m: m.update(version=B, published="2026-12-05T09:00:00+00:00"))
    p = pool(two, A)
    assert p.seeds("ladder") == [1337] and not p.pooled


def test_other_settings_keep_versions_apart(two):
    config = yaml.safe_load((two / "results" / B / "config.yaml").read_text())
    config["train"]["steps"] = 2000
    (two / "results" / B / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert not pool(two, A).pooled
    manifests = {m: json.loads((two / "results" / m / "manifest.json").read_text()) for m in (A, B)}
    assert why_apart(two, manifests[A], manifests[B], "ladder") == "other settings"


def test_other_profiles_and_other_code_keep_versions_apart(two):
    manifests = {m: json.loads((two / "results" / m / "manifest.json").read_text()) for m in (A, B)}
    quick = {**manifests[B], "profile": "quick"}
    assert why_apart(two, manifests[A], quick, "ladder").startswith("other profiles")
    gpu = {**manifests[B], "hardware": "nvidia-h200"}
    assert why_apart(two, manifests[A], gpu, "ladder") == "other hardware (cpu, nvidia-h200)"
    # two commits of a repository: the second changes a file that shapes training runs, then only the README
    git = lambda *args: subprocess.run(["git", *args], cwd=two, check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one")
    first = git("rev-parse", "HEAD")
    (two / "src" / "attnlab").mkdir(parents=True)
    (two / "src" / "attnlab" / "train.py").write_text("# changed\n")
    git("add", "src")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "two")
    second = git("rev-parse", "HEAD")
    (two / "README.md").write_text("words\n")
    git("add", "README.md")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "three")
    third = git("rev-parse", "HEAD")
    at = lambda m, c: {**manifests[m], "commit": c}
    assert "code that shapes its runs differs" in why_apart(two, at(A, first), at(B, second), "ladder")
    assert why_apart(two, at(A, second), at(B, third), "ladder") is None


def test_the_site_of_a_pooled_version_names_what_it_pooled(two):
    site = build.context(two / "results" / A, None)
    assert site.pool.pooled and site.seeds() == [1337, 1338]
    ladder = [v for v in site.verdicts if v.claim.experiment == "ladder" and v.claim.kind == "measured"]
    assert ladder and all(len(v.seeds) == 2 for v in ladder if v.verdict not in ("not run", "diverged"))
    assert all(f.startswith((A, B)) for f in site.res.provenance())
    assert site.files_of(["ladder"]) and all("/ladder/" in f for f in site.files_of(["ladder"]))


def test_how_verdicts_work_says_what_this_version_pooled_or_that_it_stands_alone(two):
    from attnlab.report.pages.about import pooled_here

    site = build.context(two / "results" / A, None)
    said = pooled_here(site)
    assert said.startswith("Here, ladder: pooled over 2 versions") and f"{B} (seed 1338)" in said
    shutil.rmtree(two / "results" / B)
    alone = build.context(two / "results" / A, None)
    assert pooled_here(alone) == ("This version is pooled with no other: no other published version of its "
                                  "profile was shaped alike.")


def test_a_claim_at_a_larger_budget_counts_the_seeds_behind_it_not_its_versions(two):
    """B holds the ladder alone: the ladder's claims rest on two seeds, position's on A's one."""
    from attnlab.claims.budget import Larger

    shutil.rmtree(two / "results" / B / "position")
    edit_json(two / "results" / B / "manifest.json", lambda m: m.update(complete=False, experiments=["ladder"]))
    site = build.context(two / "results" / A, None)
    own = json.loads((two / "results" / A / "manifest.json").read_text())
    at = lambda cid: site.detailed(cid, Larger(site.verdicts_of(A)[cid].verdict, own, "inconclusive", own, "chapter", 9))
    assert at("C2.1").seeds == 2 and "pooled over 2 versions" in at("C2.1").pooled
    assert at("C2.1").members == (A, B) == at("C2.1").versions
    assert at("C5.2").seeds == 1 and at("C5.2").pooled == "" and at("C5.2").members == () and at("C5.2").versions == (A,)


def _commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    run = lambda *a: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *a], cwd=repo,
                                    check=True, capture_output=True, text=True).stdout.strip()
    run("add", "-A")
    run("commit", "-qm", message)
    return run("rev-parse", "HEAD")


def test_a_file_that_only_moved_into_its_experiment_folder_is_the_same_code(tmp_path):
    # move32: keep (the old names are the point)
    """The move of issue 32 (settings/ladder.py -> experiments/ladder/settings.py, module names rewritten)
    keeps versions on either side pooling; a real edit after it does not."""
    from attnlab.pooling import changed

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    old, new = "src/attnlab/settings/ladder.py", "src/attnlab/experiments/ladder/settings.py"
    body = "from attnlab.{} import SCHEMA as DEPTH\nSTEPS = 3000\n"
    before = _commit(tmp_path, {old: body.format("settings.depth")}, "before")
    after = _commit(tmp_path, {old: None, new: body.format("experiments.depth.settings")}, "moved")
    edited = _commit(tmp_path, {new: body.format("experiments.depth.settings").replace("3000", "3001")}, "edit")
    assert not changed(tmp_path, before, after, (new,))
    assert changed(tmp_path, before, edited, (new,)) and changed(tmp_path, after, edited, (new,))


def test_versions_before_the_jobs_split_compare_their_cli_and_never_pool_across_it(tmp_path):
    """The run's verbs left cli.py for jobs.py: two versions from before are compared by the cli.py they ran (an
    edit to cmd_train there still keeps them apart); a version on each side of the split is never the same code."""
    from attnlab.pooling import changed

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    cli, jobs = "src/attnlab/cli.py", "src/attnlab/jobs.py"
    a = _commit(tmp_path, {cli: "def cmd_train(a):\n    steps = 3000\n\n\ndef cmd_site(a): ...\n"}, "a")
    b = _commit(tmp_path, {"README.md": "prose\n"}, "b")
    c = _commit(tmp_path, {cli: "def cmd_train(a):\n    steps = 3001\n\n\ndef cmd_site(a): ...\n"}, "c")
    d = _commit(tmp_path, {cli: "def cmd_site(a): ...\n", jobs: "def cmd_train(a):\n    steps = 3001\n"}, "split")
    e = _commit(tmp_path, {cli: "def cmd_site(a): pass\n"}, "e")
    assert not changed(tmp_path, a, b, (jobs,)) and changed(tmp_path, a, c, (jobs,))
    assert changed(tmp_path, c, d, (jobs,))  # jobs.py is not the cli.py it came from: not claimed the same code
    assert not changed(tmp_path, d, e, (jobs,))  # after the split, a reader's verb is not a run's code


def test_a_pool_past_its_first_look_waits_for_the_whole_planned_second_look(two):
    """Seeds arriving a version at a time are looks: past the profile's three, the pool judges the first look's
    seeds until every seed its profile's file plans for the second look is in, then exactly those; a seed no
    plan names is held back, and the words say so."""
    results = two / "results"
    for seed in (1339, 1340):
        name = f"2026-12-0{seed - 1333}-chapter-cpu-680862e-only-ladder-position-s{seed}"
        shutil.copytree(CHAPTER, results / name)
        reseed(results / name, seed, 0.1 * (seed - 1337))
        edit_json(results / name / "manifest.json",
                  lambda m: m.update(version=name, published=f"2026-12-0{seed - 1333}T09:00:00+00:00"))
    profile = yaml.safe_load((REPO / "config" / "chapter.yaml").read_text())
    profile["ladder"] = {"seeds": [1337, 1338, 1339, 1340, 1341]}
    profile.pop("position", None)
    (two / "config").mkdir()
    (two / "config" / "chapter.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))

    p = pool(two, A)
    assert p.seeds("ladder") == [1337, 1338, 1339] and p.results.seeds("L9") == [1337, 1338, 1339]
    assert p.held_back["ladder"][0] == [1340]
    assert p.words("ladder").endswith("; seed 1340 held back until the 2 seeds the planned second look adds are "
                                      "all in (1 so far)")
    assert p.seeds("position") == [1337, 1338, 1339]
    assert p.words("position").endswith("; seed 1340 held back: the profile plans no second look for position")
    assert sorted(evaluate(load_registry().by_id("C2.3"), p.results).seeds) == [1337, 1338, 1339]

    name = "2026-12-09-chapter-cpu-680862e-only-ladder-position-s1341"
    shutil.copytree(CHAPTER, results / name)
    reseed(results / name, 1341, 0.4)
    edit_json(results / name / "manifest.json", lambda m: m.update(version=name, published="2026-12-09T09:00:00+00:00"))
    p = pool(two, A)
    assert p.seeds("ladder") == [1337, 1338, 1339, 1340, 1341] and "ladder" not in p.held_back
    assert p.results.seeds("L9") == [1337, 1338, 1339, 1340, 1341]
    assert p.held_back["position"][0] == [1340, 1341]
    assert sorted(evaluate(load_registry().by_id("C2.3"), p.results).seeds) == [1337, 1338, 1339, 1340, 1341]


def _on_gpu(root: Path, seed: int, change=None) -> str:
    """A GPU's version of the same budget, code and settings at `seed` (`change` edits each run's metrics)."""
    name = f"2026-12-07-chapter-nvidia-h200-680862e-only-ladder-position-s{seed}"
    shutil.copytree(CHAPTER, root / "results" / name)
    reseed(root / "results" / name, seed, 0.05)
    if change:
        for metrics in (root / "results" / name).glob("*/*/seed*/metrics.json"):
            edit_json(metrics, change)
    edit_json(root / "results" / name / "manifest.json",
              lambda m: m.update(version=name, published="2026-12-07T09:00:00+00:00", hardware="nvidia-h200"))
    return name


def test_another_devices_versions_pool_only_where_their_figures_agree(two):
    """A GPU's seed 1339 beside the CPU's 1337 and 1338: pooled where every interval of the experiment's claims
    overlaps; where one does not, kept apart, and the page names the part and both intervals."""
    gpu = _on_gpu(two, 1339)
    p = pool(two, A)
    assert p.seeds("ladder") == [1337, 1338, 1339] and (gpu, [1339]) in p.members["ladder"] and not p.apart
    assert (p.results.root / p.results.seed_paths["L9"][1339]).is_file()

    shutil.rmtree(two / "results" / gpu)
    double = lambda m: m.update(val_ppl=3 * m["val_ppl"]) if m.get("name") in ("L8", "L9") else None
    gpu = _on_gpu(two, 1339, double)
    p = pool(two, A)
    assert p.seeds("ladder") == [1337, 1338] and p.seeds("position") == [1337, 1338, 1339]
    why = p.apart["ladder"]
    assert why.startswith(f"not pooled with the nvidia-h200 versions ({gpu}): C2.") and "do not overlap" in why
    assert re.search(r"is \[[-\d.e]+, [-\d.e]+\] here and \[[-\d.e]+, [-\d.e]+\] there", why)
    site = build.context(two / "results" / A, None)
    assert (f"Another device's versions of this budget are not pooled with the nvidia-h200 versions ({gpu})"
            in site.verdicts_block("ladder"))


DEPTH = REPO / "results" / "2026-12-06-chapter-cpu-680862e-only-depth"


def test_a_second_look_of_some_runs_judges_their_claim_on_more_seeds_and_the_others_on_theirs(tmp_path):
    """Depth's second look holds E4-pre and E4-post alone (`--only depth.E4-pre depth.E4-post`), at new seeds: C4.1,
    which reads them, is judged on every seed; C4.2b, which reads the warmup runs too, on the seeds they all hold;
    the page's sentence names the runs at fewer seeds."""
    results, a, b = tmp_path / "results", DEPTH.name, "2026-12-07-chapter-cpu-680862e-only-depth.E4-pre-depth.E4-post"
    shutil.copytree(DEPTH, results / a)
    shutil.copytree(DEPTH, results / b)
    for run in ("E4-pre-warm", "E4-post-warm"):
        shutil.rmtree(results / b / "depth" / run)
    moves = {1337: 1340, 1338: 1341, 1339: 1342}
    for metrics in sorted((results / b).glob("depth/*/seed*/metrics.json")):
        new = moves[int(metrics.parent.name[4:])]
        edit_json(metrics, lambda m: m["provenance"].update(seed=new))
        metrics.parent.rename(metrics.parent.with_name(f"seed{new}"))
    config = yaml.safe_load((results / b / "config.yaml").read_text())
    config["seeds"], config["seed"] = list(moves.values()), 1340
    (results / b / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    held = sorted(str(p.relative_to(results / b)) for p in (results / b).glob("depth/*/seed*/metrics.json"))

    def manifest(m):
        m.update(version=b, published="2026-12-07T09:00:00+00:00", only=["depth.E4-pre", "depth.E4-post"])
        m["runs"]["run_files"] = held
    edit_json(results / b / "manifest.json", manifest)
    crated(results / b)
    profile = yaml.safe_load((REPO / "config" / "chapter.yaml").read_text())
    profile["depth"]["seeds"] = list(range(1337, 1343))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "chapter.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))

    p = pool(tmp_path, a)
    assert p.seeds("depth") == list(range(1337, 1343)) and "depth" not in p.held_back
    assert p.results.seeds("E4-pre") == list(range(1337, 1343)) and p.results.seeds("E4-pre-warm") == [1337, 1338,
                                                                                                        1339]
    registry = load_registry()
    assert sorted(evaluate(registry.by_id("C4.1"), p.results).seeds) == list(range(1337, 1343))
    assert sorted(evaluate(registry.by_id("C4.2b"), p.results).seeds) == [1337, 1338, 1339]
    site = build.context(results / a, None)
    from attnlab.experiments.depth import page as depth_page

    assert depth_page.blocks(site)["run_seeds"] == ("at each of 6 seeds (1337, 1338, 1339, 1340, 1341, 1342; "
                                                    "E4-pre-warm and E4-post-warm at 1337, 1338, 1339 only)")


QUICK = REPO / "results" / "2026-12-02-quick-cpu-4303899"


def with_seed(result: Path, seed: int, like: int) -> None:
    """An induction result with one seed more (`like`'s measurements copied): a rerun at the second look's seeds."""
    def change(doc):
        for held in (doc["by_seed"], doc["phase"]["by_seed"]):
            held[str(seed)] = held[str(like)]
        doc["phase"]["seeds"] += 1
    edit_json(result, change)


def test_an_analysis_is_read_from_its_second_look_a_version_that_reran_it_at_the_planned_seeds(tmp_path):
    """An analysis reads every seed at once, so no seed can be added to its result: a version shaped alike that
    reran it at exactly the seeds the profile's file plans for its second look takes the first look's place; one
    at other seeds, other settings or on other hardware does not, nor any where the profile plans none."""
    record, again = "2026-12-02-quick-cpu-4303899", "2026-12-07-quick-cpu-4303899-only-induction-set-seeds-1337to1340"
    results = tmp_path / "results"
    shutil.copytree(QUICK, results / record)
    (results / again / "induction").mkdir(parents=True)
    for name in ("manifest.json", "config.yaml"):
        shutil.copy(QUICK / name, results / again / name)
    shutil.copy(QUICK / "induction" / "result.json", results / again / "induction" / "result.json")
    with_seed(results / again / "induction" / "result.json", 1340, like=1338)
    edit_json(results / again / "manifest.json", lambda m: m.update(
        version=again, published="2026-12-07T09:00:00+00:00", complete=False, experiments=["induction"]))
    config = yaml.safe_load((results / again / "config.yaml").read_text())
    config["seeds"] = [1337, 1338, 1339, 1340]
    (results / again / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    s102 = load_registry().by_id("S10.2")

    def plan(seeds):
        profile = yaml.safe_load((REPO / "config" / "quick.yaml").read_text())
        profile.pop("induction", None)
        if seeds:
            profile["induction"] = {"seeds": seeds}
        (tmp_path / "config").mkdir(exist_ok=True)
        (tmp_path / "config" / "quick.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))

    plan([1337, 1338, 1339, 1340])
    p = pool(tmp_path, record)
    assert p.second_looks == {"induction": (again, [1337, 1338, 1339, 1340])} and p.pooled
    assert p.results.file_paths["induction"] == f"{again}/induction/result.json"
    assert evaluate(s102, p.results).seed_count == 4
    assert p.words("induction").startswith(f"read from the second look of induction, {again} (seeds 1337, 1338, 1339, "
                                           "1340)")
    assert p.versions()[:1] == [record] and again in p.versions()
    assert pool(tmp_path, again).second_looks == {}  # the second look itself stands as it is
    site = build.context(results / record, None)  # the record's pages read it, and say so
    s102_there = next(v for v in site.verdicts if v.claim.id == "S10.2")
    assert s102_there.seed_count == 4 and site.claim_files(s102_there.claim) == [f"{again}/induction/result.json"]
    assert again in site.pool_versions() and site.reads_elsewhere(s102_there.claim)
    block = html.unescape(site.verdicts_block("induction"))
    assert f"These verdicts are read from the second look of induction, {again}" in block
    from attnlab.report.pages.about import pooled_here
    assert f"induction: read from the second look of induction, {again}" in pooled_here(site)  # How verdicts work
    assert p.past_first_look("induction", 3) and not p.past_first_look("ladder", 3)
    assert "other versions' run files read too" in block and "otherwise from the same run files" not in block

    plan([1337, 1338, 1339, 1340, 1341])  # a plan of other seeds: the first look stands
    p = pool(tmp_path, record)
    assert p.second_looks == {} and p.results.file_paths["induction"] == f"{record}/induction/result.json"
    assert evaluate(s102, p.results).seed_count == 3 and not p.words("induction")

    plan([1337, 1338, 1339, 1340])
    config["induction"]["length"] += 1  # other settings than the record's
    (results / again / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert pool(tmp_path, record).second_looks == {}
    config["induction"]["length"] -= 1
    (results / again / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    edit_json(results / again / "manifest.json", lambda m: m.update(hardware="gpu"))
    assert pool(tmp_path, record).second_looks == {}
    edit_json(results / again / "manifest.json", lambda m: m.update(hardware="cpu"))
    assert pool(tmp_path, record).second_looks == {"induction": (again, [1337, 1338, 1339, 1340])}
    plan(None)  # a profile that plans no second look for induction
    assert pool(tmp_path, record).second_looks == {}
