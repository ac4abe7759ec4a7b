"""Every claim evaluated on the run files: its expressions on each seed's runs, the mean over seeds and its
error sources (the seeds' spread, the evaluation's sampling error), then judged (attnlab.claims.verdicts)."""
from __future__ import annotations

import math

from attnlab import registry
from attnlab.claims.checks import DIRECTIONS
from attnlab.claims.design import Noise
from attnlab.claims.expressions import lacking_fields, reason_of, scope_of, value_of
from attnlab.claims.functions import SeedMean
from attnlab.claims.outcome import Outcome
from attnlab.claims.registry import Claim, Registry
from attnlab.claims.text import is_number
from attnlab.claims.verdicts import NO_ERROR, Verdict, judge_claim
from attnlab.errors import why_diverged
from attnlab.results import NotMeasured, Results, diverged
from attnlab.stats import jackknife_se


class _NotRun(Exception):
    """One seed's runs cannot give the claim a value; the message says why (`lacking`: the fields it reads that
    the run files do not have)."""

    def __init__(self, message: str, lacking: tuple = ()):
        super().__init__(message)
        self.lacking = lacking


def evaluate(claim: Claim, res: Results, first_look: int | None = None) -> Verdict:
    """The claim's verdict. A claim that reads training runs (or results) made at several seeds is computed once
    per seed, on that seed's runs; its value is the mean over seeds and its standard error the seeds' spread over √n
    and the evaluation's sampling error (a jackknife of that mean) in quadrature. Each part is judged on
    its interval value ± k·SE (see judge_part). `first_look`: the profile's own seed count (see Noise); None: the
    seeds the claim has are its first look."""
    seeds = res.common_seeds(claim.rows, claim.files, claim.keys)
    views = {seed: res.at(seed) for seed in seeds} or {None: res}
    missing = [res.path(w) for w in sorted(claim.files) if res.result(w) is None]
    missing += [res.path(r) for r in sorted(claim.rows) if r not in res.runs]
    if missing:
        return Verdict(claim, Outcome.NOT_RUN, note="missing: " + ", ".join(missing))
    bad = [(seed, r) for seed, view in views.items() for r in sorted(claim.trained_rows) if diverged(view.runs[r])]
    if bad:
        where = [why_diverged(r + ("" if len(views) < 2 else f" (seed {seed})"), views[seed].runs[r])
                 for seed, r in bad]
        return Verdict(claim, Outcome.DIVERGED, note="; ".join(where))
    try:
        each = {seed: _measure(claim, view) for seed, view in views.items()}
    except (_NotRun, NotMeasured) as why:  # NotMeasured: the claim read through a diverged run's record
        return Verdict(claim, Outcome.NOT_RUN, note=str(why), lacking=getattr(why, "lacking", ()))
    shape = (lambda v: v[""]) if list(claim.code) == [""] else (lambda v: v)
    if len(each) == 1:
        (values, sampling), = each.values()
        return judge_claim(claim, values, _one_seed(sampling, bool(seeds) or at_seeds(claim), first_look), shape)
    values = {part: _pooled([v[part] for v, _ in each.values()]) for part in claim.code}
    noise = _pooled_noise(claim, views, each, first_look)
    alone = {seed: judge_claim(claim, v, _one_seed(s), shape) for seed, (v, s) in each.items()}
    out = judge_claim(claim, values, noise, shape, prefix=f"mean of {len(each)} seeds; ")
    out.seeds, out.single = {seed: shape(v) for seed, (v, _) in each.items()}, {s: a.verdict for s, a in alone.items()}
    out.unjudged = {seed for seed, a in alone.items() if a.verdict == Outcome.INCONCLUSIVE and a.settle == NO_ERROR}
    out.single_parts = {seed: a.parts for seed, a in alone.items()}
    return out


def at_seeds(claim: Claim) -> bool:
    """Whether what the claim reads was made at the profile's seeds, so that seeds could be added to it: a
    training run, or the result of an experiment whose job reads the seeds (registry `reads`)."""
    known = {e.name for e in registry.load()}
    return bool(claim.rows) or any("seeds" in registry.get(f).reads for f in claim.files if f in known)


def _one_seed(sampling: dict, seeded: bool = True, first_look: int | None = None) -> dict[str, Noise]:
    """One seed's (or one run's) error: its sampling error alone, part -> (error, degrees of freedom); a stated
    error of a mean over seeds (SeedMean) says how many seeds, and where it is their spread it is the seeds'
    error, not a sampling error (so more seeds would settle it). `seeded`: whether seeds could be added to it
    (see Noise); `first_look`: the profile's own seed count (a mean over more seeds is the design's second look)."""
    return {part: _stated_noise(se_df, seeded, first_look) for part, se_df in sampling.items()}


def _stated_noise(se_df, seeded: bool = True, first_look: int | None = None) -> Noise:
    se, df = se_df
    if not isinstance(se_df, SeedMean):
        return Noise(1, None, se, df, first_look=first_look, seeded=seeded)
    if se_df.spread:
        return Noise(se_df.seeds, se * math.sqrt(se_df.seeds), first_look=first_look, seeded=seeded)
    return Noise(se_df.seeds, None, se, df, first_look=first_look, seeded=seeded)


