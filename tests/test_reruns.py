"""What a change reruns, shown with `snakemake -n` over a copy of the finished smoke run: a code edit reruns exactly the
jobs that import the file, other settings or a lost output only what they touch."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attnlab import imports
from attnlab.config import load, resolve
from attnlab.registry import load as load_registry
from attnlab.registry import page_module, pages
from attnlab.registry import training
from dag import REPO, edit, planned, profile, snakemake, tree


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


def test_the_profile_can_be_named_instead_of_given_as_a_file(smoke):
    assert planned(snakemake(smoke, "-n", "--config", "profile=smoke")) == {}


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
