"""A whole profile without Snakemake: every job of the DAG, in dependency order, several at once.

    python -m attnlab.runner chapter --jobs 8          # on a GPU machine (torch, no Snakemake)
    python -m attnlab.runner smoke --jobs 2            # anywhere, end to end in about two minutes
    python -m attnlab.runner chapter --only ladder position   # some experiments (and what they need): a CPU night

For a machine that has torch but not Snakemake (the lent GPU machine). Each job is the very command a rule
runs (`python -m attnlab --log LOG VERB ...`) with the settings the rule passes, so its run file is the one
the DAG would write, and the DAG counts it as done: its config hash is the same. A job whose run file is
already there, from this commit with the same settings, is kept (a killed run resumes; a training job also
resumes from its own checkpoint). Progress goes to the terminal, a line as each job starts and ends; each job's
output (a training job's progress bar too) to its log under results/<profile>/logs/.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


from attnlab import runlock
from attnlab.config import digest, seeds as profile_seeds
from attnlab.errors import AttnlabError
from attnlab.plan import with_needs
from attnlab.registry import named


class Stopped(BaseException):  # not an Exception: no `except Exception` on the way may swallow it
    """The runner was told to stop (SIGTERM, or Ctrl-C): `signal` names it; execute fills in its jobs."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name, self.running, self.finished = signal_name, [], None


STOP: list[str] = []  # the signal that asked the runner to stop, once one has


def stop(signum, frame) -> None:
    """The first SIGTERM or SIGINT stops the runner where it is; later ones are ignored (a second, as `timeout`
    sends to the whole process group, would otherwise break into the clean-up)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    STOP.append(signal.Signals(signum).name)
    raise Stopped(STOP[0])


def stopping() -> None:
    """Raise Stopped if a signal asked to stop, even where the handler's exception was swallowed on its way."""
    if STOP:
        raise Stopped(STOP[0])


@dataclass
class Job:
    name: str                 # e.g. ladder/L9/seed1337, winograd, prepare_data
    argv: list[str]           # after `python -m attnlab --log LOG`
    settings: str             # the job's settings (canonical JSON): its config hash
    output: Path              # the run file it writes
    needs: list[str] = field(default_factory=list)  # names of jobs that must finish first
    gpu: bool = False


def jobs(cfg: dict, results: Path, threads: int, only: list[str] | None = None) -> list[Job]:
    """Every job of the plan (or of the experiments `only` names, with what they need) as the command its rule
    runs, in the plan's order (what each needs comes first)."""
    data = results / "data"
    out = []
    for job in with_needs(cfg, only):
        if job.kind == "data":
            argv = ["prepare", "--config", job.settings, "--out", str(data)]
        elif job.run:
            argv = ["train", "--config", job.settings, "--run", job.run, "--threads", str(threads), "--data", str(data),
                    "--out", str((results / job.output).parent)]  # its progress bar goes to its log, as the rule's
        else:
            argv = ["analyse", job.experiment, "--config", job.settings, "--threads", str(threads),
                    "--out", str(results / job.output), *(["--data", str(data)] if job.data else [])]
        out.append(Job(job.name, argv, job.settings, results / job.output, list(job.needs), job.gpu))
    return out


LEDGER = ".runner"  # results/<profile>/.runner/<job>.json: the settings and commit each finished job ran with


def stamp(job: Job, commit: str) -> dict:
    return {"settings": digest(job.settings), "commit": commit}


def done(job: Job, results: Path, commit: str) -> bool:
    """Its run file is there, and this runner finished it at this commit with these settings."""
    ledger = results / LEDGER / f"{job.name}.json"
    try:
        return job.output.is_file() and json.loads(ledger.read_text()) == stamp(job, commit)
    except (OSError, ValueError):
        return False


