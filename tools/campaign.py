#!/usr/bin/env python3
"""The chapter campaign on a CPU (issue 31): a queue of runner calls, each at the clean commit its versions pool
at (the chapter's, or the quick record's for a second look at quick), in a git worktree of that commit, under
nice, one after another; and its carry, the jobs it finished, kept on main in campaign/ so that a machine that
starts afresh resumes them instead of training them again.

    tools/campaign.py start     # worktrees at their commits (made where missing), carried jobs put back, the queue run
    tools/campaign.py save      # every finished job's files and ledger stamp into campaign/: then commit them
    tools/campaign.py publish   # every folder the runner finished, published from the worktree onto main
    tools/campaign.py status    # per results folder: jobs finished, jobs carried, the expected time of the rest

A job's carry is its ledger stamp (results/<folder>/.runner/<job>.json: the commit and the settings it finished
at), its log and the files of its folder, checkpoints and locks left out. The runner counts a job done only where
its run file is there and its stamp matches its commit and settings, so a carry that does not match reruns; a
carry never overwrites a file already in the worktree. A results folder is published from the worktree when all
of its jobs are done (`python -m attnlab publish ... --results results/<folder>`); its carry can then go, and
the queue skips a folder whose work a version published on main holds (a fresh machine must not train it again).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from attnlab.runner import LEDGER  # the runner owns its ledger's place
from attnlab.versions import versions

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "680862e"  # the chapter campaign's commit: its runs pool with the chapter versions published from it
RECORD = "4303899"  # the quick version of record's: a second look at quick pools with it only from there
WORKTREE = ROOT.parent / "campaign"  # COMMIT's; another commit's is ../campaign-<commit>
CARRY = ROOT / "campaign"
CORPUS = ROOT.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"


class Folder(NamedTuple):
    """One results folder of the queue: the runner of `commit` with `profile` at `seeds` and `--only experiments`,
    where an experiment may be some of its runs (`depth.E4-pre`: a second look whose claims read those runs
    alone)."""
    name: str
    experiments: list[str]
    seeds: list[int]
    profile: str = "chapter"
    commit: str = COMMIT


QUEUE = [Folder(*f) for f in [  # in issue 31's order: claims settled per CPU-hour
    ("chapter-depth", ["depth"], [1337, 1338, 1339]),
    # the second looks config/chapter.yaml plans, each one folder, so one version: the pool judges none of their
    # seeds before all are in, and every version is one more site to build and test (the carry keeps a half-done
    # folder across machines). Seed 1340's ladder and position were started as a folder of their own. The Winograd
    # probe's is published (2026-12-05-chapter-cpu-4b1a946-only-winograd).
    ("chapter-s1340", ["ladder", "position"], [1340]),
    ("chapter-s1341-1342", ["ladder", "position"], [1341, 1342]),
    ("chapter-s1343-1344", ["position"], [1343, 1344]),
    # quick's second look, which config/quick.yaml plans for induction alone (S10.2 settles with 4 seeds): an
    # analysis reads every seed at once, so it reruns at all four, with the L9 and B2 runs it reads (~15 min of
    # run time), at the quick record's commit, so that its result is shaped as the record's and takes its place
    # there. Before depth's last jobs: it settles a claim in minutes.
    ("quick-induction-s1337-1340", ["induction"], [1337, 1338, 1339, 1340], "quick", RECORD),
    # depth's (2026-12-06-chapter-cpu-680862e-only-depth): last, as it settles one claim (C4.1) in ~10,400 s a seed.
    # C4.1 reads E4-pre and E4-post alone (`attnlab second-look` says so); the warmup runs serve C4.2b, which the
    # evaluation's budget limits, not the seeds: they stay at the first look's, ~10 CPU-hours not spent.
    ("chapter-depth-s1340-1346", ["depth.E4-pre", "depth.E4-post"], list(range(1340, 1347))),
]]

# The runner of the worktree's commit takes experiments only: for a folder of some runs, its jobs narrowed to those
# runs' and what they need, with the same launches and ledger stamps as its own command line, whose arguments
# follow the runs (JSON).
RUNS = """
import json, signal, sys
from attnlab import runner
runs, every = set(json.loads(sys.argv[1])), runner.jobs
def jobs(*args, **kwargs):
    todo = every(*args, **kwargs)
    keep = {j.name for j in todo if j.name.count("/") == 2 and j.name.split("/")[1] in runs}
    for j in reversed(todo):  # the plan's order: what a job needs comes before it
        keep |= set(j.needs) if j.name in keep else set()
    return [j for j in todo if j.name in keep]
