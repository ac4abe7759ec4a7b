"""Performance · throughput: the numbers its page shows, from the run file (the paired rounds' speed ratios)."""
from __future__ import annotations

import math
import statistics


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


def setting(b: dict, name: str) -> dict | None:
    """The measured setting called `name` (None: not measured, or a run file from before the settings)."""
    return next((r for r in b.get("settings") or [] if r["name"] == name), None)


def round_shares(b: dict, row: dict) -> list[float] | None:
    """Each round's share of the peak for a setting: its FLOP rate in that round over the peak's rate in the same
    round (the matmul of its precision, timed in that round); None for a run file from before the peak."""
    peak = (b.get("peak") or {}).get(row.get("peak"))
    if peak is None or "flops" not in row:
        return None
    return [row["flops"] / s / (peak["flops"] / p) for s, p in zip(row["step_seconds"], peak["seconds"])]


def profiled(b: dict, name: str) -> dict | None:
    """The breakdown by operator category of the setting called `name` (None: not profiled in this file)."""
    return next((p for p in b.get("breakdown") or [] if p["setting"] == name), None)


def breakdown_rows(b: dict) -> list[dict]:
    """One row per profiled setting and category: its milliseconds per step and its share of the step."""
    return [{"setting": p["setting"], "category": cat, "ms": v["ms"], "share": v["share"]}
            for p in b.get("breakdown") or [] for cat, v in p["categories"].items()]


def counted_time(b: dict, name: str) -> dict | None:
    """Where a profiled step stands against the peak: the time of its matmuls and attention (the operators whose
    FLOPs are counted) and their share of the step; the rate those operators reach while they run, as a share of
    the peak; and `bound`, the share of the peak the whole step would reach were they at the full peak and every
    other operator's time unchanged. None without a breakdown or a count."""
    row, p = setting(b, name), profiled(b, name)
    peak = (b.get("peak") or {}).get((row or {}).get("peak"))
    if p is None or peak is None or "flops" not in row:
        return None
    cats = p["categories"]
    counted_ms = cats["matmul"]["ms"] + cats["attention"]["ms"]
    at_peak_ms = row["flops"] / peak["flops_per_s"] * 1e3
    return {"step_ms": p["step_ms"], "counted_ms": counted_ms, "counted_share": counted_ms / p["step_ms"],
            "running_share": at_peak_ms / counted_ms if counted_ms else None,
            "bound": at_peak_ms / (at_peak_ms + p["step_ms"] - counted_ms),
            **alone_time(p, row, peak)}


def alone_time(p: dict, row: dict, peak: dict) -> dict:
    """What the step's matmuls and attention take replayed alone at its own shapes (the breakdown's `alone`): each
    category's share of the peak timed beside them (`alone_share`), their milliseconds together (`alone_ms`), the
    setting's median timed step (`step_ms_timed`, outside the profiler) and what it leaves beside them
    (`others_ms`: everything else, at most), and the milliseconds of the step's FLOPs at the rounds' peak
    (`at_peak_ms`). Empty for a run file from before the replay."""
    a = p.get("alone")
    if not a or not a.get("peak_seconds") or not a["categories"]:
        return {}
    alone_peak = a["peak_flops"] / a["peak_seconds"]
    cats = a["categories"]
    alone_ms = sum(c["seconds"] for c in cats.values()) * 1e3
    step_ms = statistics.median(row["step_seconds"]) * 1e3
    return {"alone_share": {cat: c["flops"] / c["seconds"] / alone_peak for cat, c in cats.items()},
            "alone_ms": alone_ms, "step_ms_timed": step_ms, "others_ms": step_ms - alone_ms,
            "at_peak_ms": row["flops"] / peak["flops_per_s"] * 1e3}
