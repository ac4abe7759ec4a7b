"""Readings: the small functions that turn values into the words a page says about them, so that no sentence
about a result is typed by hand and none can contradict the numbers beside it.

A direction or an order is said only where the interval value ± k·SE clears it (k: Student's t, 95 %, at the
error's degrees of freedom, as the verdicts use); inside it the words say the difference is within the noise, and
a value with no error says so rather than guess. The pages build their sentences from these words; the estimates
they judge (Estimate, side) are attnlab.stats', those with the verdicts' error (paired, of_seeds) claims.design's.
"""
from __future__ import annotations

from attnlab.claims.design import paired
from attnlab.stats import Estimate, side

NOISE = "within the noise"
NO_ERROR = "no error to judge it by"
PPL_ERROR = "the seeds' spread and the evaluation's sampling error in quadrature"  # paired()'s error for perplexities


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


def runs_at_seeds(by_run: dict[str, list]) -> str:
    """at_seeds for some runs: where they hold different seeds (a second look that added seeds to the runs of one
    claim only), the seeds most of them hold, then the others by run: 'at each of 4 seeds (1337, 1338, 1339, 1340;
    E4-pre-warm and E4-post-warm at 1337, 1338, 1339 only)'; '' for none."""
    groups: dict[tuple, list[str]] = {}
    for run, seeds in by_run.items():
        if held := tuple(sorted(s for s in seeds if s is not None)):
            groups.setdefault(held, []).append(run)
    if len(groups) < 2:
        return at_seeds(list(next(iter(groups), ())))
    (common, _), *rest = sorted(groups.items(), key=lambda g: (-len(g[1]), -len(g[0])))
    others = "; ".join(f"{' and '.join(runs)} at {', '.join(map(str, seeds))} only" for seeds, runs in rest)
    return at_seeds(list(common))[:-1] + f"; {others})"


def count(n: int, one: str, many: str | None = None) -> str:
    """'1 sentence', '16 sentences': a count with its noun in the number it takes."""
    return f"{n} {one if n == 1 else many or one + 's'}"


EPS32 = 2.0 ** -23  # float32's machine epsilon: one rounding step of a number near 1


def rounding_steps(x: float) -> str:
    """An absolute difference in float32 rounding steps: '1.2 rounding steps of a float32 number near 1'."""
    steps = f"{x / EPS32:.2g}"
    return f"{steps} rounding step{'' if steps == '1' else 's'} of a float32 number near 1"
