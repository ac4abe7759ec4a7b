"""The few statistics the producers share, each with its standard error: a mean, a fraction, a least-squares line
(and a power law's, on log-log axes) and a bootstrap over repeated rounds; Student's t; and a value with its error
(Estimate), which the pages judge a direction by. Plain Python, so that the claims read numbers, not arrays."""
from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from attnlab.errors import AttnlabError


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
# Claim expressions call these in `se:` (attnlab.claims.functions), beside its own `sem` (a mean's error).

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



# --- Student's t at any level and any (fractional) degrees of freedom: the verdicts' k ----------------------

def t_tail(t: float, df: float) -> float:
    """P(|T| > t) for Student's t at `df` degrees of freedom (inf: the normal)."""
    if math.isinf(df):
        return 2 * (1 - statistics.NormalDist().cdf(abs(t)))
    return _incomplete_beta(df / (df + t * t), df / 2, 0.5)


def t_quantile(level: float, df: float) -> float:
    """The two-sided critical value: the t with P(|T| > t) = level at `df` degrees of freedom (any df > 0,
    fractional too; inf: the normal). Newton's method from the Cornish-Fisher expansion around
    the normal's value, kept inside a bracket that halves whenever a step would leave it."""
    if not 0 < level < 1 or df <= 0:
        raise ValueError(f"no t quantile at level {level} and {df} degrees of freedom")
    z = statistics.NormalDist().inv_cdf(1 - level / 2)
    if math.isinf(df) or df > 1e7:
        return z
    lo, hi = z, math.inf  # t lies above the normal's value at any finite df
    t = max(z, _cornish_fisher(z, df))
    for _ in range(200):
        gap = t_tail(t, df) - level
        if abs(gap) <= 1e-12 * level:
            break
        lo, hi = (t, hi) if gap > 0 else (lo, t)
        step = t + gap / (2 * _t_density(t, df))
        t = step if lo < step < hi else 2 * t if math.isinf(hi) else (lo + hi) / 2
    return t


def _cornish_fisher(z: float, df: float) -> float:
    """t's quantile from the normal's, to four terms in 1/df (close from about 5 df; Newton does the rest)."""
    terms = ((z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160)
    return z + sum(g / df ** (i + 1) for i, g in enumerate(terms))


def _t_density(t: float, df: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta function I_x(a, b), by its continued fraction (on the side where it
    converges fast)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(x, a, b) / a
    return 1 - front * _beta_fraction(1 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b), evaluated by the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return result


# --- a value with its error, and which side of a bound its interval lies on ------------------------------

# Student's t, two-sided 95 %, at 1..30 degrees of freedom (beyond 30, and for a stated binomial error, the normal
# 1.96). Three seeds give 2 degrees of freedom: their spread is itself so uncertain that 95 % needs 4.3 errors.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t95(df: float) -> float:
    """The k of value ± k·SE: Student's t two-sided 95 % quantile at `df` degrees of freedom (inf: normal)."""
    if df < 1:
        raise AttnlabError(f"no interval at {df} degrees of freedom")
    return T95[int(df) - 1] if df <= len(T95) else 1.96


@dataclass(frozen=True)
class Estimate:
    """A value with its standard error (None: nothing to judge a direction by) and the degrees of freedom k is
    read at (n − 1 for a mean over n seeds)."""
    value: float
    se: float | None = None
    df: float = math.inf
    k: float | None = None  # where the error has two sources: their k (claims.design.Noise.k at 95 %), else t at df

    @property
    def half(self) -> float | None:
        """Half the interval's width, k·SE (None without an error)."""
        return None if self.se is None else (t95(self.df) if self.k is None else self.k) * self.se


def of_values(values: list[float]) -> Estimate:
    """The mean of values that vary by seed (or draw), with its standard error sd/√n at n − 1 degrees of freedom
    (one value: no error)."""
    mean, se = mean_se(values)
    return Estimate(mean, se, len(values) - 1) if len(values) > 1 else Estimate(mean)


def side(e: Estimate | None, of: float = 0.0) -> str | None:
    """'above' or 'below' `of` where the whole interval lies on that side, 'within' where it holds `of`, None
    where there is no error to judge by."""
    if e is None or e.half is None:
        return None
    if e.value - e.half > of:
        return "above"
    if e.value + e.half < of:
        return "below"
    return "within"
