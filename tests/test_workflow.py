"""The smoke DAG end to end, and what a code edit reruns (shown with `snakemake -n`)."""
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnlab import imports
from attnlab.config import load, resolve
from attnlab.registry import load as load_registry
from attnlab.registry import page_module, pages
from attnlab.registry import training
import charts
from helpers import BAD, CHROMIUM, kill_while_training, playwright_or_skip

REPO = Path(__file__).resolve().parents[1]
COPIED = ["Snakefile", "workflow", "src", "config", "docs", "tools", "profiles", "environment.yml",
          "mkdocs.yml", ".gitignore"]


def snakemake(workdir: Path, *args, check=True):
    env = {**os.environ, "PYTHONPATH": str(workdir / "src"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=900)
    if check and proc.returncode:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def planned(proc) -> dict[str, int]:
    """Rule -> job count from a dry run's job stats table."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", proc.stdout, re.M) if m[1] != "total"}


def edit(path: Path):
    path.write_text(path.read_text() + "\n# an edit\n")


def checkout(work: Path, corpus_path: Path) -> Path:
    """The project's workflow and code in `work`, its smoke profile reading the corpus at `corpus_path`."""
    for name in COPIED:
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, work / name,
                                                            **({"ignore": shutil.ignore_patterns("__pycache__")}
                                                               if src.is_dir() else {}))
    cfg = yaml.safe_load((work / "config" / "smoke.yaml").read_text())
    cfg["data"]["path"] = str(corpus_path)
    (work / "config" / "smoke.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git(work, "init", "-q")  # a checkout: run files record its commit, and it can publish
    git(work, "add", "-A")
    git(work, "commit", "-qm", "checkout")
    return work


def git(work: Path, *args) -> str:
    return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *args], cwd=work,
                          check=True, capture_output=True, text=True).stdout.strip()


def attnlab(work: Path, *args):
    env = {**os.environ, "PYTHONPATH": str(work / "src")}
    return subprocess.run([sys.executable, "-m", "attnlab", *args], cwd=work, env=env, capture_output=True, text=True)


