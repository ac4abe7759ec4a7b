"""The verdicts' design: an interval value ± k·SE with k Student's t at the level of its look, two looks
(the profile's seeds, then the seeds an experiment adds), and each part's error sources (Noise); and the estimates
a page judges with the same error (paired, of_seeds)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

from attnlab.errors import AttnlabError
from attnlab.stats import Estimate, jackknife_se, of_values, ppl_without, t_quantile

COVERAGE = "95 %"


@functools.lru_cache(maxsize=65536)
def k_at(df: float, level: float) -> float:
    """The k of value ± k·SE at a two-sided `level` (0.05: 95 %): Student's t at `df` degrees of freedom, which
    may be fractional; inf: the normal."""
    if df < 1:
        raise AttnlabError(f"no interval at {df} degrees of freedom")
    return t_quantile(level, df)


MAX_SEEDS = 30  # beyond this many seeds, "more than 30" settles nothing a budget would pay for

# The sequential design: a claim is judged at the profile's seeds (the first look) and, where that leaves it
# inconclusive and its settle count is at most SECOND_LOOK_MOST seeds, again at the seeds its experiment adds (the
# second look, the last). Each look spends part of the 5 % error (two-sided) a wrong "reproduced" or "not
# reproduced" may have in all: LOOKS[i] is the level of look i + 1's interval.
LOOKS = (0.025, 0.025)
SECOND_LOOK_MOST = 10
DOMINANT_SHARE = 2 / 3  # a source "dominates" an error when it holds at least this share of its variance


@dataclass
class Noise:
    """A numeric part's error sources: the seeds' spread (sd over n seeds) and the evaluation's sampling error,
    which does not shrink with seeds (every seed is scored on the same held-out data, so it is in no seed's
    spread). `first_look`: the profile's own seed count (None: n), the last seed count of the design's first look.
    `seeded`: False where nothing the part reads was made at a seed (a benchmark, an analysis run once), so that no
    seed can be added: its one look is the whole design, at the level of all the looks together."""
    n: int = 1
    seed_sd: float | None = None   # None below two seeds
    sampling: float | None = None  # None: the value reads nothing the evaluation samples, and states no error
    sampling_df: float = math.inf  # the jackknife's blocks - 1; a stated (binomial) error: normal
    first_look: int | None = None
    seeded: bool = True

    def sources(self, n: int) -> list[tuple[str, float, float]]:
        """(source, its variance, its degrees of freedom) at n seeds of the same spread."""
        out = [] if self.seed_sd is None else [("seeds", self.seed_sd ** 2 / n, n - 1)]
        return out + ([] if self.sampling is None else [("sampling", self.sampling ** 2, self.sampling_df)])

    def at(self, n: int) -> tuple[float | None, float]:
        """(SE, a degrees of freedom) at n seeds: the two sources in quadrature (None without either), and the
        degrees of freedom of the one with the larger variance (k weighs both's, see k)."""
        parts = self.sources(n)
        if not parts:
            return None, math.inf
        return math.sqrt(sum(v for _, v, _ in parts)), max(parts, key=lambda p: p[1])[2]

    def look(self, n: int) -> int:
        """The design's look a judgement at n seeds is: 1 up to the profile's own seeds, 2 beyond them."""
        return 1 if n <= (self.first_look or self.n) else len(LOOKS)

    def level(self, n: int) -> float:
        """The two-sided error the interval at n seeds may have: its look's share of the design's, or all of it
        for a part no seed can be added to."""
        return LOOKS[self.look(n) - 1] if self.seeded else sum(LOOKS)

    def k(self, n: int, level: float | None = None) -> float:
        """The interval's k at n seeds, at `level` (None: the level of the design's look): each source's
        Student's t at its own degrees of freedom, weighted by its variance, so that the half-width k·SE is the
        two sources' own half-widths in quadrature. (Welch-Satterthwaite's df, read off the same few seeds, gives
        a t too small exactly when their spread came out small by chance: with three seeds that dominate the
        error it covers about 93 % where 95 % is asked; this way covers at least what is asked.)"""
        parts = self.sources(n)
        level = self.level(n) if level is None else level
        total = sum(v for _, v, _ in parts)
        if total == 0:
            return k_at(min(df for _, _, df in parts), level)
        return math.sqrt(sum(k_at(df, level) ** 2 * v for _, v, df in parts) / total)

    def dominant(self, n: int) -> str:
        """Which source the error at n seeds comes from: 'seeds' or 'sampling' where one holds at least
        DOMINANT_SHARE of its variance, else 'both' ('' without either source)."""
        parts = self.sources(n)
        total = sum(v for _, v, _ in parts)
        if len(parts) < 2 or total == 0:
            return parts[0][0] if len(parts) == 1 else "both" if parts else ""
        share = parts[0][1] / total  # the seeds'
        return "seeds" if share >= DOMINANT_SHARE else "sampling" if share <= 1 - DOMINANT_SHARE else "both"


def first_look(cfg: dict, manifest: dict | None = None) -> int:
    """The design's first look for a version of profile `cfg`: the seeds its profile trains every run at. A version
    whose seeds were laid over its profile (`--set seeds=[1338]`: a seed a night, pooled across versions) still
    follows its profile's design: the seed count of the profile's own file."""
    from attnlab.config import load_settings
    from attnlab.registry import ROOT

    path = Path(ROOT, "config", f"{cfg.get('profile')}.yaml")
    if manifest and "seeds" in (manifest.get("set") or {}) and path.is_file():
        return profile_seed_count(load_settings(str(path)))
    return profile_seed_count(cfg)


def profile_seed_count(cfg: dict) -> int:
    """How many seeds a profile trains every run at (its top-level seeds; a version from before seeds: one)."""
    from attnlab.config import seeds

    return len(seeds(cfg))


# ------------------------------------------------------------ a page's estimates, with the verdicts' error

def of_seeds(values: list[float], sampling: float | None = None) -> Estimate:
    """The mean over seeds of a value that also carries a sampling error of its own (a binomial error, stated
    per seed: their mean), with both sources in quadrature as its error, as the verdicts take it
    (Noise)."""
    spread = of_values(values)
    sd = None if spread.se is None else spread.se * math.sqrt(len(values))
    return of_noise(spread.value, Noise(len(values), sd, sampling))


def of_noise(value: float, noise: Noise) -> Estimate:
    """A value with the error its sources give (Noise), and the k they give at 95 % in one look."""
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
