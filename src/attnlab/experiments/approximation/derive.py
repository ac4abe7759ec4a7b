"""S8 on a trained layer: the numbers its page shows, from its result file: the run's entries at the seeds it
trained at, and per method and size each input's error and the trained-over-Gaussian ratio, pooled over them."""
from __future__ import annotations

import pandas as pd

from attnlab.results import measured
from attnlab.stats import mean_se

RUN = "L9"  # the trained run whose layer the approximations stand in for
SIZES = {"window": "window", "favor": "features"}  # method -> the key its sizes are recorded under
INPUTS = ("trained", "gaussian")  # the trained layer's own q, k, v and unit Gaussian ones of the same shape


def seeds_of(r: dict) -> tuple[dict, list[dict]]:
    """The run's entries at the seeds it trained at (seed -> entry), and the Diverged records of the others."""
    return measured({seed: e[RUN] for seed, e in r["by_seed"].items()})


def pooled(points: list[tuple[float, float | None]]) -> tuple[float, float | None]:
    """A mean over seeds with its standard error over them; at one seed, its value and its error over the batches."""
    return points[0] if len(points) == 1 else mean_se([m for m, _ in points])


def table(runs: list[dict]) -> pd.DataFrame:
    """Per method and size: each input's error and the trained-over-Gaussian ratio, pooled over the seeds."""
    rows = []
    for method, key in SIZES.items():
        for i, point in enumerate(runs[0]["trained"][method]):
            row = {"method": method, "size": point[key]}
            for inputs in INPUTS:
                row[inputs], row[f"{inputs}_se"] = pooled([(e[inputs][method][i]["relative_error"],
                                                            e[inputs][method][i]["se"]) for e in runs])
            ratios = [e["trained_over_gaussian"][method][i] for e in runs]
            row["ratio"], row["ratio_se"] = pooled([(x["ratio"], x["se"]) for x in ratios])
            rows.append(row)
    return pd.DataFrame(rows)


def attention(runs: list[dict], key: str) -> dict[str, float]:
    """How peaked each input's attention is (`key`: score_std, entropy), its mean over the seeds."""
    return {k: pooled([(e[k]["attention"][key], None) for e in runs])[0] for k in INPUTS}
