"""The functions a claim's expressions may call, besides a few builtins: means over draws (seeds,
initialisations) and the errors the stored rows allow, each error as [se, degrees of freedom] for an `se:`
expression (k is then Student's t)."""
from __future__ import annotations

import math

from attnlab import stats
from attnlab.stats import binomial_se


# binomial_se: a stated fraction's error from the fraction and its count, for run files that record only those
SAFE_BUILTINS = {f.__name__: f for f in (abs, min, max, round, len, all, any, sum, range, enumerate, binomial_se)}


# ----------------------------------------------------------------- errors the stored rows allow
# Names expressions may call besides the builtins: a mean over draws (seeds, initialisations) and the error of a
# power law's log-log slope, each error as [se, degrees of freedom] for an `se:` expression (k is then Student's t).

def _mean(xs) -> float:
    return stats.mean_se(list(xs))[0]


def _sem(xs) -> list | None:
    """The standard error of the mean of n independent draws (seeds, initialisations): [sd / √n, n − 1]; None
    from one draw, which has no spread."""
    xs = list(xs)
    return [stats.mean_se(xs)[1], len(xs) - 1] if len(xs) > 1 else None


def _slope_se(xs, ys, last: int | None = None) -> list | None:
    """The residual standard error of the log-log slope stats.log_fit fits (the points with y > 0, the last `last`
    of them): [se, n − 2]; None from fewer than three points, whose residuals say nothing."""
    fit = stats.log_fit(list(xs), list(ys), last)
    return [fit["se"], fit["n"] - 2] if fit and fit["se"] is not None else None


def _ratio_se(a: dict, b: dict) -> float:
    """The delta method's standard error of a / b for two estimates, each {"mean", "se"}, taken as independent:
    √(se_a² + (a/b)²·se_b²) / |b| (positively correlated ones vary less, so this errs wide)."""
    r = a["mean"] / b["mean"]
    return math.sqrt(a["se"] ** 2 + r ** 2 * b["se"] ** 2) / abs(b["mean"])


class SeedMean(list):
    """A stated error of a mean over `seeds` seeds, as [se, df]. `spread`: the error is the seeds' own spread
    (sd / √n, at n − 1 degrees of freedom), which more seeds shrink, so it is no sampling error and seeds settle
    it; else a held-out sampling error won (normal), which seeds do not shrink. Either way the mean is over
    `seeds` seeds (claims.csv's n_seeds)."""

    def __init__(self, se: float, df: float, seeds: int, spread: bool):
        super().__init__([se, df])
        self.seeds, self.spread = seeds, spread


def _seed_se(se: float | None, n: int, from_seeds: bool = True) -> SeedMean | None:
    """A producer's recorded error of a mean over n seeds (the profile's seeds, or a sweep's initialisations) as a
    stated one: [se, n − 1], so that k is Student's t there, a spread of the seeds; normal where `from_seeds` is
    false (a held-out sampling error won)."""
    return None if se is None else SeedMean(se, n - 1 if from_seeds else math.inf, n, from_seeds)


def _draws_se(se: float | None, n: int) -> list | None:
    """A producer's recorded error of a mean over n draws of its inputs (not seeds of a training): [se, n − 1]."""
    return None if se is None else [se, n - 1]


def _seeds_sem(xs) -> SeedMean | None:
    """sem(xs) for draws that are seeds (one value per seed or initialisation): the seeds' spread, which more seeds
    shrink."""
    xs = list(xs)
    return None if len(xs) < 2 else _seed_se(stats.mean_se(xs)[1], len(xs))


def _paired_se(d: dict) -> list | float | None:
    """A paired difference's record ({se, seeds, se_from}: attnlab.experiments.seq2seq.producer.paired) as a stated error:
    at seeds − 1 degrees of freedom where the seeds' spread is the larger source, normal where the held-out
    sampling error is."""
    return _seed_se(d["se"], d["seeds"], d["se_from"] == "seeds")


def _fit_se(se: float | None, n: int, from_fit: bool = True) -> list | float | None:
    """A producer's recorded residual error of a line through n points as a stated one: [se, n − 2]."""
    return [se, n - 2] if se is not None and from_fit else se


def _gmean(xs) -> float:
    """The geometric mean of positive draws (ratios): 10 to the mean of their log10, the mean that decades add."""
    return 10 ** _mean(math.log10(x) for x in xs)


def _gsem(xs) -> list | None:
    """The delta method's standard error of _gmean over n independent draws: gmean · ln 10 · sem(log10), at n − 1
    degrees of freedom; None from one draw."""
    xs = list(xs)
    logs = _sem(math.log10(x) for x in xs)
    return None if logs is None else [_gmean(xs) * math.log(10) * logs[0], logs[1]]


def _seeds_gsem(xs) -> SeedMean | None:
    """gsem(xs) for draws that are seeds: the seeds' spread, which more seeds shrink."""
    xs = list(xs)
    out = _gsem(xs)
    return None if out is None else _seed_se(out[0], len(xs))


SAFE_BUILTINS |= {"log10": math.log10, "zip": zip, "mean": _mean, "sem": _sem, "slope_se": _slope_se,
                  "ratio_se": _ratio_se, "seed_se": _seed_se, "paired_se": _paired_se,
                  "fit_se": _fit_se, "gmean": _gmean, "gsem": _gsem, "draws_se": _draws_se,
                  "seeds_sem": _seeds_sem, "seeds_gsem": _seeds_gsem}
# ----------------------------------------------------------------- (end of the errors the stored rows allow)

# ----------------------------------------------------------------- errors of per-example lists (S9)
# For `se:` on a result's per-example lists (None where an example has no value): the error of the gap between
# two accuracies on the same examples (paired, or the largest where the pairing was not recorded), a bootstrap of
# a ratio of medians.
SAFE_BUILTINS |= {f.__name__: f for f in (stats.paired_gap_se, stats.se_median_ratio)}
# ----------------------------------------------------------------- (end of the errors of per-example lists)
