"""Verdicts counted and selected for the pages that sum them up (the overview, the dashboard, the about page):
whose claim each is, how each fares seed by seed and why none judged it seed by seed, which error source
dominates, the first that works an outcome through, and the verdicts a larger budget measured."""
from __future__ import annotations

from types import SimpleNamespace

from attnlab.claims.outcome import UNMEASURED, VERDICTS, Outcome

WHOSE = ("chapter", "survey", "ours")  # whose()'s keys, in order
SURVIVALS = ("every seed", "some seeds", "no seed", "in part", "no error alone")  # survival()'s keys, in order
EXAMPLES = (  # the worked examples the about page shows, one each: the verdict, and what its part must show
    (Outcome.REPRODUCED, lambda p: True),
    (Outcome.NOT_REPRODUCED, lambda p: True),
    (Outcome.INCONCLUSIVE, lambda p: p.settle.isdigit()),  # more seeds would settle it
    (Outcome.INCONCLUSIVE, lambda p: p.settle == "budget"),  # the budget limits it
    (Outcome.HOLDS, lambda p: True),
)
UNSEEDED = ("computed", "descriptive", "pooled", "once", "no value")  # why_unseeded()'s keys, in order


def whose(claim) -> str:
    """Whose statement a claim tests: 'chapter', 'survey', or 'ours' (the project's own finding)."""
    return "ours" if claim.ours else "survey" if claim.id.startswith("S") else "chapter"


def by_whose(verdicts) -> dict[str, list]:
    """The verdicts by whose claim each is (in WHOSE's order), each group only where it holds one."""
    return {w: vs for w in WHOSE if (vs := [v for v in verdicts if whose(v.claim) == w])}


def apart(verdicts, verdict: str) -> tuple[int, int]:
    """How many of the verdicts are `verdict`: (of the sources' claims, of the project's own findings)."""
    return (sum(v.verdict == verdict and not v.claim.ours for v in verdicts),
            sum(v.verdict == verdict and v.claim.ours for v in verdicts))


def made(v, res) -> dict[str, dict]:
    """The run files a verdict reads that ran (res: results.Results), path -> provenance: its result files, then
    its training runs', each by name."""
    prov = res.provenance()
    files = [res.path(f) for f in sorted(v.claim.files)] + [res.path(r) for r in sorted(v.claim.rows)]
    return {f: prov[f] for f in files if f in prov}


def survival(v) -> str | None:
    """Verdict.survives(), with a claim no seed alone can decide split by its parts' error sources: 'in part' where
    some of its parts have an error of their own at one seed, 'no error alone' where none has."""
    key = v.survives()
    return "in part" if key == "no error alone" and v.judged_alone() else key


def by_survival(verdicts) -> dict[str, dict[str, list]]:
    """The verdicts judged at several seeds, by survival() (in SURVIVALS' order) and then by their verdict on the
    mean (in VERDICTS' order), each group only where it holds a verdict."""
    out = {}
    for key in SURVIVALS:
        group = {k: [v for v in verdicts if survival(v) == key and v.verdict == k] for k in VERDICTS}
        if any(group.values()):
            out[key] = {k: vs for k, vs in group.items() if vs}
    return out


def error_source(v, part: str) -> str:
    """Where a part's error at one seed comes from: 'stated' (its run file's), 'sampled' (the evaluation's
    sampling error) or 'exact' (an exact test, no error)."""
    return "stated" if part in v.claim.se_code else "sampled" if part in v.claim.sampled else "exact"


def why_unseeded(v, res) -> tuple[str, list[int]]:
    """Why no seed alone judged a claim (a key of UNSEEDED), with the seeds its run files were made at (res:
    results.Results) where that is the why: several ('pooled': one analysis states their mean only), or one or
    none ('once')."""
    if v.claim.kind in ("computed", "descriptive"):
        return v.claim.kind, []
    if v.verdict in UNMEASURED:
        return "no value", []
    seeds = sorted({s for f in v.claim.files for s in res.recorded_seeds(f)}
                   | {s for r in v.claim.rows for s in res.seeds(r) if s is not None})
    return ("pooled" if len(seeds) > 1 else "once"), seeds


def dominant_sources(verdicts) -> list[str]:
    """Part.dominant of every numeric part judged on a mean over seeds: 'seeds', 'sampling' or 'both'."""
    return [v.parts[p].dominant for v in verdicts if len(v.seeds) > 1
            for p in v.parts if v.parts[p].interval is not None]


def examples(verdicts) -> list[tuple]:
    """One worked example per entry of EXAMPLES: (the outcome, (verdict, part) of the first claim whose verdict
    is that outcome with a part judged that way that shows what the example is for, and that is computed or has
    an interval; None where no claim has)."""
    def first(outcome, shows):
        return next(((v, p) for v in verdicts for p in v.parts.values() if v.verdict == outcome == p.outcome
                     and shows(p) and (p.kind == "computed" or p.interval is not None)), None)
    return [(outcome, first(outcome, shows)) for outcome, shows in EXAMPLES]


def at_larger(verdicts, larger: dict) -> tuple[list, list]:
    """The verdicts a larger budget measured, each as (claim, its verdict there), and the others, as they are
    (`larger`: claim id -> budget.Larger)."""
    def there(v) -> bool:
        return v.claim.id in larger and bool(larger[v.claim.id].verdict)
    return ([SimpleNamespace(claim=v.claim, verdict=larger[v.claim.id].verdict) for v in verdicts if there(v)],
            [v for v in verdicts if not there(v)])


def upper_bound(registry, claim_id: str, part: str) -> float | None:
    """The upper edge of a claim part's `between` check (registry: claims.registry.Registry), None where it has
    none."""
    try:
        return registry.by_id(claim_id).checks[part]["between"][1]
    except (KeyError, TypeError, IndexError):
        return None
