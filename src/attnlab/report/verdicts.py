"""A verdict for every claim, computed from the run files; claims.csv."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from attnlab.errors import AttnlabError, why_diverged
from attnlab.report.claims import (DIRECTIONS, EXACT, ROW_VIEWS, SAFE_BUILTINS, Claim, Registry, SeedMean,
                                   check_value, describe, distance, judge, k_at, load_registry, passes)
from attnlab.report.format import fmt
from attnlab.results import NotMeasured, Results, diverged, gather
from attnlab.runfiles import MEASURED
from attnlab.stats import jackknife_se, ppl_without

COLUMNS = ["claim_id", "part", "kind", "chapter_value", "value", "value_text", "se", "k", "lo", "hi", "n_seeds",
           "verdict", "part_verdict", "settle", "note",
           "dominant", "look", "level"]  # claims.csv: one row per part of every claim
BY_SEED_COLUMNS = ["claim_id", "part", "seed", "value", "value_text", "seed_verdict"]  # claims_by_seed.csv
MAX_SEEDS = 30  # beyond this many seeds, "more than 30" settles nothing a budget would pay for
NO_ERROR = "no error estimate"
BUDGET = "budget"
DESCRIPTIVE = "descriptive"  # a part (or a whole claim) shown, tested by nothing; never counted as reproduced


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


@dataclass
class Part:
    """One part of a claim judged: its value, interval, outcome and (when inconclusive) what would settle it."""
    name: str
    kind: str
    value: object
    outcome: str
    se: float | None = None
    k: float | None = None
    df: float = math.inf  # the degrees of freedom of the error source with the larger variance (k weighs both's)
    settle: str = ""
    why: str = ""
    draws: bool = False  # its error besides the seeds' is a stated spread over draws, not an evaluation's sampling
    dominant: str = ""  # the error source that holds most of its variance: seeds, sampling or both (Noise.dominant)
    look: int = 0  # the sequential design's look its interval was read at (0: no interval)
    level: float | None = None  # the two-sided error its interval may have at that look (Noise.level)
    n_seeds: int = 1  # the seeds behind its value (a mean over seeds, in the run files or a producer's result)

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.se is None or self.k is None else (self.value - self.k * self.se,
                                                               self.value + self.k * self.se)


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    reproduced: object = None   # value, or mapping part -> value (the mean over seeds where the claim has several)
    note: str = ""
    se: dict = field(default_factory=dict)  # part -> standard error (numeric parts): sampling, and seeds' spread
    seeds: dict = field(default_factory=dict)  # seed -> its value (as `reproduced`) where the claim has several
    single: dict = field(default_factory=dict)  # seed -> the verdict that seed's runs alone would have given
    unjudged: set = field(default_factory=set)  # the seeds whose runs alone have no error to judge the claim by
    single_parts: dict = field(default_factory=dict)  # seed -> part -> Part: each part as that seed alone judged it
    parts: dict = field(default_factory=dict)  # part -> Part (empty when nothing was computed)
    settle: str = ""  # inconclusive: the seeds that would settle it at the observed spread, "budget", or why not
    lacking: tuple = ()  # not run: the fields the claim tests for that its run files lack (an older version's)

    def shown(self) -> dict[str, str]:
        """The reproduced value by part ("" for a simple claim), with its standard error where the evaluation's
        sampling or the seeds give one (v ± se), and a descriptive part said to be untested; {} when nothing was
        computed."""
        if self.reproduced is None:
            return {}
        parts = self.reproduced if isinstance(self.reproduced, dict) else {"": self.reproduced}
        untested = " (descriptive: not tested)"
        return {p: fmt(v) + (f"\u00a0±\u00a0{fmt(self.se[p])}" if self.se.get(p) else "")
                + (untested if self.claim.kinds.get(p) == DESCRIPTIVE else "") for p, v in parts.items()}

    def per_seed(self) -> dict[str, list]:
        """Part -> its value at each seed, in seed order ({} for a claim that reads one seed)."""
        if len(self.seeds) < 2:
            return {}
        by_part = [v if isinstance(v, dict) else {"": v} for v in self.seeds.values()]
        return {p: [b[p] for b in by_part] for p in by_part[0]}

    def survives(self) -> str | None:
        """Would one run have told the same? 'every seed', 'some seeds' or 'no seed' gives the reproduced verdict
        alone; 'no error alone' where no seed's runs alone have an error to judge it by (its only error is the
        seeds' spread), so one run could not have decided it (None for a claim that reads one seed, and for a
        computed one, which no seed moves)."""
        if len(self.single) < 2 or self.claim.kind in ("computed", DESCRIPTIVE):
            return None
        if self.unjudged >= set(self.single):
            return "no error alone"
        held = sum(v == "reproduced" for v in self.single.values())
        return "every seed" if held == len(self.single) else "no seed" if held == 0 else "some seeds"

    def errorless_alone(self) -> list[str]:
        """The parts that no seed's runs alone have an error to judge by (their only error is the seeds' spread),
        in the claim's order; [] for a claim that reads one seed."""
        return [p for p in self.claim.values if self.single_parts
                and all(parts.get(p) is not None and parts[p].settle == NO_ERROR for parts in self.single_parts.values())]

    def judged_alone(self) -> dict[str, int]:
        """The parts one seed's runs alone can judge (an error of their own, or an exact test), each with the
        number of seeds at which it alone reproduces; {} for a claim that reads one seed."""
        errorless = set(self.errorless_alone())
        return {p: sum(parts[p].outcome == "reproduced" for parts in self.single_parts.values())
                for p in self.claim.values if self.single_parts and p not in errorless
                and all(p in parts for parts in self.single_parts.values())}

    def rows(self) -> list[dict]:
        """claims.csv: one row per part, with the claim's verdict and the part's own."""
        chapter = self.claim.chapter_value
        out = []
        for name in self.claim.values:
            p = self.parts.get(name)
            told = chapter.get(name, "") if isinstance(chapter, dict) else chapter
            lo, hi = (p.interval if p else None) or (None, None)
            number = p is not None and _numeric(p.value)
            out.append({
                "claim_id": self.claim.id, "part": name, "kind": self.claim.kinds[name],
                "chapter_value": told if _numeric(told) else _text(told) if told != "" else "",
                "value": p.value if number else None,
                "value_text": "" if p is None or number else _text(p.value),
                "se": p.se if p else None, "k": p.k if p else None, "lo": lo, "hi": hi,
                "n_seeds": max(len(self.seeds), p.n_seeds) if p else None,
                "verdict": self.verdict, "part_verdict": p.outcome if p else self.verdict,
                "settle": p.settle if p else "", "note": p.why if p else self.note,
                "dominant": p.dominant if p else "", "look": p.look or None if p else None,
                "level": p.level if p else None,
            })
        return out

    def seed_rows(self) -> list[dict]:
        """claims_by_seed.csv: each part's value at each seed, and the verdict that seed alone gives the claim."""
        out = []
        for seed, value in self.seeds.items():
            by_part = value if isinstance(value, dict) else {"": value}
            for name, v in by_part.items():
                out.append({"claim_id": self.claim.id, "part": name, "seed": seed,
                            "value": v if _numeric(v) else None, "value_text": "" if _numeric(v) else _text(v),
                            "seed_verdict": self.single.get(seed, "")})
        return out


