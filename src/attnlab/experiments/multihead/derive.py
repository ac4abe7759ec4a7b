"""S4's numbers from its result file: each head count's cost in units a table reads, and its forward time split
into the attention core and the rest of the layer."""
from __future__ import annotations

import pandas as pd


def costs(s4: dict) -> pd.DataFrame:
    """One row per head count: the result's row, with its matrix-product FLOPs in billions (gflops) and its
    softmax scores in millions (msoftmax)."""
    return pd.DataFrame(s4["rows"]).assign(gflops=lambda t: t["flops"] / 1e9,
                                           msoftmax=lambda t: t["softmax_elements"] / 1e6)


def time_parts(s4: dict) -> pd.DataFrame:
    """Median ms per head count and part: 'core' (the attention core alone) and 'rest' (the layer's median less
    the core's, at least 0), or 'whole' where the run file did not time the core apart."""
    rows = []
    for r in s4["rows"]:
        core = r.get("ms_core_median")
        if core is None:
            rows.append({"heads": r["heads"], "part": "whole", "ms": r["ms_median"]})
            continue
        rows += [{"heads": r["heads"], "part": "core", "ms": core},
                 {"heads": r["heads"], "part": "rest", "ms": max(r["ms_median"] - core, 0.0)}]
    return pd.DataFrame(rows)


def slowest_fastest(s4: dict) -> tuple[dict, dict]:
    """The rows of the head counts with the slowest and the fastest median forward time."""
    rows = s4["rows"]
    return max(rows, key=lambda r: r["ms_median"]), min(rows, key=lambda r: r["ms_median"])


def core_and_rest(s4: dict) -> list[tuple] | None:
    """(heads, the core's median ms, the rest of the layer's: its median less the core's) at the fewest heads and
    at the most (the first row and the last), None where either did not time the core apart."""
    ends = [s4["rows"][0], s4["rows"][-1]]
    if any(r.get("ms_core_median") is None for r in ends):
        return None
    return [(r["heads"], r["ms_core_median"], r["ms_median"] - r["ms_core_median"]) for r in ends]
