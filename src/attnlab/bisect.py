"""`attnlab history CLAIM --bisect`: the first commit between a step's two versions that moved the claim.

The claim's experiment is rerun at one seed with the later version's settings (its config.yaml), so that only the
code varies: at the earlier version's commit, and at the commits between the two that touched the claim's code
(history.touching), each in a scratch worktree of this repository, .attnlab-bisect/<claim>-<old>-<new>/<commit>/,
and judged with today's claims. A binary search over those commits finds the first whose value moved beyond the
noise from the earlier commit's (history.moved). Each rerun's values are kept in state.json beside the worktrees,
so an interrupted bisect resumes where it stopped, and the runner's ledger resumes a rerun cut mid-way.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

from attnlab import eta, layout, registry
from attnlab.claims.evaluate import evaluate
from attnlab.config import seeds
from attnlab.errors import AttnlabError
from attnlab.history import Row, claim_of, compared, moved
from attnlab.results import gather
from attnlab.versions import settings_of

SCRATCH = ".attnlab-bisect"


def chosen_step(rows: list[Row], at: str | None) -> Row:
    """The row whose step is bisected: the one at version `at`, else the newest step."""
    steps = [r for r in rows if r.step]
    if at:
        found = next((r for r in rows if r.version == at), None)
        if found is None or not found.step:
            raise AttnlabError(f"version {at} is no step of this claim's history; steps: "
                               f"{', '.join(r.version for r in steps) or 'none'}")
        return found
    if not steps:
        raise AttnlabError("this claim never stepped between versions of one budget: nothing to bisect")
    return steps[-1]


def clean(root: Path) -> None:
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                          text=True)
    if done.returncode != 0 or done.stdout.strip():
        raise AttnlabError(f"{root} has uncommitted changes (or is not a git checkout): --bisect builds worktrees "
                           "of its commits and must find the tree as committed; commit or stash them first")


def rerun_seconds(folder: Path, experiment: str, seed: int) -> float:
    """The recorded time of the experiment's run files at one seed in a version (0 where none records one)."""
    def seed_in(rel: str) -> int | None:  # the seed folder a run file sits in, if any (a run's or an analysis's)
        return next((s for part in rel.split("/") if (s := layout.seed_of_folder(part)) is not None), None)

    # a file of several seeds' results (an analysis that reads them all) counts one seed's share of its time
    return sum(r.seconds / (r.seeds or 1) for rel, r in eta.records_of(folder).items()
               if rel.split("/")[0] == experiment and seed_in(rel) in (None, seed))


def bisect(claim_id: str, root: Path = registry.ROOT, at: str | None = None, seed: int | None = None, say=print) -> str:
    """Rerun and search; returns the first commit (short hash and subject) that moved the claim, in words."""
    root = Path(root)
    claim = claim_of(claim_id)
    clean(root)
    rows = compared(claim_id, root)
    row = chosen_step(rows, at)
    step = row.step
    if step.commits is None:
        raise AttnlabError(f"git cannot list the commits between {step.since} and {row.version} here (a copy "
                           "outside git, or a shallow clone): nothing to bisect")
    if not step.commits:
        raise AttnlabError(f"no commit between {step.since} and {row.version} touched {claim_id}'s code: the "
                           "settings or the seeds explain this step, not a commit")
    before = next(r for r in rows if r.version == step.since)
    seed = seed if seed is not None else seeds(settings_of(root / "results" / row.version / "config.yaml"))[0]
    candidates = [before.manifest["commit"]] + [h for h, _ in step.commits]
    subjects = dict(step.commits)
    folder = root / SCRATCH / f"{claim_id}-{before.manifest['commit'][:7]}-{row.manifest['commit'][:7]}"
    folder.mkdir(parents=True, exist_ok=True)
    settings = folder / "config.yaml"
    shutil.copy(root / "results" / row.version / "config.yaml", settings)
    state_file = folder / "state.json"
    state = json.loads(state_file.read_text()) if state_file.is_file() else {}
    runs = 2 + math.ceil(math.log2(max(len(candidates) - 1, 1)))  # both ends, then halving the span between
    each = rerun_seconds(root / "results" / row.version, claim.experiment, seed)
    say(f"bisect {claim_id} over {len(candidates) - 1} commits between {step.since} and {row.version}: at most "
        f"{runs} reruns of {claim.experiment} at seed {seed} with {row.version}'s settings, about "
        f"{each:.0f} s each as recorded ({len(state)} done before, kept in {state_file})")

    def value(commit: str):
        if commit not in state:
            state[commit] = rerun(root, folder, commit, settings, claim.experiment, seed)
            state_file.write_text(json.dumps(state, indent=1))
        results = Path(state[commit])
        return evaluate(claim, gather(results)) if results.is_dir() else None

    old = value(candidates[0])
    if old is None:
        raise AttnlabError(f"the rerun at {candidates[0][:7]} made no run files: see {folder}")
    last = value(candidates[-1])
    if last is None or not moved(last, old) and last.verdict == old.verdict:
        return (f"at seed {seed}, {claim_id} does not move between {candidates[0][:7]} and {candidates[-1]} with "
                f"{row.version}'s settings: no commit moved it; the settings or the seeds explain the step")
    lo, hi = 0, len(candidates) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        v = value(candidates[mid])
        if v is not None and (moved(v, old) or v.verdict != old.verdict):
            hi = mid
        else:
            lo = mid
    first = candidates[hi]
    return f"the first commit that moved {claim_id} at seed {seed}: {first} {subjects.get(first, '')}".rstrip()


def rerun(root: Path, folder: Path, commit: str, settings: Path, experiment: str, seed: int) -> str:
    """The experiment rerun at `commit` in a worktree of its own; the folder of its run files ('' if it failed)."""
    tree = folder / commit
    if not tree.is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), commit], cwd=root, check=True,
                       capture_output=True)
    results = tree / "results" / "bisect"
    data = root / "results" / settings_of(settings)["profile"] / "data"  # the corpus and tokens, not fetched again
    if data.is_dir() and not (results / "data").exists():
        shutil.copytree(data, results / "data")
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run([sys.executable, "-m", "attnlab.runner", str(settings.resolve()), "--only", experiment,
                           "--set", f"seeds=[{seed}]", "--jobs", "1", "--results", str(results)],
                          cwd=tree, env=env, capture_output=True, text=True)
    (folder / f"{commit}.log").write_text(done.stdout + done.stderr)
    return str(results) if done.returncode == 0 else ""
