"""Copy a profile's run summaries (never checkpoints or token files) to a folder meant for git."""
from __future__ import annotations

import shutil
from pathlib import Path

SUMMARIES = ("data/stats.json", "e*/*.json", "s*/*.json", "bench/*.json",  # analyses
             "*/*/metrics.json", "*/*/curve.csv", "*/*/probes.csv",  # training runs of every experiment
             "claims.csv", "config.yaml")


def publish(results: Path, out: Path) -> int:
    """Copy every summary under `results` to the same relative path under `out`; return how many."""
    n = 0
    for pattern in SUMMARIES:
        for src in sorted(results.glob(pattern)):
            dst = out / src.relative_to(results)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
            n += 1
    return n