def launch(argv: list[str], log: Path) -> subprocess.Popen:
    """`python -m attnlab --log LOG ...`: its output goes to LOG, a failure's one line to the terminal. It is in
    the runner's process group, and on Linux the kernel kills it when the runner dies, even by kill -9."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), runlock.PARENT: str(os.getpid())}
    return subprocess.Popen([sys.executable, "-m", "attnlab", "--log", str(log), *argv], env=env)


def ended(procs) -> list[subprocess.Popen]:
    """The processes of `procs` that have ended, as soon as one has."""
    while not (out := [p for p in procs if p.poll() is not None]):
        stopping()
        time.sleep(0.1)
    return out


def execute(todo: list[Job], results: Path, n_jobs: int, commit: str) -> list[str]:
    """Run the jobs, up to n_jobs at once, each as soon as what it needs is done; returns the failed jobs'
    names (a job whose need failed is not started)."""
    pending = {j.name: j for j in todo}
    finished, failed, running = set(), [], {}
    kept = [j.name for j in todo if done(j, results, commit) and "unknown" not in commit]
    finished.update(kept)
    for name in kept:
        pending.pop(name)
    total, t0 = len(todo), time.perf_counter()
    print(f"attnlab.runner: {total} jobs, {len(kept)} already done (this commit, the same settings), "
          f"up to {n_jobs} at once", flush=True)
    try:
        while pending or running:
            blocked = [n for n, j in pending.items() if any(d in failed for d in j.needs)]
            for name in blocked:
                failed.append(pending.pop(name).name)
                print(f"  skipped {name}: what it needs failed", flush=True)
            ready = [j for j in pending.values() if all(d in finished for d in j.needs)]
            for job in ready[: n_jobs - len(running)]:
                log = results / "logs" / f"{job.name}.log"
                running[launch(job.argv, log)] = (job, time.perf_counter())
                pending.pop(job.name)
                print(f"  started {job.name} (its progress: {log})", flush=True)
            if not running:
                break
            for proc in ended(running):
                (job, began), rc, now = running.pop(proc), proc.returncode, time.perf_counter()
                (finished.add if rc == 0 else failed.append)(job.name)
                if rc == 0:
                    ledger = results / LEDGER / f"{job.name}.json"
                    ledger.parent.mkdir(parents=True, exist_ok=True)
                    ledger.write_text(json.dumps(stamp(job, commit)))
                print(f"  [{len(finished)}/{total}] {job.name}: {'done' if rc == 0 else 'FAILED, see its log'} "
                      f"in {now - began:.1f} s ({now - t0:.0f} s so far)", flush=True)
    except Stopped as stopped:
        stopped.running, stopped.finished = sorted(job.name for job, _ in running.values()), len(finished)
        raise
    finally:  # stopped early (Ctrl-C, SIGTERM, a bug): no job outlives the runner
        for proc in running:
            proc.kill()
    return failed


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnlab.runner", description=__doc__.split("\n\n")[0])
    p.add_argument("profile", help="smoke, quick, chapter or a profile file")
    p.add_argument("--results", help="where the run files go (default results/<profile>)")
    p.add_argument("--jobs", type=int, default=2, help="jobs at once (on one GPU, several small models share it)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per job")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="settings laid over the profile, as `--config` takes them (e.g. seeds=[1337])")
    p.add_argument("--only", nargs="+", metavar="EXPERIMENT",
                   help="only these experiments (and the jobs they need), e.g. --only ladder position, or runs of "
                        "one: --only depth.E4-pre depth.E4-post")
    p.add_argument("-n", "--dry-run", action="store_true",
                   help="check the profile and list every job it would run, one a line, and their expected time, "
                        "without running any")
    p.add_argument("--times-from", metavar="FOLDER",
                   help="read the expected run times from this folder of run files (a version, or an earlier "
                        "run's results) rather than the profile's published versions")
    a = p.parse_args(argv)
    results = None
    try:  # a stop can come at any line, the imports (torch's takes seconds) included
        from attnlab.check import check, check_results
        from attnlab.config import chosen, command_line
        from attnlab.provenance import git_commit

        check_counts(a.jobs, a.threads)
        overrides = command_line(a.set)
        only = named(a.only)  # an unknown experiment is one line here
        cfg = check(chosen({"profile": a.profile, **overrides}, []), only=only)  # before anything runs
        results = Path(a.results or f"results/{cfg['profile']}")
        todo = jobs(cfg, results, a.threads, only)
        commit = git_commit()
        to_run = [job for job in todo if not (done(job, results, commit) and "unknown" not in commit)]
        if a.dry_run:
            print(dry_run_lines(todo, cfg), flush=True)
            print(expected_time(cfg, only, to_run, a.jobs, a.times_from), flush=True)
            return 0
        check_results(results, write=True)  # as the Snakefile does: one line if it cannot take the run files
        print(expected_time(cfg, only, to_run, a.jobs, a.times_from), flush=True)
        stopping()
        failed = execute(todo, results, a.jobs, commit)
        if failed:
            raise AttnlabError(f"{len(failed)} jobs failed or were skipped ({', '.join(failed[:3])}"
                               f"{', …' if len(failed) > 3 else ''}); their logs are under {results}/logs/")
        claims = launch(["claims", "--results", str(results),
                         "--out", str(results / "claims.csv")], results / "logs" / "claims.log")
        if claims.wait():
            raise AttnlabError(f"the verdicts failed; see {results}/logs/claims.log")
        print(f"attnlab.runner: every run file and claims.csv are in {results}", flush=True)
        return 0
    except (AttnlabError, ValueError) as err:
        print(f"attnlab.runner: error: {err}", file=sys.stderr)
        return 1
    except Stopped as stopped:
        print(f"attnlab.runner: {stopped_line(stopped, results)}", file=sys.stderr)
        return 128 + signal.Signals[stopped.signal_name]


def dry_run_lines(todo: list[Job], cfg: dict) -> str:
    """What a dry run prints: a line saying nothing runs, then every job's name, in the order they would start."""
    seeds = ", ".join(map(str, profile_seeds(cfg)))
    head = (f"attnlab.runner: dry run of the {cfg['profile']} profile: {len(todo)} jobs (training runs at seeds "
            f"{seeds}), none run")
    return "\n".join([head, *(f"  {job.name}" for job in todo)])