runner.jobs = jobs
signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
sys.exit(runner.main(sys.argv[2:]))
"""


def published(experiments: list[str], seeds: list[int], root: Path = ROOT, profile: str = "chapter",
              commit: str = COMMIT) -> str | None:
    """The versions published under root/results/ at `commit` with `profile` that hold every experiment of
    `experiments` (or run, `depth.E4-pre`) at every seed of `seeds` (by their manifests' run files,
    '<experiment>/<run>/seed<S>/...'; an analysis, one file for all its seeds, at the seeds its version's
    config.yaml gives it), named; None where one is missing."""
    from attnlab.config import seeds as seeds_of
    from attnlab.versions import settings_of

    held = {}
    for m in versions(root):
        if m["profile"] == profile and m["commit"].startswith(commit):
            for f in (m.get("runs") or {}).get("run_files", []):
                parts = f.split("/")  # a training run's; an analysis states one file, 'winograd/result.json'
                if len(parts) > 3 and parts[2].startswith("seed"):
                    held[parts[0], parts[2]] = held[f"{parts[0]}.{parts[1]}", parts[2]] = m["version"]
                elif len(parts) == 2 and parts[0] in experiments:
                    cfg = settings_of(root / "results" / m["version"] / "config.yaml")
                    held.update({(parts[0], f"seed{s}"): m["version"] for s in seeds_of(cfg, parts[0])})
    found = [held.get((e, f"seed{s}")) for e in experiments for s in seeds]
    return None if None in found else ", ".join(sorted(set(found)))


def finished(results: Path) -> list[str]:
    """The jobs the runner stamped as finished in `results`, by name (the data preparation reruns in seconds)."""
    ledger = results / LEDGER
    names = [str(p.relative_to(ledger).with_suffix("")) for p in sorted(ledger.rglob("*.json"))]
    return [n for n in names if n != "prepare_data"]


def to_run(folder: str, experiments: list[str], seeds: list[int], tree: Path = WORKTREE, carry: Path = CARRY,
           profile: str = "chapter") -> list:
    """The jobs of a queued folder (`profile` at `seeds`, `experiments` and what they need) that neither the
    worktree's ledger nor the carry holds as finished, in the plan's order."""
    from attnlab.config import chosen
    from attnlab.plan import with_needs

    done = {*finished(tree / "results" / folder), *(finished(carry / folder) if (carry / folder).is_dir() else [])}
    return [job for job in with_needs(chosen({"profile": profile, "seeds": seeds}, []), experiments)
            if job.name not in done | {"prepare_data"}]  # the data preparation reruns in seconds


def expected(left: dict[str, list], slots: int, folders: list[Path] | None = None,
             profiles: dict[str, str] | None = None) -> list[str]:
    """Each unfinished folder's expected run and wall time (attnlab.eta: the run times the published versions of
    its profile, `profiles`[folder] or the chapter, recorded, scaled to this machine as it is now, the campaign's
    own load included), and the queue's wall time, the folders run one after another."""
    from attnlab import eta

    here, out, wall = eta.here(), [], 0.0
    for folder, todo in left.items():
        sources = eta.sources((profiles or {}).get(folder, "chapter")) if folders is None else folders
        est = eta.estimate(todo, sources, here, slots)
        wall += est.wall
        out += [f"campaign: {folder}: " + line.strip() if k == 0 else line
                for k, line in enumerate(eta.lines(est, f"the {len(todo)} jobs left"))]
    return out + [f"campaign: the queue's wall time left: about {eta.duration(wall)}, the folders one after another"]


