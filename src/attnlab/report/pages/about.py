"""How verdicts work: the interval rule's k, and one worked example per outcome, taken from the verdicts of the
version being built (none typed)."""
from __future__ import annotations

import html
import math

from attnlab.report.claims import T95, describe
from attnlab.report.format import badge, fmt
from attnlab.report.readings import count
from attnlab.report.site import anchor, settle_words
from attnlab.report.verdicts import MAX_SEEDS

EXAMPLES = (  # one worked example each: the verdict, and what its part must show
    ("reproduced", lambda p: True),
    ("not reproduced", lambda p: True),
    ("inconclusive", lambda p: p.settle.isdigit()),  # more seeds would settle it
    ("inconclusive", lambda p: p.settle == "budget"),  # the budget limits it
    ("holds", lambda p: True),
)


def k_table() -> str:
    """k at the degrees of freedom the project meets: 2 to 5 seeds, and the jackknife's 20 blocks."""
    rows = [(f"{n} seeds (seeds' spread the larger)", n - 1) for n in (2, 3, 4, 5)]
    rows += [("20 evaluation blocks (sampling error the larger)", 19),
             ("a line fitted through 4 points (its residual error)", 2),
             ("a stated binomial or bootstrap error", math.inf)]
    body = "\n".join(f"| {what} | {'∞' if math.isinf(df) else df} | {fmt(T95[df - 1] if df <= len(T95) else 1.96)} |"
                     for what, df in rows)
    return "| SE from | degrees of freedom | k |\n|---|---|---|\n" + body + "\n"


def example(site, outcome: str, shows) -> str:
    """The first claim of this version whose verdict is `outcome` and that has a part judged that way (and that
    `shows` what the example is for), as a worked example; a line saying none has, where none has."""
    for v in site.verdicts:
        part = next((p for p in v.parts.values() if v.verdict == outcome == p.outcome and shows(p)
                     and (p.kind == "computed" or p.interval is not None)), None)
        if part is not None:
            return f"- {badge(outcome)} " + worked(v, part)
    return f"- {badge(outcome)} no claim of this version has this verdict.\n"


def worked(v, part) -> str:
    c = v.claim
    name = f"[{html.escape(c.id)}]({c.experiment}.md#{anchor(c.id)})" + (f", part `{part.name}`" if part.name else "")
    test = html.escape(describe(c.checks[part.name]))
    if part.kind == "computed":
        return (f"{name}: computed, {fmt(part.value)}; the test asks {test}; arithmetic has no noise, so the "
                f"value alone decides: it {part.outcome}.\n")
    lo, hi = part.interval
    dof = "∞ (normal)" if math.isinf(part.df) else f"{int(part.df)}"
    source = f"mean of {len(v.seeds)} seeds" if v.seeds else "one evaluation"
    larger = ("the seeds' spread" if v.seeds and part.df == len(v.seeds) - 1 else
              "the evaluation's sampling error" if part.df == 19 else "the error its producer states")
    text = (f"{name}: {fmt(part.value)} ({source}), SE {fmt(part.se)} ({larger} is the larger), k = {fmt(part.k)} "
            f"at {dof} degrees of freedom, so the interval is [{fmt(lo)}, {fmt(hi)}]; the test asks {test}. ")
    if part.outcome == "inconclusive":
        return text + f"The interval holds a bound: {html.escape(settle_words(part.settle))}.\n"
    whole = "passes" if part.outcome == "reproduced" else "fails"
    return text + f"The whole interval {whole} it.\n"


def larger_source(verdicts) -> str:
    """Which error source is the larger for the numeric parts judged on a mean over seeds, counted from this
    version's verdicts: the seeds' spread (k read at n − 1) or the evaluation's sampling error (or the error the
    run file states). '' where no claim reads several seeds."""
    sources = [v.parts[p].df == len(v.seeds) - 1 for v in verdicts if len(v.seeds) > 1
               for p in v.parts if v.parts[p].interval is not None]
    if not sources:
        return ""
    seeds = sum(sources)
    return (f"In this version, of the {count(len(sources), 'part')} judged on a mean over seeds, the seeds' spread is the "
            f"larger source for {seeds} and the evaluation's sampling error (or the error the run file states) for "
            f"{len(sources) - seeds}.")


def seeds_here(held: list[int]) -> str:
    """How many seeds the runs behind this site were trained at, from their run files (a version may have run
    its profile at other seeds than the profile files list today)."""
    if not held:
        return "No run file behind this site is at a seed: nothing here was trained."
    return (f"The runs behind this site were trained at {'one seed' if len(held) == 1 else f'{len(held)} seeds'} "
            f"({', '.join(map(str, held))}), as their run files show.")


def blocks(site) -> dict[str, str]:
    return {"k_table": k_table(), "examples": "\n".join(example(site, *e) for e in EXAMPLES),
            "max_seeds": str(MAX_SEEDS), "larger_source": larger_source(site.verdicts),
            "seeds_here": seeds_here(site.held_seeds()), "pooled_here": pooled_here(site)}


def pooled_here(site) -> str:
    """What this site pooled, experiment by experiment (the versions and their seeds); for a version pooled with
    none, that it stands alone; '' for live results (only published versions pool)."""
    if site.pool is None:
        return ""
    pooled = [f"{name}: {site.pool.words(name)}" for name in site.pool.members if site.pool.words(name)]
    if not pooled:
        return "This version is pooled with no other: no other published version of its profile was shaped alike."
    return "Here, " + "; ".join(pooled) + "."