def profile(work: Path, name: str, change) -> str:
    """config/<name>.yaml: the smoke profile (every run spelt out) with `change(cfg)` applied; returns its path
    relative to `work`."""
    cfg = resolve(yaml.safe_load((work / "config" / "smoke.yaml").read_text()))
    change(cfg)
    (work / "config" / f"{name}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return f"config/{name}.yaml"


def tree(root: Path) -> dict:
    """Every file under `root` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def clone(smoke: Path, work: Path) -> Path:
    """A copy of the finished smoke run (results and git history) that a test may change."""
    shutil.copytree(smoke, work, symlinks=True)
    git(work, "checkout", "--", ".")  # undo what other tests edited, so the tree is clean again
    git(work, "clean", "-fdq")
    return work


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, corpus_path):
    work = checkout(tmp_path_factory.mktemp("attnlab"), corpus_path)
    snakemake(work, "--cores", "2", "--resources", "gpu=1", "--configfile", "config/smoke.yaml")
    return work


def by_claim(claims: pd.DataFrame) -> pd.DataFrame:
    """claims.csv (one row per part, each with its claim's verdict) as one row per claim."""
    return claims.drop_duplicates("claim_id").set_index("claim_id")


def test_smoke_dag_builds_the_site(smoke):
    r = smoke / "results" / "smoke"
    assert (r / "site" / "index.html").is_file()
    claims = pd.read_csv(r / "claims.csv")
    assert list(claims.columns) == ["claim_id", "part", "kind", "chapter_value", "value", "value_text", "se", "k",
                                    "lo", "hi", "n_seeds", "verdict", "part_verdict", "settle", "note",
                                    "dominant", "look", "level"]
    assert {"C0.2", "C1.1", "C2.1"} <= set(claims.claim_id)
    assert (r / "claims_by_seed.csv").is_file()
    assert by_claim(claims).loc["C0.2", "verdict"] == "holds"  # the real corpus, the real BPE
    for row in resolve(yaml.safe_load((smoke / "config" / "smoke.yaml").read_text()))["ladder"]:
        assert (r / "ladder" / row / "seed1337" / "metrics.json").is_file()
    for job in ("prepare_data", "claims", "site", "charts", "throughput", "averaging", "ladder/L1/seed1337"):
        assert (r / "logs" / f"{job}.log").exists() and (r / "benchmarks" / f"{job}.tsv").exists()


def test_nothing_to_do_after_a_complete_run(smoke):
    assert planned(snakemake(smoke, "-n", "--configfile", "config/smoke.yaml")) == {}


def test_a_dry_run_with_other_settings_writes_nothing(smoke):
    before = tree(smoke / "results")
    other = profile(smoke, "other", lambda c: c["train"].update(steps=80))
    jobs = planned(snakemake(smoke, "-n", "--configfile", other))
    assert jobs.get("train", 0) > 0  # it would retrain...
    assert tree(smoke / "results") == before  # ...but a dry run changes nothing on disk


def test_settings_written_in_another_order_rerun_nothing(smoke):
    def flip(node):
        return {k: flip(v) for k, v in reversed(list(node.items()))} if isinstance(node, dict) else node

    cfg = yaml.safe_load((smoke / "config" / "smoke.yaml").read_text())
    (smoke / "config" / "flipped.yaml").write_text(yaml.safe_dump(flip(cfg), sort_keys=False))
    assert planned(snakemake(smoke, "-n", "--configfile", "config/flipped.yaml")) == {}


def planned_without(smoke: Path, rel: str, tmp_path: Path) -> dict[str, int]:
    """The jobs a dry run plans once results/smoke/`rel` is gone (put back afterwards)."""
    path = smoke / "results" / "smoke" / rel
    shutil.copy2(path, tmp_path / "kept")
    path.unlink()
    try:
        return planned(snakemake(smoke, "-n", "--configfile", "config/smoke.yaml"))
    finally:
        shutil.copy2(tmp_path / "kept", path)


def test_deleting_a_run_file_makes_the_default_target_rebuild_it(smoke, tmp_path):
    jobs = planned_without(smoke, "ladder/L3/seed1337/metrics.json", tmp_path)
    assert jobs.get("train") == 1 and jobs.get("claims") == 1 and jobs.get("site") == 1


def test_a_lost_claims_by_seed_csv_is_an_output_snakemake_rebuilds(smoke, tmp_path):
    jobs = planned_without(smoke, "claims_by_seed.csv", tmp_path)
    assert jobs.get("claims") == 1 and jobs.get("train", 0) == 0


def test_a_failed_download_leaves_the_token_files(smoke):
    """The corpus download is a job of its own: when it fails, prepare_data never starts, so Snakemake never
    deletes the token files that job would replace."""
    data = smoke / "results" / "smoke" / "data"
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    offline = profile(smoke, "offline", lambda c: c["data"].update(path=None, url=(smoke / "gone.txt").as_uri()))
    proc = snakemake(smoke, "results/smoke/data/stats.json", "--cores", "1", "--configfile", offline, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert proc.returncode != 0 and len(errors) == 1 and "could not download corpus" in errors[0], proc.stderr
    assert {p.name: p.read_bytes() for p in data.iterdir()} == before


def test_the_profile_can_be_named_instead_of_given_as_a_file(smoke):
    assert planned(snakemake(smoke, "-n", "--config", "profile=smoke")) == {}


def failing_report(smoke, break_it, unbreak):
    """Run the whole DAG with the report broken by `break_it()`; return the run and what it left on disk."""
    r = smoke / "results" / "smoke"

    def contents():  # Snakemake restores what it backed up with a new mtime: compare what the files say
        return {p: p.read_bytes() for p in [r / "claims.csv", *(r / "site").rglob("*")] if p.is_file()}

    before = contents()
    break_it()
    try:
        proc = snakemake(smoke, "--cores", "1", "--configfile", "config/smoke.yaml", check=False)
    finally:
        unbreak()
    after = contents()
    snakemake(smoke, "--cores", "2", "--configfile", "config/smoke.yaml")  # mended: the report is rebuilt
    return proc, before, after


BROKEN_CLAIM = """
  - id: C1.99
    claim: A claim whose value reads a field no producer writes.
    chapter_value: 1
    value: "averaging['no_such_field']"
    check: {equals: 1}
    tolerance_note: none
"""


def test_a_failed_claims_step_leaves_the_previous_verdicts_and_site(smoke):
    claims = smoke / "src/attnlab/experiments/averaging/claims.yaml"
    good = claims.read_text()
    proc, before, after = failing_report(smoke, lambda: claims.write_text(good + BROKEN_CLAIM),
                                         lambda: claims.write_text(good))
    assert proc.returncode != 0 and after == before
    errors = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert len(errors) == 1 and "C1.99" in errors[0] and "logs/claims.log" in errors[0], proc.stderr


def test_a_failed_site_build_leaves_the_previous_site(smoke):
    bad = smoke / "docs" / "zz_broken.md"
    proc, before, after = failing_report(smoke, lambda: bad.write_text("[a link to nowhere](nowhere.md)\n"),
                                         bad.unlink)
    assert proc.returncode != 0 and after == before
    errors = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert len(errors) == 1 and "mkdocs build failed" in errors[0] and "logs/site.log" in errors[0], proc.stderr


def test_a_second_invocation_cannot_change_a_running_one(tmp_path, corpus_path):
    """While a run works through its jobs, another invocation with other settings (a dry run, and a real one
    that the lock refuses) must not change what the running jobs train with."""
    work = checkout(tmp_path, corpus_path)
    other = profile(work, "other", lambda c: c["train"].update(steps=80))
    runs = [f"results/smoke/ladder/{row}/seed1337/metrics.json" for row in ("L1", "L2", "L3", "L4")]
    env = {**os.environ, "PYTHONPATH": str(work / "src"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    first = subprocess.Popen([sys.executable, "-m", "snakemake", *runs, "--cores", "1", "--configfile",
                              "config/smoke.yaml"], cwd=work, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    logs = work / "results" / "smoke" / "logs" / "ladder"
    deadline = time.monotonic() + 300
    while not (logs.is_dir() and any(logs.iterdir())) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)  # until the first training job has started
    snakemake(work, "-n", "--rerun-incomplete", "--configfile", other)  # the running job's files are incomplete
    refused = snakemake(work, *runs, "--cores", "1", "--configfile", other, check=False)
    # Snakemake refuses: the folder is locked, or, once the first run is inside a job, its files are in use
    said = (refused.stdout + refused.stderr).lower()
    assert refused.returncode != 0 and ("lock" in said or "incomplete files" in said)
    out, _ = first.communicate(timeout=600)
    assert first.returncode == 0, out[-3000:]
    steps = {run: json.loads((work / run).read_text())["steps"] for run in runs}
    assert set(steps.values()) == {40}, steps



@pytest.mark.skipif(sys.platform != "linux", reason="a job ends with Snakemake through Linux's PR_SET_PDEATHSIG")
@pytest.mark.parametrize("moment", ["while a job trains", "as a job's output appears"])
def test_a_snakemake_killed_mid_run_resumes_as_the_readme_says(tmp_path, corpus_path, moment):
    """kill -9 of Snakemake mid-run: its jobs end with it, its lock stays behind, and a job killed once it had
    written its output leaves that output marked incomplete; the README's two commands (unlock, then rerun with
    --rerun-incomplete) finish the run either way."""
    work = checkout(tmp_path, corpus_path)
    runs = [f"results/smoke/ladder/{row}/seed1337/metrics.json" for row in ("L1", "L2", "L3", "L4")]
    env = {**os.environ, "PYTHONPATH": str(work / "src"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    kill_while_training([sys.executable, "-m", "snakemake", *runs, "--cores", "1", "--config", "profile=smoke"],
                        written=tuple(work / run for run in runs) if moment.startswith("as") else (),
                        cwd=work, env=env, stderr=subprocess.DEVNULL)
    assert not all((work / run).is_file() for run in runs)
    refused = snakemake(work, *runs, "--cores", "2", "--config", "profile=smoke", check=False)
    # which refusal comes first is a race: a job killed after writing its outputs leaves them marked incomplete,
    # and Snakemake reports those before its lock; the README's two commands answer both
    assert refused.returncode != 0
    assert "--unlock" in refused.stderr or "--rerun-incomplete" in refused.stderr, refused.stderr[-2000:]
    readme = (REPO / "README.md").read_text()
    unlock = "snakemake --unlock --config profile=quick"
    resume = "snakemake --cores 4 --resources gpu=1 --rerun-incomplete --config profile=quick"
    assert unlock in readme and resume in readme  # what the README tells the reader, here on smoke and four runs
    snakemake(work, "--unlock", "--config", "profile=smoke")
    snakemake(work, *runs, "--cores", "2", "--resources", "gpu=1", "--rerun-incomplete", "--config", "profile=smoke")
    steps = {run: json.loads((work / run).read_text())["steps"] for run in runs}
    assert set(steps.values()) == {40}, steps
    assert planned(snakemake(work, *runs, "-n", "--config", "profile=smoke")) == {}


SOURCES = sorted(str(p.relative_to(REPO)) for p in (REPO / "src" / "attnlab").rglob("*.py"))
VERBS = {"prepare_data": ("prepare",), "train": ("train",), "claims": ("claims",),
         "analyse": ("analyse", *(e.producer for e in load_registry() if e.kind in ("analysis", "benchmark"))),
         "site": ("site", "attnlab.report.hooks", "attnlab.report.pages.about",
                  *map(page_module, pages())),
         "charts": ("charts", "attnlab.report.hooks", "attnlab.report.pages.about", *map(page_module, pages()))}
DOWNSTREAM = {"prepare_data": {"train", "analyse"}, "train": {"analyse", "claims", "site", "charts"},  # analyses that
              "analyse": {"claims", "site", "charts"},                                             # need runs
              "claims": {"site", "charts"}, "site": set(), "charts": set()}


def imports_of(rule: str) -> set[str]:
    verb, *modules = VERBS[rule]
    return set(imports.files(imports.verb(verb) | imports.closure(*modules), root=REPO))


def reruns(source: str) -> set[str]:
    """The rules a dry run should plan after `source` is edited: those importing it, and what they feed."""
    rules = {rule for rule in VERBS if source in imports_of(rule)}
    todo = list(rules)
    while todo:
        for later in DOWNSTREAM[todo.pop()] - rules:
            rules.add(later)
            todo.append(later)
    return rules | ({"all"} if rules else set())


KINDS = ("__init__.py", "derive.py", "page.py", "producer.py", "settings.py")
ONE_ANALYSIS = "src/attnlab/experiments/throughput/producer.py"  # only its own analysis imports it: one analyse job


def edited() -> list[str]:
    """The files the test below edits: for each distinct set of rules an edit should rerun, one file of each kind
    (a package's __init__, an experiment's derive, page, producer or settings module, any other module). The dry run
    checks that Snakemake's code inputs carry the import analysis through, alike for every file of one kind in one
    set; the analysis itself is checked against what each verb really imports (the test after it). One dry run per
    source file (171 of them) had grown to a quarter of CI's time, and every one passed when last run that way."""
    chosen = {}
    for source in SOURCES:
        kind = source.rpartition("/")[2] if source.endswith(KINDS) else "other"
        chosen.setdefault((frozenset(reruns(source)), kind), source)
    return sorted({*chosen.values(), ONE_ANALYSIS})


def test_the_edited_files_cover_every_rerun_set_and_kind():
    """The choice above leaves no set of reruns untested, and it can fail: a set only a left-out file has is seen."""
    assert {frozenset(reruns(s)) for s in edited()} == {frozenset(reruns(s)) for s in SOURCES}
    assert len(edited()) < len(SOURCES) and all(s in SOURCES for s in edited())


@pytest.mark.parametrize("source", edited())
def test_an_edit_reruns_exactly_the_rules_that_import_it(smoke, source):
    path = smoke / source
    text, stat = path.read_text(), path.stat()
    edit(path)
    try:
        jobs = planned(snakemake(smoke, "-n", "--configfile", "config/smoke.yaml"))
    finally:
        path.write_text(text)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    if source == ONE_ANALYSIS:
        assert jobs.get("analyse") == 1
    assert set(jobs) == reruns(source), source


def test_the_import_analysis_misses_nothing_a_job_really_imports(smoke, tmp_path):
    """Run each verb for real with `python -X importtime`: every attnlab module it imports is a code input."""
    r = smoke / "results" / "smoke"
    settings = json.dumps(load(smoke / "config" / "smoke.yaml"), default=str)  # seeds, and the first as `seed`
    commands = {
        "prepare_data": ["prepare", "--config", settings, "--out", str(tmp_path / "data")],
        "train": ["train", "--config", settings, "--run", "L9", "--data", str(r / "data"), "--out",
                  str(tmp_path / "L9")],
        "analyse": ["analyse", "scores", "--config", settings, "--out", str(tmp_path / "scores.json")],
        "claims": ["claims", "--results", str(r), "--out", str(tmp_path / "claims.csv")],
        "site": ["site", "--config", settings, "--results", str(r), "--site",
                 str(tmp_path / "site")],  # (mkdocs runs the pages in a child process: see VERBS)
        "charts": ["charts", "--config", settings, "--results", str(r), "--out", str(tmp_path / "charts")],
    }
    env = {**os.environ, "PYTHONPATH": str(smoke / "src")}
    for rule, args in commands.items():
        entry = "attnlab.jobs" if rule in ("prepare_data", "train", "analyse") else "attnlab"  # as the rules run it
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", entry, *args], cwd=smoke, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        loaded = set(re.findall(r"\|\s+(attnlab(?:\.\w+)*)\s*$", proc.stderr, re.M))
        files = {str(imports.module_path(m).relative_to(imports.PACKAGE.parents[1])) for m in loaded}
        assert files <= imports_of(rule), (rule, files - imports_of(rule))


def test_editing_report_code_reruns_no_training(smoke):
    edit(smoke / "src" / "attnlab" / "report" / "charts.py")
    jobs = planned(snakemake(smoke, "-n", "--configfile", "config/smoke.yaml"))
    assert jobs.get("site") == 1 and "train" not in jobs and "prepare_data" not in jobs


def test_editing_model_code_reruns_training(smoke):
    edit(smoke / "src" / "attnlab" / "nn" / "model.py")
    jobs = planned(snakemake(smoke, "-n", "--configfile", "config/smoke.yaml"))
    cfg = resolve(yaml.safe_load((smoke / "config" / "smoke.yaml").read_text()))
    runs = sum(len(cfg.get(experiment) or {}) for experiment in training())
    assert jobs.get("train") == runs and "prepare_data" not in jobs


def test_lint_has_nothing_to_say(smoke):
    proc = snakemake(smoke, "--lint", "--configfile", "config/smoke.yaml", check=False)
    assert "Congratulations" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_the_report_holds_the_claims_and_every_experiments_charts(smoke, tmp_path):
    """`snakemake --report report.zip` (README): claims.csv, and at least one chart (or viewer) of every experiment in
    the registry, each file under report/data/raw/<id>/ by its name in the charts folder (<experiment>/<chart>)."""
    snakemake(smoke, "--report", str(tmp_path / "report.zip"), "--configfile", "config/smoke.yaml")
    held = zipfile.ZipFile(tmp_path / "report.zip").namelist()
    assert "report/report.html" in held
    assert any(re.fullmatch(r"report/data/raw/\w+/claims\.csv", name) for name in held), held
    charted = {m[1] for name in held if (m := re.fullmatch(r"report/data/raw/\w+/(\w+)/[\w-]+\.(?:svg|html)", name))}
    assert charted == {e.name for e in load_registry()}, sorted(charted)


FILES = {  # a profile file that cannot be read: (its text or None for no file, what the one line says)
    "a missing profile file": (None, "config file not found"),
    "an empty profile file": ("", "is empty"),
    "a profile that is a list": ("- a\n- b\n", "must hold a mapping of settings"),
    "a profile with a YAML syntax error": ("profile: smoke\nseed: [1,\n  x: 2\n", "is not valid YAML at line 4"),
    "a profile that gives a key twice": ("profile: smoke\nseeds: [1]\nseeds: [2]\n",
                                         "at line 3, column 1: key 'seeds' is given twice (first at line 2)"),
    "a profile that is an alias bomb": ("profile: smoke\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")),
        "its aliases expand 'f' to more than 100,000 values"),
}


def outputs(smoke) -> dict:
    r = smoke / "results" / "smoke"
    return {p: p.read_bytes() for p in [r / "claims.csv", r / "site" / "index.html", *r.glob("*/*/seed*/metrics.json")]}


# Every case of BAD gets its one line from `attnlab check` (test_reliability), which runs the Snakefile's own check
# (the next test holds the two to it). Through Snakemake, which starts in about 4 s a case, go the unreadable
# files, which only `chosen` sees, and one case of each stage of `check.check`: the one line, no job and nothing lost
# are the Snakefile's doing, alike for every message a stage raises. All 63 through Snakemake had cost CI 4 minutes.
THROUGH_SNAKEMAKE = [
    "a misspelt setting", "a learning rate YAML 1.1 reads as text", "an unknown profile name",  # the schema
    "heads that do not divide the width", "a width that cannot fit in memory",  # the models' specs and sizes
    "up-training from another model",  # check_init
    "E8 a noun twice", "S1 an unknown cell type",  # an experiment's own check
    "a corpus with another checksum", "a corpus too short once tokenised", "a folder as the corpus",  # the corpus
]


def test_the_snakefile_checks_a_profile_as_attnlab_check_does():
    """What lets most of the battery go through `attnlab check` alone: both read the profile with `chosen` and
    judge it with `check.check`, the Snakefile before it declares a rule."""
    from attnlab import cli

    snakefile = (REPO / "Snakefile").read_text()
    assert "config = attnlab.check.check(attnlab.config.chosen(config, workflow.overwrite_configfiles))" in snakefile
    assert snakefile.index("attnlab.check.check(") < snakefile.index("include:")
    assert 'check(chosen({"profile": a.config}, []))' in inspect.getsource(cli.cmd_check)
    assert set(THROUGH_SNAKEMAKE) <= set(BAD)


@pytest.mark.parametrize("case", [*THROUGH_SNAKEMAKE, *FILES])
def test_bad_input_stops_the_dag_in_one_line_before_any_job(smoke, tmp_path, case):
    """Each stage's bad profile gets one line naming the problem, no traceback, no job, nothing lost."""
    path = smoke / "config" / "bad.yaml"
    if case in BAD:
        edit, message = BAD[case]
        profile(smoke, "bad", lambda c: edit(c, tmp_path))
    else:
        text, message = FILES[case]
        path.unlink(missing_ok=True)
        if text is not None:
            path.write_text(text)
    before, logs = outputs(smoke), tree(smoke / "results" / "smoke" / "logs")
    proc = snakemake(smoke, "--cores", "1", "--config", "profile=config/bad.yaml", check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in said
    lines = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "localrule" not in said and tree(smoke / "results" / "smoke" / "logs") == logs  # no job started
    assert outputs(smoke) == before  # nothing already computed was lost


REGISTRY_BAD = {  # an edit of the registry, an experiment's folder or a claims file -> what the one line says
    "a registry line without its folder": (
        "src/attnlab/experiments.yaml", lambda t: t + "  - {name: ghost, kind: analysis}\n", "'ghost' has no folder"),
    "a folder without its producer": (
        "src/attnlab/experiments/params/producer.py", None, "names a producer that does not exist"),
    "a folder without its page": (
        "src/attnlab/experiments/params/page.py", None, "names a page that does not exist"),
    "a folder without its page's prose": (
        "src/attnlab/experiments/params/page.md", None, "names a page template that does not exist"),
    "two experiments with one name": (
        "src/attnlab/experiments.yaml", lambda t: t + "  - {name: params, kind: analysis}\n",
        "two experiments are named 'params'"),
    "a claim on a run no profile declares": (
        "src/attnlab/experiments/ladder/claims.yaml", lambda t: t.replace("ppl['L2'] / ppl['L1']", "ppl['L2'] / ppl['L10']"),
        "reads run 'L10', which no profile"),
}


@pytest.mark.parametrize("case", REGISTRY_BAD)
def test_a_bad_registry_stops_the_dag_in_one_line_before_any_job(smoke, case):
    file, change, message = REGISTRY_BAD[case]
    path = smoke / file
    kept = path.read_text()
    before, logs = outputs(smoke), tree(smoke / "results" / "smoke" / "logs")
    if change is None:
        path.unlink()
    else:
        path.write_text(change(kept))
    try:
        proc = snakemake(smoke, "--cores", "1", "--configfile", "config/smoke.yaml", check=False)
    finally:
        path.write_text(kept)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert tree(smoke / "results" / "smoke" / "logs") == logs and outputs(smoke) == before


TOY_CLAIM = """claims:
  - id: T1
    claim: The validation split holds at least one token.
    chapter_value: 1
    value: "toy['n_val']"
    check: {between: [1, null]}
    tolerance_note: Any split will do; this is a toy.
"""


def test_a_new_experiment_is_its_folder_and_one_registry_line(tmp_path, corpus_path, smoke):
    """The scaffold, then a trivial measurement filled in by hand (the validation tokens counted), through the
    DAG, the claims and the site; the project's source changes by the new folder and one registry line only."""
    work = checkout(tmp_path, corpus_path)
    shutil.copytree(smoke / "results", work / "results")  # the smoke run, done: only the toy is new
    made = attnlab(work, "new-experiment", "toy", "--kind", "analysis", "--title", "Toy")
    assert made.returncode == 0, made.stderr
    folder = work / "src" / "attnlab" / "experiments" / "toy"
    producer = folder / "producer.py"
    producer.write_text(producer.read_text().replace(
        'lambda: run(cfg["toy"]["n"], cfg["seed"])', 'lambda: {"n_val": len(load_tokens(data_dir, "val"))}').replace(
        "def main(cfg: dict, out_path) -> dict:", "def main(cfg: dict, out_path, data_dir) -> dict:\n"
        "    from attnlab.data.prepare import load_tokens"))
    (folder / "experiment.yaml").write_text((folder / "experiment.yaml").read_text() + "data: true\n")
    (folder / "claims.yaml").write_text(TOY_CLAIM)
    page = folder / "page.py"
    page.write_text(page.read_text().replace(
        '{"n": r["n"], "mean": r["mean"], "standard error": r["mean_se"]}', '{"validation tokens": r["n_val"]}'))

    jobs = planned(snakemake(work, "-n", "--configfile", "config/smoke.yaml"))
    assert jobs == {"analyse": 1, "claims": 1, "site": 1, "charts": 1, "all": 1}, jobs  # no training, nothing else
    snakemake(work, "--cores", "2", "--configfile", "config/smoke.yaml")
    r = work / "results" / "smoke"
    n_val = json.loads((r / "toy" / "result.json").read_text())["n_val"]
    assert n_val == json.loads((r / "data" / "stats.json").read_text())["n_val"] > 0
    assert by_claim(pd.read_csv(r / "claims.csv")).loc["T1", "verdict"] == "inconclusive"  # no error estimate
    html = (r / "site" / "toy.html").read_text()
    assert re.search(rf">\s*({n_val}|{n_val:,})\s*<", html), "the page's table shows the measured count"
    assert "T1" in html and "Toy" in (r / "site" / "index.html").read_text()

    source = lambda path: (not path.startswith(("results/", ".snakemake/"))  # the run's outputs are not source,
                           and ".egg-info/" not in path)  # nor what pip writes beside the package
    modified = [p for p in git(work, "diff", "--name-only").splitlines() if source(p)]
    added = [p for p in git(work, "ls-files", "--others").splitlines() if source(p) and "__pycache__" not in p]
    assert modified == ["src/attnlab/experiments.yaml"], modified
    assert added and {p.rpartition("/")[0] for p in added} == {"src/attnlab/experiments/toy"}, added
    assert git(work, "diff", "--numstat").split()[:2] == ["1", "0"]  # one line added to the registry


def test_a_complete_run_publishes_as_a_version_whose_site_rebuilds_without_training(smoke, tmp_path):
    work = clone(smoke, tmp_path / "clone")
    head = git(work, "rev-parse", "--short=12", "HEAD")
    done = attnlab(work, "publish", "--config", "config/smoke.yaml", "--results", "results/smoke")
    assert done.returncode == 0, done.stderr
    (version,) = [p for p in (work / "results").iterdir() if p.name[:4].isdigit()]
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["commit"] == head and manifest["profile"] == "smoke" and manifest["runs"]["dag_wall_seconds"] > 0
    assert manifest["throughput_ratio"] > 0 and not list(version.rglob("*.pt"))
    git(work, "add", "results")  # a version is meant for git: the live run stays ignored
    git(work, "commit", "-qm", "publish")
    again = attnlab(work, "publish", "--config", "config/smoke.yaml", "--results", "results/smoke")
    assert again.returncode == 2 and "already exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1

    shutil.rmtree(work / "results" / "smoke")  # no run files, no checkpoints: the site needs only the version
    built = attnlab(work, "versions", "--site", "site")
    assert built.returncode == 0, built.stderr
    page = (work / "site" / version.name / "ladder.html").read_text()
    assert f"Version <code>{version.name}</code> · runs at commit <code>{head}</code>" in page
    assert f'<option value="../{version.name}/ladder.html" selected>' in page


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


def gpu_script(work: Path, profile: str, **env):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **env}
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", "tools/gpu-benchmarks.sh", profile], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_gpu_script_measures_on_a_copy_without_git_and_publishes_back_in_the_checkout(smoke, tmp_path):
    """tools/gpu-benchmarks.sh as on the lent GPU machine: the tree travels without .git, so the commit is given;
    the results come back into the checkout, where the same command keeps them (they are current) and publishes
    them as a version that holds only those benchmarks."""
    work = clone(smoke, tmp_path / "clone")
    head = git(work, "rev-parse", "--short=12", "HEAD")
    device = tmp_path / "device"
    shutil.copytree(work, device, ignore=shutil.ignore_patterns(".git", "results"))
    away = gpu_script(device, "smoke", OUT=str(tmp_path / "out"), ATTNLAB_COMMIT=head)
    assert away.returncode == 0, away.stderr
    assert "not published: a version comes from a clean git checkout" in away.stdout
    names = ["multihead", "cost", "decode"]  # the registry's benchmarks that need no data, in its order
    for name in names:
        prov = json.loads((tmp_path / "out" / name / "result.json").read_text())["provenance"]
        assert prov["commit"] == head and prov["commit_given"] is True
        shutil.copytree(tmp_path / "out" / name, work / "results" / "smoke" / name, dirs_exist_ok=True)
    before = tree(work / "results" / "smoke")

    back = gpu_script(work, "smoke")
    assert back.returncode == 0, back.stderr
    assert [line for line in back.stdout.splitlines() if " kept " in line] == [
        f"== {name}: kept results/smoke/{name}/result.json (commit {head}, the same settings)" for name in names]
    (version,) = [p for p in (work / "results").iterdir() if p.name.endswith("-only-" + "-".join(names))]
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["complete"] is False and manifest["experiments"] == names and manifest["commit"] == head
    for name in names:
        assert (version / name / "result.json").read_bytes() == (tmp_path / "out" / name / "result.json").read_bytes()
    assert tree(work / "results" / "smoke") == before, "the live results are untouched"
    assert not (version / "ladder").exists() and not (version / "claims.csv").exists()

    git(work, "add", "results")
    git(work, "commit", "-qm", "publish the benchmarks")
    built = attnlab(work, "versions", "--site", "site")
    assert built.returncode == 0, built.stderr
    cost = (work / "site" / version.name / "cost.html").read_text()
    assert f"Version <code>{version.name}</code>" in cost and "holds only multihead, cost, decode" in cost
    ladder = (work / "site" / version.name / "ladder.html").read_text()
    assert "not run" in ladder.lower()


def test_the_built_viewer_draws_the_trained_weights_and_a_click_changes_them(smoke):
    """S11 on the smoke site, opened from disk: the weights shown are the result file's, and clicking another
    word redraws them from that word's row."""
    sync_api = playwright_or_skip()
    from attnlab.maps import check_data

    r = smoke / "results" / "smoke"
    data = json.loads((r / "viewer" / "result.json").read_text())
    check_data({"examples": data["examples"]})
    first = data["examples"][0]
    model = next(iter(first["models"]))
    last = first["models"][model][-1]  # the default view: last layer, mean of heads
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM))
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((r / "site" / "viewer.html").as_uri())
        tokens = page.locator("#attnlab-viewer-tokens .av-token")
        assert tokens.count() == len(first["tokens"])
        before = json.loads(page.get_attribute("#attnlab-viewer", "data-state"))
        tokens.nth(1).click()
        after = json.loads(page.get_attribute("#attnlab-viewer", "data-state"))
        shown = float(tokens.nth(0).locator(".av-weight").inner_text())
        browser.close()
    assert before["query"] == len(first["tokens"]) - 1 and after["query"] == 1 and after["pinned"]
    want = sum(head[1][0] for head in last) / len(last)  # query 1's weight on word 0, mean of heads
    assert shown == pytest.approx(want, abs=0.006) and not errors


class LocalSite:
    """The built site served on 127.0.0.1 (an ephemeral port) from a thread, as a reader's browser would see it."""

    def __init__(self, root: Path):
        import functools
        import http.server
        import threading

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        handler = functools.partial(Quiet, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def local_target(site: Path, page: str, href: str) -> tuple[Path, str] | None:
    """A link on `page` -> (the file it opens in the built site, its anchor); None for a link off the site."""
    from urllib.parse import urldefrag, urljoin, urlparse

    url, frag = urldefrag(urljoin(f"http://site/{page}", href))
    parsed = urlparse(url)
    if parsed.netloc != "site":
        return None
    path = site / parsed.path.lstrip("/")
    return (path / "index.html" if path.is_dir() else path), frag


def test_every_chart_of_the_smoke_site_draws_only_its_own_rows(smoke, tmp_path):
    """Every chart on every page, compiled to Vega offline and read back from its scene graph (tests/charts.py):
    each panel of a faceted chart holds only its own rows and says so in its tooltips, and every share,
    accuracy, fraction or probability lies in [0, 1]. The PNGs land in one folder to look at
    ($ATTNLAB_CHARTS, else this test's folder)."""
    specs = charts.site_charts(smoke / "results" / "smoke" / "site")
    assert len(specs) >= 15, sorted(specs)
    folder = Path(os.environ.get("ATTNLAB_CHARTS") or tmp_path / "charts")
    found = []
    for name, spec in specs.items():
        found += charts.problems(name, spec)
        if charts.facet_fields(spec) and not charts.faceted_and_described(spec):
            found.append(f"{name}: its tooltips do not name the facet field, so its panels cannot be checked")
        charts.png(spec, folder / (name.replace("/", "_").replace("#", "-") + ".png"))
    print(f"{len(specs)} charts drawn in {folder}")
    assert not found, "\n".join(found)


def test_every_page_in_a_browser(smoke, tmp_path):
    """Each page of the smoke site in headless Chromium, served locally at 1280 px and at 390 px (a phone, where no
    page may scroll sideways): no console or page error, no
    request to another host, every chart drawn, every internal link and anchor resolves, the verdict column in
    view, and the viewers answer a click. Screenshots land in this test's folder."""
    sync_api = playwright_or_skip()
    site = smoke / "results" / "smoke" / "site"
    names = [*pages(), "about"]
    server = LocalSite(site)
    problems, shots = [], tmp_path / "screenshots"
    (shots / "390px").mkdir(parents=True)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM))
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            where = {"name": ""}
            page.on("console", lambda m: problems.append(f"{where['name']}: console {m.type}: {m.text}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"{where['name']}: page error: {e}"))
            page.on("request", lambda r: None if r.url.startswith((server.url, "data:", "blob:", "about:"))
                    else problems.append(f"{where['name']}: request off the local server: {r.url}"))
            for name in names:
                where["name"] = name
                page.goto(server.url + f"{name}.html", wait_until="networkidle")
                charts = page.locator(".attnlab-chart")
                for i in range(charts.count()):  # vega-embed draws after load: wait for each chart's SVG or canvas
                    try:
                        charts.nth(i).locator("svg, canvas").first.wait_for(timeout=10_000)
                    except sync_api.TimeoutError:
                        problems.append(f"{name}: chart {charts.nth(i).get_attribute('id')} was not drawn")
                for th in page.locator("table.verdicts th:last-child, table.dashboard th:nth-child(6)").all():
                    box = th.bounding_box()
                    if box is None or box["x"] + box["width"] > 1280:
                        problems.append(f"{name}: the verdict column is not in view at 1280 px ({box})")
                for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
                    target = local_target(site, f"{name}.html", href)
                    if target is None:
                        continue
                    file, frag = target
                    if not file.is_file():
                        problems.append(f"{name}: link {href} opens a file the site lacks")
                    elif frag and file.suffix == ".html" and f'id="{frag}"' not in file.read_text():
                        problems.append(f"{name}: link {href} points to an anchor its page lacks")
                page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
            phone = browser.new_page(viewport={"width": 390, "height": 844})  # a phone: nothing scrolls sideways
            phone.on("console", lambda m: problems.append(f"{where['name']} at 390 px: console {m.type}: {m.text}")
                     if m.type == "error" else None)
            for name in names:
                where["name"] = name
                phone.goto(server.url + f"{name}.html", wait_until="networkidle")
                wide = phone.evaluate("document.documentElement.scrollWidth")
                if wide > 390:
                    problems.append(f"{name}: at 390 px the page is {wide} px wide and scrolls sideways")
                phone.screenshot(path=str(shots / "390px" / f"{name}.png"))
            for name, viewer in [("viewer", "attnlab-viewer"), ("seq2seq", "seq2seq-viewer")]:
                where["name"] = name
                page.goto(server.url + f"{name}.html", wait_until="networkidle")
                before = page.get_attribute(f"#{viewer}", "data-state")
                page.locator(f"#{viewer}-tokens .av-token").nth(0).click()
                if page.get_attribute(f"#{viewer}", "data-state") == before:
                    problems.append(f"{name}: the viewer did not answer a click")
            for width, view in ((1280, page), (390, phone)):  # on a phone the rows are cards: still filtered
                where["name"] = "dashboard"
                view.goto(server.url + "dashboard.html", wait_until="networkidle")
                rows = view.locator("table.dashboard tbody tr")
                chosen = rows.first.get_attribute("data-verdict")
                view.select_option("#dashboard-verdict", chosen)
                shown = [r.get_attribute("data-verdict") for r in rows.all() if r.is_visible()]
                want = view.locator(f'table.dashboard tbody tr[data-verdict="{chosen}"]').count()
                if not (len(shown) == want > 0 and set(shown) == {chosen} and want < rows.count()):
                    problems.append(f"dashboard at {width} px: the verdict filter shows {len(shown)} rows, not the "
                                    f"{want} {chosen}")
            browser.close()
    finally:
        server.close()
    assert not problems, "\n".join(problems)
    assert sorted(p.stem for p in shots.glob("*.png")) == sorted(names)
    assert sorted(p.stem for p in (shots / "390px").glob("*.png")) == sorted(names)