def carried(path: Path) -> bool:
    """A file worth keeping: not a checkpoint, a lock or another hidden file."""
    return path.is_file() and path.suffix != ".pt" and not path.name.startswith(".")


def save(results: Path, carry: Path) -> list[str]:
    """Copy every finished job's stamp, log and files from `results` into `carry`; return the files copied."""
    copied = []
    for job in finished(results):
        files = [results / LEDGER / f"{job}.json", results / "logs" / f"{job}.log"]
        files += sorted(p for p in (results / job).rglob("*") if carried(p))
        for src in files:
            if not src.is_file():
                continue
            dest = carry / src.relative_to(results)
            if not dest.is_file() or dest.read_bytes() != src.read_bytes():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
                copied.append(str(dest.relative_to(carry)))
    return copied


def restore(carry: Path, results: Path) -> list[str]:
    """Put the carried files back into `results`, never over a file already there; return those put back."""
    put = []
    for src in sorted(p for p in carry.rglob("*") if p.is_file()) if carry.is_dir() else []:
        dest = results / src.relative_to(carry)
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
            put.append(str(src.relative_to(carry)))
    return put


def complete(results: Path, left: list | None = None) -> bool:
    """Whether the runner finished every job of `results`: it writes claims.csv after the last of them (after a
    call narrowed to some runs too, so `left`, the jobs still to run, must be none)."""
    claims, stamps = results / "claims.csv", list((results / LEDGER).rglob("*.json"))
    return (claims.is_file() and bool(stamps) and all(p.stat().st_mtime <= claims.stat().st_mtime for p in stamps)
            and not left)


def publish() -> None:
    """Publish every queued folder that is complete in its commit's worktree and that no version on main holds
    yet, as the runner ran it (its profile, its seeds laid over it, its experiments alone), from the worktree's
    clean commit with main's code for the report; move the version onto main and drop the folder's carry. Commit
    them."""
    for folder, experiments, seeds, profile, commit in QUEUE:
        if published(experiments, seeds, ROOT, profile, commit):
            continue
        tree = worktree(commit)
        results = tree / "results" / folder
        if not complete(results, to_run(folder, experiments, seeds, tree, CARRY, profile)):
            continue
        before = set((tree / "results").iterdir())
        subprocess.run([sys.executable, "-m", "attnlab", "publish", "--config", f"config/{profile}.yaml", "--set",
                        f"seeds={seeds}", "--results", f"results/{folder}", "--only", *experiments],
                       cwd=tree, check=True, env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
                                                  "PYTHONPATH": str(ROOT / "src")})
        version, = set((tree / "results").iterdir()) - before
        land(version, ROOT / "results")
        shutil.rmtree(CARRY / folder, ignore_errors=True)
        print(f"campaign: {folder}: published as results/{version.name} on main, its carry dropped: commit both")


def land(version: Path, results: Path) -> Path:
    """Move a version published in the worktree into `results` (main's), never into or over one of its name there
    (the worktree cannot see main's versions when it names one); return where it went."""
    dest = results / version.name
    if dest.exists():
        sys.exit(f"campaign: {dest} exists already: {version} stays in the worktree, and its carry on main; "
                 "publish it under another name")
    shutil.move(version, dest)
    return dest


def tree_of(commit: str) -> Path:
    return WORKTREE if commit == COMMIT else WORKTREE.with_name(f"{WORKTREE.name}-{commit}")


