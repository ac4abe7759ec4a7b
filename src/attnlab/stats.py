"""The few statistics the producers share, each with its standard error: a mean, a fraction, a least-squares line
(and a power law's, on log-log axes) and a bootstrap over repeated rounds. Plain Python, so that the claims read
numbers, not arrays."""
from __future__ import annotations

import math
import random
import statistics


def mean_se(xs: list[float]) -> tuple[float, float]:
    """The mean and its standard error, sd / √n (0 for a single value)."""
    n = len(xs)
    mean = sum(xs) / n
    return mean, (statistics.stdev(xs) / math.sqrt(n) if n > 1 else 0.0)


def binomial_se(p: float, n: int) -> float:
    """Standard error of a fraction p of n independent trials, taken at the Agresti-Coull estimate
    (np + 2) / (n + 4): the same as √(p(1 − p)/n) to a few per cent away from the ends, but a count of 0 (or n)
    keeps an error, about as wide as the exact 95 % bound 3/n, instead of claiming none."""
    adjusted = (n * p + 2) / (n + 4)
    return math.sqrt(adjusted * (1 - adjusted) / (n + 4))


def fit_line(xs: list[float], ys: list[float]) -> dict:
    """Least-squares line y = a + b·x: {slope, se, intercept, n}. The slope's standard error is the residuals'
    (s² / Σ(x − x̄)², s² with n − 2 degrees of freedom); None with fewer than three points, where the residuals
    say nothing."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    intercept = my - slope * mx
    if n < 3:
        return {"slope": slope, "se": None, "intercept": intercept, "n": n}
    s2 = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys)) / (n - 2)
    return {"slope": slope, "se": math.sqrt(s2 / sxx), "intercept": intercept, "n": n}


def log_fit(xs: list[float], ys: list[float], last: int | None = None) -> dict | None:
    """fit_line of log y on log x (a power law's exponent) over the points with y > 0, the last `last` of them
    where given; None with fewer than two such points."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if y and y > 0]
    pts = pts[-last:] if last else pts
    return fit_line([x for x, _ in pts], [y for _, y in pts]) if len(pts) >= 2 else None


def bootstrap_se(rounds: dict, statistic, n_boot: int = 400, seed: int = 0) -> float:
    """Standard error of `statistic(rounds)` by resampling the rounds with replacement. `rounds` maps a key to
    its samples, one per round; a resample draws round indices once for every key, so what was measured in the
    same round stays paired (a slow spell of the machine falls on all of them)."""
    n = len(next(iter(rounds.values())))
    rng = random.Random(seed)
    reps = []
    for _ in range(n_boot):
        idx = [rng.randrange(n) for _ in range(n)]
        reps.append(statistic({k: [v[i] for i in idx] for k, v in rounds.items()}))
    return statistics.stdev(reps)


# --- the errors of per-example lists as result files store them (None where an example has no value) -------
# Claim expressions call these in `se:` (attnlab.report.claims), beside its own `sem` (a mean's error).

def defined(xs: list) -> list:
    """The values of a per-example list that exist (JSON has no NaN: a result file writes None)."""
    return [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]


def paired_gap_se(p: float, q: float, n: int, both: float | None = None) -> float:
    """Standard error of p - q, two accuracies on the same n examples, both the share right under both, at the
    Agresti-Min estimate (half an example added to each of the four cells, right or wrong under each): a gap of 0
    from all-agreeing examples keeps an error, as binomial_se's count of 0 does. Where which examples each got
    right was not recorded (both None), the largest error the two accuracies allow: as few right under both as
    they can be (max(0, p + q - 1))."""
    both = max(0.0, p + q - 1) if both is None else both
    first, second = (n * (p - both) + 0.5) / (n + 2), (n * (q - both) + 0.5) / (n + 2)  # right under one only
    return math.sqrt(max(first + second - (first - second) ** 2, 0.0) / (n + 2))


def se_median_ratio(a: list, b: list, floor: float = 0.0, seed: int = 0) -> float:
    """Bootstrap standard error of median(a) / max(median(b), floor), a and b per example over the same examples
    (resampled together; each median over its defined values)."""
    def ratio(r):
        return statistics.median(defined(r["a"])) / max(statistics.median(defined(r["b"])), floor)

    return bootstrap_se({"a": list(a), "b": list(b)}, ratio, seed=seed)


def ppl_without(blocks: list, drop: int | None = None) -> float:
    """The perplexity of an evaluation recorded as blocks [(mean loss, tokens), ...], without block `drop` (None:
    all of them): one replicate of the jackknife over the evaluation's blocks."""
    kept = [(mean, n) for i, (mean, n) in enumerate(blocks) if i != drop]
    return math.exp(sum(mean * n for mean, n in kept) / sum(n for _, n in kept))


def jackknife_se(k: int, replicate) -> float:
    """The delete-one jackknife's standard error over k blocks; replicate(i) is the statistic without block i."""
    reps = [replicate(i) for i in range(k)]
    mean = sum(reps) / k
    return math.sqrt((k - 1) / k * sum((r - mean) ** 2 for r in reps))

