"""A claim judged: each part on the interval rule (judge_part), the claim from its parts (judge_claim), and
what would settle an inconclusive one. Verdict and Part hold the outcome and why, and claims.csv's rows."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from attnlab.claims.checks import EXACT, check_value, describe, distance, judge, passes
from attnlab.claims.design import MAX_SEEDS, Noise, k_at
from attnlab.claims.outcome import Outcome
from attnlab.claims.registry import Claim, DESCRIPTIVE
from attnlab.claims.text import as_text, fmt, is_number

NO_ERROR = "no error estimate"
BUDGET = "budget"


@dataclass
class Part:
    """One part of a claim judged: its value, interval, outcome and (when inconclusive) what would settle it."""
    name: str
    kind: str
    value: object
    outcome: Outcome
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
    """A claim judged: its outcome, the value it was judged on, why (the note), and each part as judged."""
    claim: Claim
    verdict: Outcome
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

    @property
    def seed_count(self) -> int:
        """The seeds behind its value: those it was judged at (a claim's runs may hold fewer seeds than the other
        runs of its experiment), or those a producer's result pooled."""
        return max(len(self.seeds), *(p.n_seeds for p in self.parts.values()), 1)

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
        held = sum(v == Outcome.REPRODUCED for v in self.single.values())
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
        return {p: sum(parts[p].outcome == Outcome.REPRODUCED for parts in self.single_parts.values())
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
            number = p is not None and is_number(p.value)
            out.append({
                "claim_id": self.claim.id, "part": name, "kind": self.claim.kinds[name],
                "chapter_value": told if is_number(told) else as_text(told) if told != "" else "",
                "value": p.value if number else None,
                "value_text": "" if p is None or number else as_text(p.value),
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
                            "value": v if is_number(v) else None, "value_text": "" if is_number(v) else as_text(v),
                            "seed_verdict": self.single.get(seed, "")})
        return out


def judge_claim(claim: Claim, values: dict, noise: dict, shape=lambda v: v, prefix: str = "") -> Verdict:
    """The claim's verdict from its parts': a computed claim holds when every part does; a measured one is not
    reproduced when any part fails, else inconclusive when any part straddles, else reproduced."""
    parts = {p: judge_part(claim, p, v, noise.get(p)) for p, v in values.items()}
    outcomes = [p.outcome for p in parts.values() if p.outcome != Outcome.DESCRIPTIVE]
    if claim.kind == DESCRIPTIVE:
        verdict = Outcome.DESCRIPTIVE
    elif claim.kind == "computed":
        verdict = Outcome.HOLDS if all(o == Outcome.HOLDS for o in outcomes) else Outcome.FAILS
    elif any(o in (Outcome.NOT_REPRODUCED, Outcome.FAILS) for o in outcomes):
        verdict = Outcome.NOT_REPRODUCED
    else:
        verdict = Outcome.INCONCLUSIVE if Outcome.INCONCLUSIVE in outcomes else Outcome.REPRODUCED
    settle = overall_settle([p.settle for p in parts.values() if p.outcome == Outcome.INCONCLUSIVE]) \
        if verdict == Outcome.INCONCLUSIVE else ""
    se = {p.name: p.se for p in parts.values() if p.se is not None}
    note = prefix + "; ".join(p.why for p in parts.values())
    return Verdict(claim, verdict, shape(values), note, se, parts=parts, settle=settle)


JUDGED = {"pass": Outcome.REPRODUCED, "fail": Outcome.NOT_REPRODUCED, "straddle": Outcome.INCONCLUSIVE}  # judge's word
MARKS = {Outcome.REPRODUCED: "✓", Outcome.HOLDS: "✓", Outcome.NOT_REPRODUCED: "✗", Outcome.FAILS: "✗",
         Outcome.INCONCLUSIVE: "?", Outcome.DESCRIPTIVE: "·"}


def judge_part(claim: Claim, name: str, value, noise: Noise | None) -> Part:
    """One part on the interval rule: reproduced when value ± k·SE passes the test as a whole, not reproduced when
    it fails as a whole, inconclusive when it holds a bound; a computed part (and an exact test) on the value
    alone. SE holds both error sources (Noise.at); k is Student's t at the design's level for this look (LOOKS)."""
    check, kind = claim.checks[name], claim.kinds[name]
    label = f"{name}: " if name else ""
    seeds = noise.n if noise else 1
    if kind == DESCRIPTIVE:
        shown = f"{fmt(value)} ± {fmt(noise.at(noise.n)[0])}" if noise and noise.at(noise.n)[0] is not None else fmt(value)
        return Part(name, kind, value, Outcome.DESCRIPTIVE, why=f"· {label}{shown}: descriptive, tested by nothing",
                    n_seeds=seeds)
    check_value(check, value, claim.id, name)
    if kind == "computed" or set(check) & EXACT:
        ok = passes(check, value)
        outcome = (Outcome.HOLDS if ok else Outcome.FAILS) if kind == "computed" \
            else Outcome.REPRODUCED if ok else Outcome.NOT_REPRODUCED
        why = f"{fmt(value)} {'passes' if ok else 'fails'} {describe(check)}"
        return Part(name, kind, value, outcome, why=f"{MARKS[outcome]} {label}{why}", n_seeds=seeds)
    se, df = noise.at(noise.n) if noise else (None, math.inf)
    if se is None:
        why = f"{fmt(value)} against {describe(check)}: {NO_ERROR}, so no interval to judge"
        return Part(name, kind, value, Outcome.INCONCLUSIVE, settle=NO_ERROR, why=f"? {label}{why}", n_seeds=seeds)
    k, dominant, draws = noise.k(noise.n), noise.dominant(noise.n), _over_draws(claim, name, noise)
    lo, hi = value - k * se, value + k * se
    outcome = JUDGED[judge(check, value, lo, hi)]
    settle = seeds_to_settle(check, value, noise) if outcome == Outcome.INCONCLUSIVE else ""
    said = {Outcome.REPRODUCED: "passes {} throughout", Outcome.NOT_REPRODUCED: "fails {} throughout",
            Outcome.INCONCLUSIVE: "straddles a bound of {}"}[outcome].format(describe(check))
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