def expected_time(cfg: dict, only: list[str] | None, to_run: list[Job], n_jobs: int, source: str | None) -> str:
    """The expected run time of the jobs about to run, per experiment, and the wall time at n_jobs at once."""
    from attnlab.eta import expected

    names = {job.name for job in to_run}
    planned = [job for job in with_needs(cfg, only) if job.name in names]
    kept = len({job.name for job in with_needs(cfg, only)} - names)
    what = f"the {len(planned)} jobs to run" + (f" ({kept} kept from an earlier run)" if kept else "")
    return "attnlab.runner: " + expected(planned, cfg["profile"], n_jobs, what, source and Path(source))


def check_counts(jobs: int, threads: int) -> None:
    """--jobs and --threads: at least one job at once, and torch threads within the profile schema's range."""
    from attnlab.runs import common_schema

    if jobs < 1:
        raise AttnlabError(f"--jobs {jobs}: at least one job must run at once (give --jobs 1 or more)")
    most = common_schema()["properties"]["threads"]["maximum"]
    if not 1 <= threads <= most:
        raise AttnlabError(f"--threads {threads}: torch threads per job must be 1 to {most}, as a profile's `threads`")


def stopped_line(stopped: Stopped, results: Path | None) -> str:
    """What a stop did, in one line: the jobs it stopped, and that what finished is kept for a rerun."""
    if stopped.finished is None:
        return f"stopped by {stopped.signal_name} before any job started; nothing was run"
    n, names = len(stopped.running), ", ".join(stopped.running[:3]) + (", …" if len(stopped.running) > 3 else "")
    ran = f"{n} running job{'s were' if n > 1 else ' was'} stopped ({names})" if n else "no job was running"
    kept = f"{stopped.finished} finished job{' is' if stopped.finished == 1 else 's are'} kept in {results}"
    return f"stopped by {stopped.signal_name}: {ran}; {kept}, and the same command resumes from them"


if __name__ == "__main__":
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)  # through execute's `finally`: no job outlives the runner
    sys.exit(main())
