"""Readings: the small functions that turn values into the words a page says about them, so that no sentence
about a result is typed by hand and none can contradict the numbers beside it.

A direction or an order is said only where the interval value ± k·SE clears it (k: Student's t, 95 %, at the
error's degrees of freedom, as the verdicts use); inside it the words say the difference is within the noise, and
a value with no error says so rather than guess. The pages build their sentences from these words.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from attnlab.claims.design import Noise, t95
from attnlab.stats import jackknife_se, mean_se, ppl_without

NOISE = "within the noise"
NO_ERROR = "no error to judge it by"
PPL_ERROR = "the seeds' spread and the evaluation's sampling error in quadrature"  # paired()'s error for perplexities


@dataclass(frozen=True)
class Estimate:
    """A value with its standard error (None: nothing to judge a direction by) and the degrees of freedom k is
    read at (n − 1 for a mean over n seeds)."""
    value: float
    se: float | None = None
    df: float = math.inf
    k: float | None = None  # where the error has two sources: their k (verdicts.Noise.k at 95 %), else t at df

    @property
    def half(self) -> float | None:
        """Half the interval's width, k·SE (None without an error)."""
        return None if self.se is None else (t95(self.df) if self.k is None else self.k) * self.se


def of_values(values: list[float]) -> Estimate:
    """The mean of values that vary by seed (or draw), with its standard error sd/√n at n − 1 degrees of freedom
    (one value: no error)."""
    mean, se = mean_se(values)
    return Estimate(mean, se, len(values) - 1) if len(values) > 1 else Estimate(mean)


def of_seeds(values: list[float], sampling: float | None = None) -> Estimate:
    """The mean over seeds of a value that also carries a sampling error of its own (a binomial error, stated
    per seed: their mean), with both sources in quadrature as its error, as the verdicts take it
    (verdicts.Noise)."""
    spread = of_values(values)
    sd = None if spread.se is None else spread.se * math.sqrt(len(values))
    return of_noise(spread.value, Noise(len(values), sd, sampling))


def of_noise(value: float, noise: Noise) -> Estimate:
    """A value with the error its sources give (verdicts.Noise), and the k they give at 95 % in one look."""
    se, df = noise.at(noise.n)
    return Estimate(value, se, df, None if se is None else noise.k(noise.n, 0.05))


def paired(a, b, how=lambda x, y: x - y) -> Estimate:
    """how(a, b) seed by seed, over the seeds both have, as a mean with its error: runs trained at the same seed
    share data order and evaluation, so their difference is judged on its own spread. Where both are perplexities
    with their evaluation blocks (results.Spread), the error is, as the verdicts take it, that spread and the
    evaluation's sampling error in quadrature: a jackknife over the blocks both were scored on (so one seed has an error
    too). Runs with no seed in common give how() of their means, with no error to judge it by. `a`, `b`:
    results.Spread, or seed -> value."""
    blocks_a, blocks_b = getattr(a, "blocks", {}), getattr(b, "blocks", {})
    a, b = getattr(a, "by_seed", a), getattr(b, "by_seed", b)
    seeds = [s for s in a if s in b]
    if not seeds:
        return Estimate(how(sum(a.values()) / len(a), sum(b.values()) / len(b)))
    spread = of_values([how(a[s], b[s]) for s in seeds])
    if not all(s in blocks_a and s in blocks_b for s in seeds):
        return spread
    sizes = {len(blocks[s]) for blocks in (blocks_a, blocks_b) for s in seeds}
    if len(sizes) != 1 or (k := sizes.pop()) < 2:  # blocks that do not line up: no jackknife over them
        return spread

    def replicate(i: int) -> float:
        return sum(how(ppl_without(blocks_a[s], i), ppl_without(blocks_b[s], i)) for s in seeds) / len(seeds)

    sd = None if spread.se is None else spread.se * math.sqrt(len(seeds))
    return of_noise(spread.value, Noise(len(seeds), sd, jackknife_se(k, replicate), k - 1))


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


def said(e: Estimate | None, above: str, below: str, of: float = 0.0, within: str = NOISE,
         unknown: str = NO_ERROR) -> str:
    """The words for where an estimate lies against `of`: `above`, `below`, `within` (the interval holds `of`) or
    `unknown` (no error)."""
    return {"above": above, "below": below, "within": within, None: unknown}[side(e, of)]


def versus(a, b, above: str = "higher", below: str = "lower") -> str:
    """Two runs' means over seeds (results.Spread) and their difference paired by seed, with its interval and a
    direction only where that clears zero: '58.03 against 56.50, a difference of +1.53 ± 0.14: higher'."""
    e = paired(a, b)
    return f"{a.mean:.2f} against {b.mean:.2f}, a difference of {interval(e)}: " + said(e, above, below)


def growth(e: Estimate) -> str:
    """A log-log slope (an exponent of n) in words: where its interval lies against linear (1) and quadratic
    (2)."""
    linear, quadratic = side(e, 1.0), side(e, 2.0)
    if linear is None:
        return NO_ERROR
    if quadratic == "above":
        return "steeper than quadratic"
    if quadratic == "within":
        return "quadratic within the noise" if linear == "above" else "too noisy to tell linear from quadratic"
    return {"above": "between linear and quadratic", "within": "linear within the noise",
            "below": "less than linear"}[linear]


def interval(e: Estimate, digits: int = 2, signed: bool = True) -> str:
    """'+x ± h (k·SE)' with h = k·SE at fixed decimals, so that every ± says which error it is ('+x' alone without
    an error, which the words beside it say)."""
    value = f"{e.value:+.{digits}f}" if signed else f"{e.value:.{digits}f}"
    return value + (f" ± {e.half:.{digits}f} (k·SE)" if e.half is not None else "")


def at_seeds(seeds: list) -> str:
    """Where a sentence says which seeds runs were trained at: 'at one seed (1337)', 'at each of 3 seeds (1337,
    1338, 1339)'; '' for none."""
    seeds = sorted(s for s in seeds if s is not None)
    if not seeds:
        return ""
    listed = ", ".join(map(str, seeds))
    return f"at one seed ({listed})" if len(seeds) == 1 else f"at each of {len(seeds)} seeds ({listed})"


def count(n: int, one: str, many: str | None = None) -> str:
    """'1 sentence', '16 sentences': a count with its noun in the number it takes."""
    return f"{n} {one if n == 1 else many or one + 's'}"


EPS32 = 2.0 ** -23  # float32's machine epsilon: one rounding step of a number near 1


def rounding_steps(x: float) -> str:
    """An absolute difference in float32 rounding steps: '1.2 rounding steps of a float32 number near 1'."""
    steps = f"{x / EPS32:.2g}"
    return f"{steps} rounding step{'' if steps == '1' else 's'} of a float32 number near 1"
