#!/usr/bin/env python3
"""What a change costs: the jobs and wall time of a complete run, a no-op rerun, and the rerun after an edit to
report code, to the attention core and to one experiment's module, each measured in a scratch clone of this
checkout (so nothing here is touched) and written to one JSON benchmark file.

    tools/measure-reruns.py smoke                    # minutes on 2 cores
    tools/measure-reruns.py quick --cores 2          # the quick profile: about an hour for the full run alone

Edits are cumulative (each is a comment appended to one file, measured after the previous rerun finished), so
every figure is what that one edit invalidates. The corpus is read from data.path in the profile or, for
profiles that download it, copied from --corpus.
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDITS = {  # what a user changes -> the file edited
    "report code": "src/attnlab/report/format.py",
    "the attention core": "src/attnlab/nn/attention.py",
    "one experiment's module": "src/attnlab/experiments/seq2seq/producer.py",
}


def planned(stdout: str) -> dict[str, int]:
    """Rule -> jobs from Snakemake's job stats table."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stdout, re.M) if m[1] != "total"}


def snakemake(work: Path, profile: str, cores: int, dry: bool = False) -> tuple[dict[str, int], float]:
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--resources", "gpu=1",
           "--config", f"profile={profile}", *(["-n"] if dry else [])]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True,
                          env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(work / "src"),
                               "HOME": str(Path.home())})
    if proc.returncode:
        raise SystemExit(f"measure-reruns: {' '.join(cmd)} failed in {work}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return planned(proc.stdout), round(time.perf_counter() - t0, 1)


def step(work: Path, profile: str, cores: int, what: str, edited: str | None) -> dict:
    if edited:
        with open(work / edited, "a") as f:
            f.write("\n# an edit, to measure what it reruns\n")
    jobs, _ = snakemake(work, profile, cores, dry=True)
    _, wall = snakemake(work, profile, cores)
    row = {"what": what, "edited": edited, "jobs": sum(jobs.values()), "by_rule": jobs, "wall_seconds": wall}
    print(f"  {what}: {row['jobs']} jobs, {wall:.0f} s", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared/data/tinyshakespeare/input.txt"))
    ap.add_argument("--out", help="the benchmark file (default: results/<profile>/benchmarks/reruns.json)")
    args = ap.parse_args()
    out = Path(args.out or ROOT / "results" / args.profile / "benchmarks" / "reruns.json")
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    with tempfile.TemporaryDirectory(prefix="attnlab-reruns-") as tmp:
        work = Path(tmp) / "attnlab"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(work)], check=True)
        (work.parent / "shared/data/tinyshakespeare").mkdir(parents=True)  # the profiles' ../shared path
        shutil.copy(args.corpus, work.parent / "shared/data/tinyshakespeare/input.txt")
        (work / "results" / args.profile / "data").mkdir(parents=True)
        shutil.copy(args.corpus, work / "results" / args.profile / "data" / "input.txt")
        print(f"measure-reruns: {args.profile} in {work} on {args.cores} cores", flush=True)
        steps = [step(work, args.profile, args.cores, "a complete run", None),
                 step(work, args.profile, args.cores, "nothing changed", None)]
        steps += [step(work, args.profile, args.cores, what, path) for what, path in EDITS.items()]
    record = {"profile": args.profile, "commit": commit, "cores": args.cores, "machine": platform.node(),
              "python": platform.python_version(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "steps": steps}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"measure-reruns: written to {out}")


if __name__ == "__main__":
    main()
