"""One plan (attnlab.plan) for every driver: Snakemake's rules, the Snakemake-free runner and published versions
list the same jobs, with the same settings, as the rules did before the plan."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attnlab import runner
from attnlab.check import check
from attnlab.config import chosen, digest, profile_file, read_profile, resolve, validate, without_planned_seeds
from attnlab.errors import AttnlabError
from attnlab.plan import PREPARE, plan
from attnlab.versions import expected

REPO = Path(__file__).resolve().parents[1]
PROFILES = ["smoke", "quick", "chapter"]
BEFORE = json.loads((REPO / "tests" / "fixtures" / "job_settings.json").read_text())


@pytest.mark.parametrize("profile", PROFILES)
def test_every_job_keeps_the_settings_it_had_before_the_plan(profile):
    """Its settings are its rerun trigger: a result made before the plan is still done. The second looks a profile
    plans since (an experiment's own seeds) change its jobs on purpose, so they are left out here."""
    profile_doc = without_planned_seeds(read_profile(profile_file(profile)))
    got = {job.name: digest(json.loads(job.settings)) for job in plan(validate(resolve(profile_doc)))}
    assert not set(BEFORE[profile]) - set(got), "jobs gone from the plan"
    assert {name: got[name] for name in BEFORE[profile]} == BEFORE[profile]


def dry_run(work: Path, settings: list[str]) -> dict[str, dict]:
    """Every job `snakemake -n --forceall` schedules, by each of its outputs: its rule, inputs and settings."""
    env = {**os.environ, "PYTHONPATH": str(work / "src"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--printshellcmds", "--config",
                           *settings], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jobs = {}
    for block in re.findall(r"^(?:local)?rule \w+:\n.*?(?=\n\n|\Z)", proc.stdout, re.M | re.S):
        field = dict(re.findall(r"^ *(\w[\w ]*): (.*)$", block, re.M))
        argv = shlex.split(field.get("Shell command", "")) if field.get("Shell command") != "None" else []
        job = {"rule": re.match(r"(?:local)?rule (\w+)", block)[1], "input": set(field.get("input", "").split(", ")),
               "settings": argv[argv.index("--config") + 1] if "--config" in argv else None}
        jobs.update({out.removesuffix(" (update)"): job for out in field["output"].split(", ")} if "output" in field
                    else {})
    return jobs


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    work = tmp_path_factory.mktemp("checkout")
    for name in ["Snakefile", "workflow", "src", "config", "docs", "environment.yml", "mkdocs.yml"]:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, work / name)
    return work


def test_the_chapter_profile_passes_every_check_on_a_cpu():
    """The cost sizes above cost.max_n_cpu become rows not run here (tests/test_cost.py), not a refusal."""
    cfg = check(chosen({"profile": "chapter", "device": "cpu"}, []))
    assert cfg["cost"]["sizes"][-1] > cfg["cost"]["max_n_cpu"]


@pytest.mark.parametrize("profile", PROFILES)
def test_snakemake_the_runner_and_versions_list_the_same_jobs(profile, work, corpus_path):
    settings = [f"profile={profile}", f"data={{path: {corpus_path}}}"]
    if profile == "chapter":  # planned as on a CPU, whatever this machine has: its largest cost sizes do not refuse it
        settings.append("device=cpu")
    same_jobs(work, settings)


OWN = [1337, 1338, 1339, 1340]  # the quick profile's seeds, then one an experiment adds


def test_an_experiments_own_seeds_add_its_jobs_and_no_other(work, corpus_path):
    """grouping: {seeds: [...]} trains grouping's runs at the added seed; induction's own seeds train the two
    ladder runs it reads at every seed (and no other ladder run) and are the seeds its job reads; nothing else
    changes, in Snakemake's dry run as in the runner's and a version's lists."""
    quick = ["profile=quick", f"data={{path: {corpus_path}}}"]
    own = ",".join(map(str, OWN))
    scheduled, cfg = same_jobs(work, quick + [f"grouping={{seeds: [{own}]}}", f"induction={{seeds: [{own}]}}"])
    added = sorted(out for out in scheduled if "seed1340" in out and out.endswith("metrics.json"))
    runs = [name for name in cfg["grouping"] if name != "seeds"]
    assert added == sorted([f"results/quick/grouping/{r}/seed1340/metrics.json" for r in runs]
                           + [f"results/quick/ladder/{r}/seed1340/metrics.json" for r in ("B2", "L9")])
    assert json.loads(scheduled["results/quick/induction/result.json"]["settings"])["seeds"] == OWN
    assert "results/quick/ladder/L9/seed1340/metrics.json" in scheduled["results/quick/induction/result.json"]["input"]
    # before: induction at the profile's three seeds (config/quick.yaml plans its second look at four)
    before = {j.name: j.settings for j in plan(profile_of(quick + ["induction={seeds: [1337, 1338, 1339]}"]))}
    after = {j.name: j.settings for j in plan(cfg)}
    assert [n for n in before if before[n] != after[n]] == ["induction"]  # no other job reruns


def profile_of(settings: list[str]) -> dict:
    """The settings as the runner reads them (`--set`, as Snakemake reads --config), checked as the Snakefile
    does."""
    return check(chosen({k: yaml.load(v, Loader=yaml.BaseLoader) for k, v in (s.split("=", 1) for s in settings)}, []))


def same_jobs(work, settings: list[str]) -> tuple[dict, dict]:
    """Snakemake's dry run, the runner and a version's file list agree on every job (its settings and what it
    waits for); returns the dry run's jobs and the profile."""
    scheduled = dry_run(work, settings)
    # the settings as the runner reads them (`--set`, as Snakemake reads --config), checked as the Snakefile does
    cfg = profile_of(settings)
    results = Path("results") / cfg["profile"]
    files = [str(results / rel) for rel in expected(cfg) if rel != "claims.csv"]  # what a version holds
    made = {out for out, job in scheduled.items() if job["rule"] in ("prepare_data", "train", "analyse")}
    assert set(files) == {out for out in made if not out.endswith((".bin", "tokenizer.json"))}
    jobs = runner.jobs(cfg, results, threads=1)
    assert {str(j.output) for j in jobs} == {f for f in files if not f.endswith("curve.csv")}
    assert len({id(scheduled[out]) for out in made}) == len(jobs)  # one Snakemake job per runner job
    by_name = {j.name: j for j in jobs}
    for j in jobs:
        job = scheduled[str(j.output)]
        assert job["settings"] == j.argv[j.argv.index("--config") + 1] == j.settings, j.name
        for need in j.needs:  # what the runner waits for, Snakemake takes as input
            wanted = results / "data" / "train.bin" if need == PREPARE else by_name[need].output
            assert str(wanted) in job["input"], (j.name, need)
    return scheduled, cfg


@pytest.mark.parametrize("section, match", [
    ({"winograd": {"seeds": [1338, 1337, 1339, 1340]}}, r"'winograd.seeds': \[1338, 1337, 1339, 1340\] must begin "
                                                        r"with the profile's seeds \[1337, 1338, 1339\]"),
    ({"winograd": {"seeds": [1337, 1338, 1339, 1339]}}, "'winograd.seeds': .* non-unique"),
    ({"ladder": {"seeds": [1337, 1338, 1339, 2 ** 32]}}, "'ladder.seeds.3': 4294967296 is greater than the maximum"),
    ({"ladder": {"seeds": list(range(1337, 1368))}}, "'ladder.seeds': 31 entries, more than the 30 allowed"),
    ({"cost": {"seeds": [1337, 1338, 1339, 1340]}}, r"'cost': .*\('seeds' was unexpected\)"),  # it reads no seeds
])
def test_an_experiments_own_seeds_are_checked_like_the_profiles(section, match):
    with pytest.raises(AttnlabError, match=match):
        validate(chosen({"profile": "quick", **section}, []))


def test_own_seeds_equal_to_the_profiles_change_nothing():
    cfg = validate(chosen({"profile": "quick", "ladder": {"seeds": [1337, 1338, 1339]}}, []))
    base = validate(chosen({"profile": "quick"}, []))
    assert [(j.name, j.settings) for j in plan(cfg)] == [(j.name, j.settings) for j in plan(base)]


def test_a_run_named_alone_plans_its_jobs_and_no_other_run():
    """`--only depth.E4-pre depth.E4-post` (a second look that adds seeds to the runs one claim reads): those runs'
    jobs alone; the experiment named whole wins over its runs; a run the profile lacks, or a run of an experiment
    that trains none, is refused in one line naming it."""
    cfg = chosen({"profile": "chapter", "seeds": [1340, 1341]}, [])
    runs = lambda only: sorted({job.run for job in plan(cfg, only)})  # noqa: E731
    assert runs(["depth.E4-pre", "depth.E4-post"]) == ["E4-post", "E4-pre"]
    assert [job.name for job in plan(cfg, ["depth.E4-pre"])] == ["depth/E4-pre/seed1340", "depth/E4-pre/seed1341"]
    assert runs(["depth", "depth.E4-pre"]) == runs(["depth"]) == ["E4-post", "E4-post-warm", "E4-pre", "E4-pre-warm"]
    assert runs(["ladder.L9", "depth.E4-post"]) == ["E4-post", "L9"]
    with pytest.raises(AttnlabError, match=r"'depth.E4-bogus' names no run of this profile \(depth's runs: E4-pre,"):
        plan(cfg, ["depth.E4-bogus"])
    with pytest.raises(AttnlabError, match="'winograd.x' names a run of winograd, which trains none"):
        plan(cfg, ["winograd.x"])