def _measure(claim: Claim, res: Results) -> tuple[dict, dict]:
    """(part -> value, part -> (sampling error or None, its degrees of freedom)) on one seed's runs (or on runs
    that have one seed)."""
    scope = scope_of(res)
    values = {part: value_of(claim, part, code, scope) for part, code in claim.code.items()}
    unmeasured = [part for part, value in values.items() if value is None]
    if unmeasured:  # the producer ran but could not measure this here (e.g. no out-of-memory below a CPU's cap)
        where = ", ".join(f"value{'.' + p if p else ''}" for p in unmeasured)
        lacking = lacking_fields([claim.values[p] for p in unmeasured], scope)
        if lacking:
            raise _NotRun(f"{where} is null: the run files lack {', '.join(lacking)}, which the claim reads", lacking)
        reason = reason_of(claim, scope)
        raise _NotRun(f"{where} is null: {reason}" if reason else
                      f"{where} is null in the run files: this run did not measure it")
    needs_se = any(set(check) & DIRECTIONS for check in claim.checks.values())
    unblocked = [r for r in sorted(claim.trained_rows) if not (res.runs[r].get("eval") or {}).get("val_blocks")]
    if needs_se and unblocked:
        raise _NotRun("a direction needs the evaluation's sampling error, and "
                      + ", ".join(res.path(r) for r in unblocked) + " records no evaluation blocks (rerun it)")
    stated = {part: value_of(claim, part, code, scope, "se") for part, code in claim.se_code.items()}
    return values, {part: _sampling(claim, part, [res], [stated.get(part)]) for part, v in values.items()
                    if is_number(v)}


def _sampling(claim: Claim, part: str, views: list[Results], stated: list) -> tuple[float | None, float]:
    """The evaluation's sampling error of a part's mean over `views` (seeds), with its degrees of freedom: the
    errors the run files state (`se:`, see _stated), else a jackknife over the evaluation blocks for a part that
    reads a perplexity; (None, inf) for a part with neither."""
    if part in claim.se_code:
        return _stated(stated)
    k = _blocks(claim, views[0])
    if part not in claim.sampled or k < 2:
        return None, math.inf
    return _jackknife_of_mean(claim, part, views, k), k - 1


def _stated(stated: list) -> tuple[float | None, float]:
    """The errors a part's `se:` states, one per seed, as one: their mean, at the fewest degrees of freedom among
    them. Each is a number (normal: a binomial error), or [se, df] where the error has few (a mean over n draws:
    n − 1; a line through n points: n − 2), or None: a seed that states none leaves the part without one. One
    stated error of a mean over seeds (SeedMean: a result that pooled its seeds itself) stays one, seeds and all."""
    if len(stated) == 1 and isinstance(stated[0], SeedMean):
        return stated[0]
    pairs = [s if isinstance(s, (list, tuple)) else (s, math.inf) for s in stated]
    if any(se is None for se, _ in pairs):
        return None, math.inf
    return sum(se for se, _ in pairs) / len(pairs), min(df for _, df in pairs)


def _pooled(values: list):
    """One part over seeds: a number's mean; a truth that must hold at every seed; anything else as it is when
    every seed agrees, else the list (which no check of one value passes)."""
    if all(is_number(v) for v in values):
        return sum(values) / len(values)
    if all(isinstance(v, bool) for v in values):
        return all(values)
    return values[0] if all(v == values[0] for v in values) else values


def _pooled_noise(claim: Claim, views: dict, each: dict, first_look: int | None = None) -> dict[str, Noise]:
    """Per numeric part, the error of the mean over seeds: the seeds' sd, and the sampling error of the mean (a
    jackknife over the shared evaluation blocks, or the mean of the errors the run files state)."""
    n = len(each)
    out = {}
    for part in claim.code:
        vals = [v[part] for v, _ in each.values()]
        if not all(is_number(v) for v in vals):
            continue
        mean = sum(vals) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
        stated = [s[part] for _, s in each.values()]  # each seed's stated (error, df) (used where the claim has `se:`)
        out[part] = Noise(n, sd, *_sampling(claim, part, list(views.values()), stated), first_look)
    return out


def _jackknife_of_mean(claim: Claim, part: str, views: list[Results], k: int) -> float:
    """Delete-one-block jackknife of the claim's mean over seeds (each replicate leaves the same stretch out of
    every perplexity at every seed, so runs scored on the same tokens stay paired)."""
    def replicate(i: int) -> float:
        at_seeds = [value_of(claim, part, claim.code[part], scope_of(view, drop=i)) for view in views]
        return sum(at_seeds) / len(at_seeds)

    return jackknife_se(k, replicate)


def _blocks(claim: Claim, res: Results) -> int:
    return len(next((m["eval"]["val_blocks"] for r, m in res.runs.items()
                     if r in claim.trained_rows and (m.get("eval") or {}).get("val_blocks")), []))


def evaluate_all(claims: Registry, res: Results, first_look: int | None = None) -> list[Verdict]:
    return [evaluate(c, res, first_look) for c in claims.claims]
