"""Performance · throughput: the numbers its page shows, from the run file (the paired rounds' speed ratios)."""
from __future__ import annotations

import math


def round_ratios(b: dict) -> list[float] | None:
    """Each paired round's reference step time over attnlab's (attnlab's speed over the reference's); None
    without paired rounds."""
    ours, theirs = b.get("attnlab_step_seconds") or [], b.get("reference_step_seconds") or []
    if not ours or len(ours) != len(theirs):
        return None
    return [t / o for o, t in zip(ours, theirs)]


def log_speedups(b: dict) -> list[tuple[dict, list[float]]]:
    """Each measured setting with its speedup over the yardstick round by round: the log of the yardstick's step
    seconds over the setting's, so that one round slowed by the machine weighs no more on the fast side than on
    the slow. Empty for a run file from before the settings."""
    rows = b.get("settings") or []
    yard = next((r["step_seconds"] for r in rows if r["name"] == b.get("yardstick")), None)
    if yard is None:
        return []
    return [(r, [math.log(y / x) for x, y in zip(r["step_seconds"], yard)]) for r in rows]


def fastest(b: dict) -> tuple[dict, list[float]] | None:
    """attnlab's setting with the highest mean log speedup, and its rounds' log speedups (None: no settings
    measured)."""
    return max(((r, logs) for r, logs in log_speedups(b) if r["model"] == "attnlab"),
               key=lambda pair: sum(pair[1]) / len(pair[1]), default=None)