def worktree(commit: str = COMMIT) -> Path:
    """The worktree at `commit` beside the checkout, made where missing."""
    tree = tree_of(commit)
    if not tree.is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=ROOT, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True).stdout
    if not head.startswith(commit):
        sys.exit(f"campaign: {tree} is at {head[:12]}, not at the campaign's commit {commit}: move it or remove it")
    return tree


AUTOGROUP = Path("/proc/self/autogroup")


def yield_cores(autogroup: Path = AUTOGROUP) -> str:
    """On Linux each session (a terminal, a `setsid`) is a scheduling group, and the groups share the cores equally
    whatever their processes' niceness: `nice` alone left a campaign half the cores beside a test run started in
    another terminal. A campaign that leads a session of its own lowers that group to niceness 19 (the jobs it
    starts inherit it), so that work started beside it gets the cores first; one started in a terminal leaves the
    terminal's group as it is. Returns what it did, in words."""
    if os.getsid(0) != os.getpid():
        return ("under nice only: started inside a terminal's session, whose other work shares its scheduling group "
                "(start it as `setsid tools/campaign.py start` for a group of its own, which it then lowers)")
    try:
        autogroup.write_text("19")
    except OSError as e:
        return f"under nice only: its scheduling group could not be lowered ({autogroup}: {e.strerror or e})"
    return "its scheduling group at niceness 19: work started beside it gets the cores first"


def start(jobs: int) -> None:
    print(f"campaign: {yield_cores()}", flush=True)
    for folder, experiments, seeds, profile, commit in QUEUE:
        if (versions := published(experiments, seeds, ROOT, profile, commit)):
            print(f"campaign: {folder}: published ({versions}); skipped", flush=True)
            continue
        tree = worktree(commit)
        results = tree / "results" / folder
        put = restore(CARRY / folder, results)
        corpus = results / "data" / "input.txt"  # the profile downloads it there; this machine has a copy
        if not corpus.exists() and CORPUS.is_file():
            corpus.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(CORPUS, corpus)
        print(f"campaign: {folder}: {len(put)} carried files put back; {', '.join(experiments)} at seeds {seeds} "
              f"({profile}, at {commit})", flush=True)
        whole = list(dict.fromkeys(name.partition(".")[0] for name in experiments))
        args = [profile, "--jobs", str(jobs), "--results", f"results/{folder}", "--only", *whole, "--set",
                f"seeds={seeds}"]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "PYTHONPATH": str(tree / "src")}
        runs = [name.partition(".")[2] for name in experiments if "." in name]
        command = ["-c", RUNS, json.dumps(runs)] if runs else ["-m", "attnlab.runner"]
        subprocess.run(["nice", "-n", "19", sys.executable, *command, *args], cwd=tree, env=env)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="tools/campaign.py", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["start", "save", "publish", "status"])
    p.add_argument("--jobs", type=int, default=2, help="jobs at once (one thread each)")
    args = p.parse_args(argv)
    if args.what == "start":
        return start(args.jobs)
    if args.what == "publish":
        return publish()
    left, profiles = {}, {}
    for folder, experiments, seeds, profile, commit in QUEUE:
        results = tree_of(commit) / "results" / folder
        if (versions := published(experiments, seeds, ROOT, profile, commit)):
            print(f"campaign: {folder}: published ({versions})")  # its carry went then: none is saved
        elif args.what == "save":
            print(f"campaign: {folder}: {len(save(results, CARRY / folder))} files carried")
        else:
            kept = finished(CARRY / folder) if (CARRY / folder).is_dir() else []
            left[folder] = to_run(folder, experiments, seeds, tree_of(commit), CARRY, profile)
            profiles[folder] = profile
            print(f"campaign: {folder}: {len(finished(results))} jobs finished here, {len(kept)} carried, "
                  f"{len(left[folder])} to run")
    if args.what == "status" and any(left.values()):
        print("\n".join(expected({f: todo for f, todo in left.items() if todo}, args.jobs, None, profiles)))


if __name__ == "__main__":
    main()
