"""How verdicts work: the interval rule's k, and one worked example per outcome, taken from the verdicts of the
version being built (none typed)."""
from __future__ import annotations

import html
import math

from attnlab.claims.checks import describe
from attnlab.claims.design import (COVERAGE, DOMINANT_SHARE, LOOKS, MAX_SEEDS, SECOND_LOOK_MOST, Noise,
                                   first_look)
from attnlab.claims.outcome import Outcome
from attnlab.claims.summary import dominant_sources, examples
from attnlab.claims.verdicts import dominant_words
from attnlab.report.format import badge, fmt
from attnlab.report.readings import count
from attnlab.report.site import anchor, settle_words

def k_table() -> str:
    """k at the degrees of freedom the project meets (2 to 5 seeds, the jackknife's 20 blocks, both sources at
    once), at each look of the sequential design and, for comparison, at 95 % in one look."""
    rows = [(f"{n} seeds' spread alone", Noise(n, 1.0)) for n in (2, 3, 4, 5)]
    rows += [("20 evaluation blocks alone (the sampling error)", Noise(1, None, 1.0, 19)),
             ("3 seeds and 20 blocks, equal in variance", Noise(3, math.sqrt(3), 1.0, 19)),
             ("a line fitted through 4 points (its residual error)", Noise(1, None, 1.0, 2)),
             ("a stated binomial or bootstrap error", Noise(1, None, 1.0))]
    looks = [f"k at look {i} ({percent(1 - level)})" for i, level in enumerate(LOOKS, 1)]
    head = "| SE from | degrees of freedom | " + " | ".join(looks) + f" | k at {COVERAGE} in one look |\n"
    body = "\n".join(f"| {what} | {' and '.join(dfs(noise))} | "
                     + " | ".join(fmt(noise.k(noise.n, level)) for level in (*LOOKS, 0.05)) + " |"
                     for what, noise in rows)
    return head + "|---|---|" + "---|" * (len(LOOKS) + 1) + "\n" + body + "\n"


def dfs(noise: Noise) -> list[str]:
    """Each error source's degrees of freedom, as the k table shows them."""
    return ["∞" if math.isinf(df) else fmt(df) for _, _, df in noise.sources(noise.n)]


def percent(share: float) -> str:
    """0.975 -> '97.5 %'."""
    return f"{fmt(100 * share)} %"


def design(cfg: dict, manifest: dict | None = None) -> str:
    """The sequential design in words, from its constants (verdicts.LOOKS, SECOND_LOOK_MOST) and the first look of
    this version's profile (design.first_look: a night's version laid one seed over a profile of three)."""
    first = first_look(cfg, manifest)
    levels = " and ".join(f"{fmt(a)} at look {i}" for i, a in enumerate(LOOKS, 1))
    coverage = (" and ".join(percent(1 - a) for a in LOOKS) + " coverage") if len(set(LOOKS)) > 1 else \
        f"{percent(1 - LOOKS[0])} coverage at each"
    total, naive = fmt(sum(LOOKS)), percent(1 - sum(LOOKS))
    return (f"Adding seeds because a first judgement was inconclusive is a sequential decision: looking twice at "
            f"{naive} each would give a claim whose seeds' spread dominates its error, and whose truth sits on its "
            f"bound, a chance above {total} of a wrong *reproduced* or *not reproduced*. So the verdicts follow a "
            f"design of {len(LOOKS)} looks, fixed before the runs. The first look is the claim at the profile's own "
            f"seeds ({count(first, 'seed')} for this version). A claim it leaves inconclusive whose settle count is "
            f"at most {SECOND_LOOK_MOST} seeds gets those seeds as a setting of its experiment (`seeds:` in the "
            f"experiment's section of the profile), and is judged once more on all of them: the second look, and "
            f"the last. A judgement at more seeds than the profile's is the second look. Seeds that arrive a "
            f"version at a time, pooled, would be a look each: a pool past the first look is judged on the first "
            f"look's seeds until every seed the profile plans for its second look is in, then on exactly those, and "
            f"a seed no plan names is held back (the stamp says which). The profile plans the seeds per experiment; "
            f"a version may hold them for the runs of the claims that need them alone (`publish --only "
            f"<experiment>.<run> ...`), and a claim on the experiment's other runs is then judged at the seeds "
            f"those runs hold, as its page says. An analysis that reads every seed at once (induction, the "
            f"Winograd probe) states one result for all of them, to which no seed can be added: its second look is "
            f"a version that reran it at exactly the planned seeds, shaped as the first look's version, and that "
            f"result takes the first look's place on its pages, which name it. The error is split between "
            f"the looks, {levels} (two-sided; {coverage}), and the chance of a wrong verdict over both looks is at "
            f"most their sum, {total}, whatever the two looks share: one of them must have erred. A claim on "
            f"results made at no seed (a benchmark, an analysis run once) cannot be given seeds: its one look "
            f"spends all of it ({naive}). A settle count is read at the second look's k. "
            f"`tests/test_sequential.py` simulates thousands of claims whose truth sits exactly on the bound, their "
            f"seeds' spread dominating the error, judges them at the first look and at their settle count, and "
            f"checks that the wrong verdicts stay at or below {total}, and that {naive} at each look would exceed "
            f"it.")


