"""Interruptions and failures: kill -9 of Snakemake, a second invocation beside a running one (each on a fresh
checkout), and a failed download, claims step or site build over a copy of the finished smoke run: nothing already
computed is lost."""
import json
import subprocess
import sys
import time

import pytest

from dag import REPO, checkout, planned, profile, run_env, snakemake
from helpers import kill_while_training


def test_a_second_invocation_cannot_change_a_running_one(tmp_path, corpus_path):
    """While a run works through its jobs, another invocation with other settings (a dry run, and a real one
    that the lock refuses) must not change what the running jobs train with."""
    work = checkout(tmp_path, corpus_path)
    other = profile(work, "other", lambda c: c["train"].update(steps=80))
    runs = [f"results/smoke/ladder/{row}/seed1337/metrics.json" for row in ("L1", "L2", "L3", "L4")]
    env = run_env(work)
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
    env = run_env(work)
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
