"""The Snakemake-free runner (python -m attnlab.runner): the whole DAG on a machine with torch only."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from attnlab import registry, runner
from attnlab.check import check, check_results
from attnlab.config import chosen, runs_of, seeds, validate
from attnlab.errors import AttnlabError
from attnlab.plan import plan, run_seeds
from attnlab.runs import runs
from attnlab.versions import expected
from helpers import REPO, alive, children, kill_while_training, wait_for


def test_the_plan_is_the_dag_in_an_order_it_can_run():
    cfg = validate(chosen({"profile": "quick"}, []))
    jobs = runner.jobs(cfg, REPO / "results" / "quick", threads=1)
    names = [j.name for j in jobs]
    position = {n: i for i, n in enumerate(names)}
    outputs = {str(j.output.relative_to(REPO / "results" / "quick")) for j in jobs}
    assert outputs == {f for f in expected(cfg) if f.endswith(".json")} | {"data/stats.json"}  # every run file, once
    assert names == [j.name for j in plan(cfg)] and len(names) == len(set(names)) == planned_jobs(cfg)
    for job in jobs:
        assert all(position[n] < position[job.name] for n in job.needs), job.name  # what it needs comes first
    up = next(j for j in jobs if j.name == "grouping/S6-gqa-up/seed1338")
    assert "grouping/S6-mha/seed1338" in up.needs  # up-trained from the same seed
    assert set(next(j for j in jobs if j.name == "induction").needs) == {  # L9 and B2 at every seed of its own
        "prepare_data", *(f"ladder/{run}/seed{seed}" for run in ("L9", "B2") for seed in seeds(cfg, "induction"))}
    assert seeds(cfg, "induction") == [1337, 1338, 1339, 1340]  # the second look config/quick.yaml plans for it
    assert set(next(j for j in jobs if j.name == "approximation").needs) == {  # L9 at every seed
        "prepare_data", "ladder/L9/seed1337", "ladder/L9/seed1338", "ladder/L9/seed1339"}


def planned_jobs(cfg: dict) -> int:
    """The jobs of a whole run of `cfg`, counted from the registry and the plan's seeds: one per training run and
    seed it is trained at, one per experiment that trains nothing (the data's included)."""
    trained = sum(len(run_seeds(cfg, registry.get(experiment), run)) for experiment, run in runs(cfg))
    return trained + len(registry.experiments(trains=False))


def test_the_job_count_follows_the_profile():
    """Derived, not typed: one more seed adds a job per training run (and only those). Seeds laid over a profile
    replace the seeds its experiments plan for a second look, so both sides are laid."""
    cfg = validate(chosen({"profile": "quick", "seeds": [1337, 1338, 1339]}, []))
    more = validate(chosen({"profile": "quick", "seeds": [*cfg["seeds"], 7]}, []))
    assert planned_jobs(more) - planned_jobs(cfg) == len(runs(cfg)) > 0
    assert len(plan(more)) == planned_jobs(more)


def test_some_experiments_alone_run_with_every_job_they_need():
    """A CPU owner's night of the chapter (`--only ladder position`): those experiments' runs and the data they
    need, nothing else; an experiment that reads another's runs brings them along."""
    cfg = validate(chosen({"profile": "chapter"}, []))
    results = REPO / "results" / "chapter"
    names = [j.name for j in runner.jobs(cfg, results, threads=1, only=["ladder", "position"])]
    assert names[0] == "prepare_data" and {n.split("/")[0] for n in names[1:]} == {"ladder", "position"}
    # each at its own seeds: the chapter's second look gives the ladder and position more than the profile's
    assert len(names) == 1 + sum(len(runs_of(cfg, e)) * len(seeds(cfg, e)) for e in ("ladder", "position"))
    induction = {j.name for j in runner.jobs(cfg, results, threads=1, only=["induction"])}
    assert induction == {"prepare_data", "induction", *(f"ladder/{run}/seed{seed}" for run in ("L9", "B2")
                                                        for seed in seeds(cfg, "induction"))}


def test_a_run_of_some_experiments_is_checked_for_them_alone(tmp_path):
    """A CPU cap below every E6 size leaves a CPU nothing to measure; a CPU night of the ladder and position runs
    no E6 job, so its check passes, while the whole profile on that CPU is refused, naming the setting."""
    cfg = chosen({"profile": "chapter", "device": "cpu", "cost": {"max_n_cpu": 64}}, [])
    with pytest.raises(AttnlabError, match="config error at 'cost.max_n_cpu'"):
        check(cfg, tmp_path, corpus=False)
    assert check(cfg, tmp_path, corpus=False, only=["ladder", "position"])["profile"] == "chapter"
    with pytest.raises(AttnlabError, match="config error at 'cost.max_n_cpu'"):  # cost named, or needed: checked
        check(cfg, tmp_path, corpus=False, only=["ladder", "cost"])


def test_a_dry_run_lists_every_job_in_order_and_runs_none(tmp_path, capsys):
    cfg = chosen({"profile": "chapter", "device": "cpu"}, [])
    assert runner.main(["chapter", "--set", "device=cpu", "--results", str(tmp_path / "r"), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    out = out[:next(i for i, line in enumerate(out) if "expected time of" in line)]  # then the time (test_eta)
    assert out[0] == (f"attnlab.runner: dry run of the chapter profile: {len(out) - 1} jobs (training runs at seeds "
                      "1337, 1338, 1339), none run")
    assert [x.strip() for x in out[1:]] == [j.name for j in runner.jobs(cfg, tmp_path / "r", 1)]
    assert not (tmp_path / "r").exists()


def test_an_unknown_experiment_in_only_is_one_line_before_any_job(tmp_path, capsys):
    assert runner.main(["smoke", "--results", str(tmp_path / "r"), "--only", "ladder", "ladders"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnlab.runner: error: ") and "'ladders'" in err and "\n" not in err
    assert not (tmp_path / "r").exists()


def test_a_failed_job_stops_what_needs_it_and_nothing_else(tmp_path, capsys):
    bad = runner.Job("broken", ["analyse", "no-such-experiment", "--config", "{}", "--out", str(tmp_path / "x")],
                     "{}", tmp_path / "x")
    after = runner.Job("after", ["check", "--config", "smoke"], "{}", tmp_path / "y", needs=["broken"])
    fine = runner.Job("fine", ["check", "--config", "config/smoke.yaml"], "{}", tmp_path / "z")
    failed = runner.execute([bad, after, fine], tmp_path, n_jobs=2, commit="abc")
    assert failed == ["broken", "after"]
    out = capsys.readouterr().out
    assert "broken: FAILED, see its log" in out and "skipped after: what it needs failed" in out
    assert f"started fine (its progress: {tmp_path / 'logs' / 'fine.log'})" in out and "started after" not in out
    assert (tmp_path / "logs" / "broken.log").is_file() and json.loads(
        (tmp_path / ".runner" / "fine.json").read_text())["commit"] == "abc"


def test_bad_input_is_one_line_before_any_job(tmp_path, capsys):
    assert runner.main(["smoke", "--results", str(tmp_path / "r"), "--set", "seeds=[1337,1337]"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "attnlab.runner: error: config error at 'seeds': [1337, 1337] has non-unique elements"
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("flags,line", [
    (["--jobs", "0"], "--jobs 0: at least one job must run at once (give --jobs 1 or more)"),
    (["--jobs", "-3"], "--jobs -3: at least one job must run at once (give --jobs 1 or more)"),
    (["--threads", "0"], "--threads 0: torch threads per job must be 1 to 256, as a profile's `threads`"),
    (["--threads", "100000"], "--threads 100000: torch threads per job must be 1 to 256, as a profile's `threads`"),
])
def test_a_run_of_no_jobs_or_threads_is_one_line_before_any_job(tmp_path, capsys, flags, line):
    """--jobs 0 once ran nothing and wrote a claims.csv of every claim 'not run', exiting 0."""
    assert runner.main(["smoke", "--results", str(tmp_path / "r"), *flags]) == 1
    assert capsys.readouterr().err.splitlines() == [f"attnlab.runner: error: {line}"]
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="the job's end is read from /proc")
def test_a_runner_stopped_by_sigterm_says_so_in_one_line_and_takes_its_job_with_it(tmp_path):
    """SIGTERM twice, as `timeout` sends it (to the runner, then to its whole group): one line naming what was
    stopped and what is kept, no traceback, the signal's exit code, and no job left running."""
    results = tmp_path / "smoke"
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.runner", "smoke", "--results", str(results), "--jobs", "1",
                             "--only", "ladder"], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src")},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not proc.stdout.readline().startswith("  started"):  # printed once the job is the runner's to stop
            assert proc.poll() is None, proc.stderr.read()
        job = wait_for(lambda: children(proc.pid), 60, "the runner's first job")[0]
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert err.splitlines() == [f"attnlab.runner: stopped by SIGTERM: 1 running job was stopped (prepare_data); "
                                f"0 finished jobs are kept in {results}, and the same command resumes from them"], err
    wait_for(lambda: not alive(job), 60, "the stopped job to end")


def test_a_stop_says_what_it_stopped_and_what_it_kept():
    stopped = runner.Stopped("SIGINT")
    assert runner.stopped_line(stopped, None) == "stopped by SIGINT before any job started; nothing was run"
    stopped.running, stopped.finished = ["a", "b", "c", "d"], 1
    assert runner.stopped_line(stopped, Path("r")) == ("stopped by SIGINT: 4 running jobs were stopped (a, b, c, …); "
                                                      "1 finished job is kept in r, and the same command resumes "
                                                      "from them")
    stopped.running = []
    assert runner.stopped_line(stopped, Path("r")).startswith("stopped by SIGINT: no job was running; 1 finished")


@pytest.mark.parametrize("case", ["a file", "read-only"])
def test_a_results_folder_that_cannot_take_the_run_files_is_the_snakefiles_one_line(tmp_path, capsys, monkeypatch,
                                                                                      case):
    results = tmp_path / "r" / "smoke"
    if case == "a file":
        (tmp_path / "r").write_text("")
    else:
        results.mkdir(parents=True)
        results.chmod(0o555)
        if os.geteuid() == 0:  # root writes anywhere; a user hits exactly this
            def refuse(*a, **k):
                raise PermissionError(13, "Permission denied")

            monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    with pytest.raises(AttnlabError) as snakefile:  # what the Snakefile says, before its first job
        check_results(results, write=True)
    assert runner.main(["smoke", "--results", str(results)]) == 1
    assert capsys.readouterr().err.splitlines() == [f"attnlab.runner: error: {snakefile.value}"]
    assert not (results / "logs").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="a job ends with its runner through Linux's PR_SET_PDEATHSIG")
def test_a_runner_killed_mid_run_takes_its_jobs_with_it_and_a_rerun_completes_the_ladder(tmp_path, monkeypatch,
                                                                                        capfd):
    """kill -9 of the runner while it trains the smoke ladder (11 runs; the whole profile's plan is the DAG's, see
    test_plan): its jobs end within seconds (none writes on beside the rerun); the rerun writes every run file
    and the verdicts, as the DAG would; a third call runs nothing again."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("PYTHONPATH", str(REPO / "src"))
    results = tmp_path / "smoke"
    argv = ["smoke", "--results", str(results), "--jobs", "2", "--only", "ladder"]
    kill_while_training([sys.executable, "-m", "attnlab.runner", *argv])
    assert runner.main(argv) == 0, capfd.readouterr()
    cfg = validate(chosen({"profile": "smoke"}, []))
    missing = [f for f in [*expected(cfg, ["ladder"]), "data/stats.json"] if not (results / f).is_file()]
    assert not missing
    claims = pd.read_csv(results / "claims.csv").drop_duplicates("claim_id").set_index("claim_id")
    assert claims.loc["C0.2", "verdict"] == "holds" and claims.loc["C2.10", "verdict"] == "holds"
    capfd.readouterr()
    assert runner.main(argv) == 0
    again = capfd.readouterr().out
    n = len(runner.jobs(cfg, results, 1, ["ladder"]))
    assert f"{n} jobs, {n} already done" in again and " done in " not in again