def example(outcome: str, found: tuple | None) -> str:
    """A worked example of `outcome` (summary.examples: the verdict and its part, or None: a line saying no claim
    of this version has it)."""
    return f"- {badge(outcome)} " + (worked(*found) if found else "no claim of this version has this verdict.\n")


def worked(v, part) -> str:
    c = v.claim
    name = f"[{html.escape(c.id)}]({c.experiment}.md#{anchor(c.id)})" + (f", part `{part.name}`" if part.name else "")
    test = html.escape(describe(c.checks[part.name]))
    if part.kind == "computed":
        return (f"{name}: computed, {fmt(part.value)}; the test asks {test}; arithmetic has no noise, so the "
                f"value alone decides: it {part.outcome}.\n")
    lo, hi = part.interval
    dof = "∞ (normal)" if math.isinf(part.df) else fmt(part.df)
    source = f"mean of {len(v.seeds)} seeds" if v.seeds else "one evaluation"
    text = (f"{name}: {fmt(part.value)} ({source}), SE {fmt(part.se)} ({dominant_words(part.dominant, part.draws)}), "
            f"k = {fmt(part.k)} at look {part.look} (at {dof} degrees of freedom, those of the larger source), so "
            f"the interval is "
            f"[{fmt(lo)}, {fmt(hi)}]; the test asks {test}. ")
    if part.outcome == Outcome.INCONCLUSIVE:
        return text + f"The interval holds a bound: {html.escape(settle_words(part.settle))}.\n"
    whole = "passes" if part.outcome == Outcome.REPRODUCED else "fails"
    return text + f"The whole interval {whole} it.\n"


def larger_source(verdicts) -> str:
    """Which error source dominates the numeric parts judged on a mean over seeds, counted from this version's
    verdicts (Part.dominant): the seeds' spread, the evaluation's sampling error (or the error the run file
    states), or both alike. '' where no claim reads several seeds."""
    sources = dominant_sources(verdicts)
    if not sources:
        return ""
    return (f"In this version, of the {count(len(sources), 'part')} judged on a mean over seeds, the seeds' spread "
            f"dominates the error of {sources.count('seeds')}, the evaluation's sampling error (or the error the run "
            f"file states) that of {sources.count('sampling')}, and neither that of {sources.count('both')} (a "
            f"source dominates when it holds at least {percent(DOMINANT_SHARE)} of the variance).")


def seeds_here(held: list[int]) -> str:
    """How many seeds the runs behind this site were trained at, from their run files (a version may have run
    its profile at other seeds than the profile files list today)."""
    if not held:
        return "No run file behind this site is at a seed: nothing here was trained."
    return (f"The runs behind this site were trained at {'one seed' if len(held) == 1 else f'{len(held)} seeds'} "
            f"({', '.join(map(str, held))}), as their run files show.")


def blocks(site) -> dict[str, str]:
    return {"k_table": k_table(), "design": design(site.config, site.manifest),
            "examples": "\n".join(example(*e) for e in examples(site.verdicts)),
            "max_seeds": str(MAX_SEEDS), "dominant_share": percent(DOMINANT_SHARE), "larger_source": larger_source(site.verdicts),
            "seeds_here": seeds_here(site.held_seeds()), "pooled_here": pooled_here(site)}


def pooled_here(site) -> str:
    """What this site pooled, experiment by experiment (the versions and their seeds); for a version pooled with
    none, that it stands alone; '' for live results (only published versions pool)."""
    if site.pool is None:
        return ""
    pooled = [f"{name}: {site.pool.words(name)}" for name in site.pool.experiments() if site.pool.words(name)]
    pooled += [f"{name}: {why}" for name, why in site.pool.apart.items()]
    if not pooled:
        return "This version is pooled with no other: no other published version of its profile was shaped alike."
    return "Here, " + "; ".join(pooled) + "."