def _text(value) -> str:
    """A value that is not a number, as text: a string as it is, anything else as JSON (true, ["a", "b"])."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class _NotRun(Exception):
    """One seed's runs cannot give the claim a value; the message says why (`lacking`: the fields it reads that
    the run files do not have)."""

    def __init__(self, message: str, lacking: tuple = ()):
        super().__init__(message)
        self.lacking = lacking


def lacking_fields(expressions: list[str], scope: dict) -> tuple:
    """The fields these claim expressions test for (`'field' in ...`) that occur nowhere in what they read: a run
    file written before its producer recorded them. () where every field tested for is there."""
    import ast

    tested, names = [], set()
    for tree in map(ast.parse, expressions):
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
                    and isinstance(node.left.value, str) and isinstance(node.ops[0], ast.In)):
                tested.append(node.left.value)
    present = set().union(*(keys_in(scope[n]) for n in names if n in scope and n != "__builtins__"))
    return tuple(dict.fromkeys(f for f in tested if f not in present))


def keys_in(value) -> set:
    """Every mapping key anywhere inside a run file's value."""
    if isinstance(value, dict):
        return set(value).union(*(keys_in(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_in(v) for v in value))
    return set()


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
        return Verdict(claim, "not run", note="missing: " + ", ".join(missing))
    bad = [(seed, r) for seed, view in views.items() for r in sorted(claim.trained_rows) if diverged(view.runs[r])]
    if bad:
        where = [why_diverged(r + ("" if len(views) < 2 else f" (seed {seed})"), views[seed].runs[r])
                 for seed, r in bad]
        return Verdict(claim, "diverged", note="; ".join(where))
    try:
        each = {seed: _measure(claim, view) for seed, view in views.items()}
    except (_NotRun, NotMeasured) as why:  # NotMeasured: the claim read through a diverged run's record
        return Verdict(claim, "not run", note=str(why), lacking=getattr(why, "lacking", ()))
    shape = (lambda v: v[""]) if list(claim.code) == [""] else (lambda v: v)
    if len(each) == 1:
        (values, sampling), = each.values()
        return judge_claim(claim, values, _one_seed(sampling, bool(seeds) or at_seeds(claim), first_look), shape)
    values = {part: _pooled([v[part] for v, _ in each.values()]) for part in claim.code}
    noise = _pooled_noise(claim, views, each, first_look)
    alone = {seed: judge_claim(claim, v, _one_seed(s), shape) for seed, (v, s) in each.items()}
    out = judge_claim(claim, values, noise, shape, prefix=f"mean of {len(each)} seeds; ")
    out.seeds, out.single = {seed: shape(v) for seed, (v, _) in each.items()}, {s: a.verdict for s, a in alone.items()}
    out.unjudged = {seed for seed, a in alone.items() if a.verdict == "inconclusive" and a.settle == NO_ERROR}
    out.single_parts = {seed: a.parts for seed, a in alone.items()}
    return out


def at_seeds(claim: Claim) -> bool:
    """Whether what the claim reads was made at the profile's seeds, so that seeds could be added to it: a
    training run, or the result of an experiment whose job reads the seeds (registry `reads`)."""
    from attnlab import registry

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


def judge_claim(claim: Claim, values: dict, noise: dict, shape=lambda v: v, prefix: str = "") -> Verdict:
    """The claim's verdict from its parts': a computed claim holds when every part does; a measured one is not
    reproduced when any part fails, else inconclusive when any part straddles, else reproduced."""
    parts = {p: judge_part(claim, p, v, noise.get(p)) for p, v in values.items()}
    outcomes = [p.outcome for p in parts.values() if p.outcome != DESCRIPTIVE]
    if claim.kind == DESCRIPTIVE:
        verdict = DESCRIPTIVE
    elif claim.kind == "computed":
        verdict = "holds" if all(o == "holds" for o in outcomes) else "fails"
    elif any(o in ("not reproduced", "fails") for o in outcomes):
        verdict = "not reproduced"
    else:
        verdict = "inconclusive" if "inconclusive" in outcomes else "reproduced"
    settle = overall_settle([p.settle for p in parts.values() if p.outcome == "inconclusive"]) \
        if verdict == "inconclusive" else ""
    se = {p.name: p.se for p in parts.values() if p.se is not None}
    note = prefix + "; ".join(p.why for p in parts.values())
    return Verdict(claim, verdict, shape(values), note, se, parts=parts, settle=settle)


MARKS = {"reproduced": "✓", "holds": "✓", "not reproduced": "✗", "fails": "✗", "inconclusive": "?",
         DESCRIPTIVE: "·"}


def judge_part(claim: Claim, name: str, value, noise: Noise | None) -> Part:
    """One part on the interval rule: reproduced when value ± k·SE passes the test as a whole, not reproduced when
    it fails as a whole, inconclusive when it holds a bound; a computed part (and an exact test) on the value
    alone. SE holds both error sources (Noise.at); k is Student's t at the design's level for this look (LOOKS)."""
    check, kind = claim.checks[name], claim.kinds[name]
    label = f"{name}: " if name else ""
    seeds = noise.n if noise else 1
    if kind == DESCRIPTIVE:
        shown = f"{fmt(value)} ± {fmt(noise.at(noise.n)[0])}" if noise and noise.at(noise.n)[0] is not None else fmt(value)
        return Part(name, kind, value, DESCRIPTIVE, why=f"· {label}{shown}: descriptive, tested by nothing",
                    n_seeds=seeds)
    check_value(check, value, claim.id, name)
    if kind == "computed" or set(check) & EXACT:
        ok = passes(check, value)
        outcome = ("holds" if ok else "fails") if kind == "computed" else MEASURED[0 if ok else 1]
        why = f"{fmt(value)} {'passes' if ok else 'fails'} {describe(check)}"
        return Part(name, kind, value, outcome, why=f"{MARKS[outcome]} {label}{why}", n_seeds=seeds)
    se, df = noise.at(noise.n) if noise else (None, math.inf)
    if se is None:
        why = f"{fmt(value)} against {describe(check)}: {NO_ERROR}, so no interval to judge"
        return Part(name, kind, value, "inconclusive", settle=NO_ERROR, why=f"? {label}{why}", n_seeds=seeds)
    k, dominant, draws = noise.k(noise.n), noise.dominant(noise.n), _over_draws(claim, name, noise)
    lo, hi = value - k * se, value + k * se
    outcome = {"pass": "reproduced", "fail": "not reproduced", "straddle": "inconclusive"}[judge(check, value, lo, hi)]
    settle = seeds_to_settle(check, value, noise) if outcome == "inconclusive" else ""
    said = {"reproduced": "passes {} throughout", "not reproduced": "fails {} throughout",
            "inconclusive": "straddles a bound of {}"}[outcome].format(describe(check))
    why = (f"{fmt(value)} ± {fmt(k)} × SE {fmt(se)} ({dominant_words(dominant, draws)}) = [{fmt(lo)}, {fmt(hi)}] "
           f"{said}"
           + (f"; settles with {settle} seeds" if settle.isdigit() else f"; {settle}" if settle else ""))
    return Part(name, kind, value, outcome, se, k, df, settle, f"{MARKS[outcome]} {label}{why}", draws, dominant,
                noise.look(noise.n), noise.level(noise.n), seeds)


def dominant_words(dominant: str, draws: bool = False) -> str:
    """Which source an error comes from, in words (`draws`: its error besides the seeds' is a stated spread over
    the run's own draws)."""
    other = "the spread over the run's own draws" if draws else "the sampling error"
    return {"seeds": "mostly the seeds' spread", "sampling": f"mostly {other}",
            "both": f"the seeds' spread and {other} alike"}.get(dominant, "")


def _over_draws(claim: Claim, name: str, noise: Noise) -> bool:
    """Whether a part's error besides the seeds' is a spread over the run's own draws (initialisations, examples,
    a fit's points), which more draws would shrink: a stated error at few degrees of freedom ([se, df], see
    _stated). A stated number (binomial, bootstrap) and the jackknife are an evaluation's sampling error."""
    return name in claim.se_code and noise.sampling is not None and math.isfinite(noise.sampling_df)


def seeds_to_settle(check: dict, value: float, noise: Noise) -> str:
    """How many seeds would take the interval clear of the test's nearest bound if the mean and the spread held;
    "budget" when the sampling error alone (which seeds do not shrink) keeps it on the bound at the last look."""
    gap = distance(check, value)
    if noise.sampling is not None and k_at(noise.sampling_df, noise.level(MAX_SEEDS)) * noise.sampling >= gap \
            or noise.seed_sd is None:
        return BUDGET
    for n in range(noise.n + 1, MAX_SEEDS + 1):
        if noise.k(n) * noise.at(n)[0] < gap:
            return str(n)
    return f"more than {MAX_SEEDS}"


def overall_settle(settles: list[str]) -> str:
    """A claim's settle from its inconclusive parts': the worst of them (no error estimate, budget, more than
    30, then the most seeds)."""
    for word in (NO_ERROR, BUDGET, f"more than {MAX_SEEDS}"):
        if word in settles:
            return word
    return str(max(map(int, settles))) if settles else ""


def _measure(claim: Claim, res: Results) -> tuple[dict, dict]:
    """(part -> value, part -> (sampling error or None, its degrees of freedom)) on one seed's runs (or on runs
    that have one seed)."""
    scope = _scope(res)
    values = {part: _value(claim, part, code, scope) for part, code in claim.code.items()}
    unmeasured = [part for part, value in values.items() if value is None]
    if unmeasured:  # the producer ran but could not measure this here (e.g. no out-of-memory below a CPU's cap)
        where = ", ".join(f"value{'.' + p if p else ''}" for p in unmeasured)
        lacking = lacking_fields([claim.values[p] for p in unmeasured], scope)
        if lacking:
            raise _NotRun(f"{where} is null: the run files lack {', '.join(lacking)}, which the claim reads", lacking)
        reason = _reason(claim, scope)
        raise _NotRun(f"{where} is null: {reason}" if reason else
                      f"{where} is null in the run files: this run did not measure it")
    needs_se = any(set(check) & DIRECTIONS for check in claim.checks.values())
    unblocked = [r for r in sorted(claim.trained_rows) if not (res.runs[r].get("eval") or {}).get("val_blocks")]
    if needs_se and unblocked:
        raise _NotRun("a direction needs the evaluation's sampling error, and "
                      + ", ".join(res.path(r) for r in unblocked) + " records no evaluation blocks (rerun it)")
    stated = {part: _value(claim, part, code, scope, "se") for part, code in claim.se_code.items()}
    return values, {part: _sampling(claim, part, [res], [stated.get(part)]) for part, v in values.items()
                    if _numeric(v)}


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


def _numeric(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _pooled(values: list):
    """One part over seeds: a number's mean; a truth that must hold at every seed; anything else as it is when
    every seed agrees, else the list (which no check of one value passes)."""
    if all(_numeric(v) for v in values):
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
        if not all(_numeric(v) for v in vals):
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
        at_seeds = [_value(claim, part, claim.code[part], _scope(view, drop=i)) for view in views]
        return sum(at_seeds) / len(at_seeds)

    return jackknife_se(k, replicate)


def _blocks(claim: Claim, res: Results) -> int:
    return len(next((m["eval"]["val_blocks"] for r, m in res.runs.items()
                     if r in claim.trained_rows and (m.get("eval") or {}).get("val_blocks")), []))


def _scope(res: Results, drop: int | None = None) -> dict:
    """What expressions see; with `drop`, every evaluation is re-read without its block number `drop`."""
    scope = {"__builtins__": SAFE_BUILTINS, **res.files}
    for name, key in ROW_VIEWS.items():
        scope[name] = {row: m.get(key) for row, m in res.runs.items()}
    if drop is None:
        return scope
    for row, m in res.runs.items():
        ev = m.get("eval") or {}
        if ev.get("val_blocks"):
            scope["ppl"][row] = ppl_without(ev["val_blocks"], drop)
            scope["train_ppl"][row] = ppl_without(ev["train_blocks"], drop)
        if ev.get("val_blocks_at"):
            scope["ppl_at"][row] = {w: ppl_without(b, drop) for w, b in ev["val_blocks_at"].items()}
    return scope


def _reason(claim: Claim, scope: dict) -> str | None:
    """Why the claim's null value was not measured, from its `not_run_reason` expression (None: it says nothing,
    or the claim has none)."""
    if claim.reason_code is None:
        return None
    try:
        reason = eval(claim.reason_code, scope, {})  # noqa: S307 - whitelisted syntax and names, see _compile
    except (KeyError, IndexError, TypeError) as err:
        raise AttnlabError(f"claim {claim.id}: not_run_reason failed on the run files ({type(err).__name__}: "
                           f"{err}); does a producer write that field?") from None
    return reason if isinstance(reason, str) and reason else None


def _value(claim: Claim, part: str, code, scope: dict, what: str = "value"):
    try:
        return eval(code, scope, {})  # noqa: S307 - whitelisted syntax and names, see _compile
    except (KeyError, IndexError, TypeError, ZeroDivisionError, ValueError) as err:
        label = f"{what}{'.' + part if part else ''}"
        raise AttnlabError(f"claim {claim.id}: {label} (for {claim.values[part]!r}) failed on the run files "
                           f"({type(err).__name__}: {err}); does a producer write that field?") from None


def evaluate_all(registry: Registry, res: Results, first_look: int | None = None) -> list[Verdict]:
    return [evaluate(c, res, first_look) for c in registry.claims]


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


def first_look_of(results_dir: str | Path) -> int | None:
    """The profile's own seed count for the run files under `results_dir` (the design's first look): a
    version's config.yaml, else config/<the folder's name>.yaml; None where neither is there."""
    from attnlab.config import load_settings
    from attnlab.registry import ROOT
    from attnlab.versions import settings_of

    own, named = Path(results_dir) / "config.yaml", ROOT / "config" / f"{Path(results_dir).name}.yaml"
    cfg = settings_of(own) if own.is_file() else load_settings(str(named)) if named.is_file() else None
    return profile_seed_count(cfg) if cfg else None


def profile_seed_count(cfg: dict) -> int:
    """How many seeds a profile trains every run at (its top-level seeds; a version from before seeds: one)."""
    return len(cfg.get("seeds") or [cfg.get("seed")])


def verdict_table(verdicts: list[Verdict]) -> pd.DataFrame:
    """claims.csv: one row per part of every claim."""
    return pd.DataFrame([r for v in verdicts for r in v.rows()], columns=COLUMNS, dtype=object)  # ints stay ints


def seed_table(verdicts: list[Verdict]) -> pd.DataFrame:
    """claims_by_seed.csv: every part's value at every seed, for the claims computed at several."""
    return pd.DataFrame([r for v in verdicts for r in v.seed_rows()], columns=BY_SEED_COLUMNS, dtype=object)


def write_claims_csv(results_dir: str | Path, claims_path: str | Path, out_csv: str | Path) -> pd.DataFrame:
    """claims.csv and, beside it, claims_by_seed.csv; each whole or not at all. Returns one row per claim: its
    id, kind, verdict, settle, value (as shown) and note."""
    verdicts = evaluate_all(load_registry(claims_path), gather(results_dir), first_look_of(results_dir))
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    for table, path in ((seed_table(verdicts), out_csv.with_name("claims_by_seed.csv")),
                        (verdict_table(verdicts), out_csv)):
        tmp = path.with_name(path.name + ".tmp")
        table.to_csv(tmp, index=False)
        tmp.replace(path)
    return pd.DataFrame([{"claim_id": v.claim.id, "kind": v.claim.kind, "verdict": v.verdict, "settle": v.settle,
                          "reproduced_value": "" if v.reproduced is None else fmt(v.reproduced), "note": v.note}
                         for v in verdicts])
