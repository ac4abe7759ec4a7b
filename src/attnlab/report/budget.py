"""Each claim at the largest budget a published version measured it (attnlab.claims.budget), in words: the
sentence under a claim the version of record does not reproduce, the dashboard's cell and the overview's tally."""
from __future__ import annotations

import html

from attnlab.claims.budget import Larger
from attnlab.claims.outcome import Outcome
from attnlab.report.format import badge


def budget_words(profile: str) -> str:
    return "the chapter's budget" if profile == "chapter" else f"the {profile} profile's budget"


def seeds_words(n: int | None) -> str:
    """', at one seed' (its interval then holds the evaluation's sampling error alone, not the seeds' spread),
    ', at 3 seeds', or '' where unknown."""
    return "" if not n else ", at one seed" if n == 1 else f", at {n} seeds"


def sentence(x: Larger) -> str:
    """Whether the larger budget changed a claim that the version of record does not reproduce, in words."""
    if x.verdict is None:
        return f"Not measured at {budget_words(x.profile)}."
    named = f"{len(x.members)} versions pooled" if x.members else x.manifest["version"]
    at = f"At {budget_words(x.profile)} ({named}{seeds_words(x.seeds)})"
    quick = f"the {x.record['profile']} verdict"
    if x.verdict == Outcome.REPRODUCED:
        return f"{at} it is reproduced: {quick} was the budget's."
    if x.verdict == Outcome.NOT_REPRODUCED:
        return f"{at} it is still not reproduced: the budget does not explain {quick}."
    if x.verdict == Outcome.INCONCLUSIVE:
        return f"{at} it is inconclusive: the larger budget neither confirms {quick} nor clears it."
    return f"{at} its verdict is {x.verdict}: it says nothing on whether the budget explains {quick}."


def cell(x: Larger, viewed: str | None) -> str:
    """The dashboard's cell: the verdict at the larger budget with its version named ('–' where it was not
    measured there), the version of record's beside it where the page shows another version, and, under a claim
    the record does not reproduce, whether the budget changed it. Its data-label heads it on a phone, where a
    bare '–' is left out (class none)."""
    words = budget_words(x.profile)
    if x.verdict is None:
        out = f'<span title="not measured at {html.escape(words)}">–</span>'
    else:
        out = (f'{badge(x.verdict)}' + (f'<div class="value">{html.escape(x.shown)}</div>' if x.shown else "")
               + f'<div class="why">{html.escape(x.profile)} · '
               + (html.escape(x.pooled) if x.pooled else html.escape(x.manifest["version"]))
               + f'{html.escape(seeds_words(x.seeds).replace(",", " ·"))}</div>')
    if viewed != x.record["version"]:
        out += (f'<div class="why">{html.escape(x.record["profile"])}, the version of record '
                f'({html.escape(x.record["version"])}): {badge(x.record_verdict)}</div>')
    if x.record_verdict == Outcome.NOT_REPRODUCED:
        out += f'<div class="why budget-reading">{html.escape(sentence(x), quote=False)}</div>'
    bare = ' class="none"' if out.endswith("–</span>") else ""
    return f'<td data-label="at {html.escape(budget_words(x.above))}"{bare}>{out}</td>'


OUTCOMES = ((Outcome.REPRODUCED, "reproduced there (the budget's)"),
            (Outcome.NOT_REPRODUCED, "still not reproduced"), (Outcome.INCONCLUSIVE, "inconclusive there"), (Outcome.DIVERGED, "diverged there"))


def tally(larger: dict[str, Larger], ours: frozenset = frozenset()) -> str:
    """The larger budget in one paragraph: how many claims it measured, in which versions, and what became there
    of the claims the version of record does not reproduce, by id; `ours` (the ids of the project's own findings)
    counted apart from the sources' claims. '' where nothing is larger."""
    if not larger:
        return ""
    first = next(iter(larger.values()))
    measured = [x for x in larger.values() if x.verdict]
    names = sorted({name for x in measured for name in x.versions})  # the pooled ones too
    theirs = {k: x for k, x in larger.items() if k not in ours}
    mine = {k: x for k, x in larger.items() if k in ours}
    out = (f"{sum(bool(x.verdict) for x in theirs.values())} of {len(theirs)} claims were measured at "
           f"{budget_words(first.above)}"
           + (f" (and {sum(bool(x.verdict) for x in mine.values())} of {len(mine)} of the project's own findings)"
              if mine else "")
           + (f" (version{'s' if len(names) > 1 else ''} {', '.join(names)})" if names else "")
           + f"; beside each, the {first.record['profile']} verdict of the version of record "
             f"({first.record['version']}).")
    for label, group in (("sources' claims" if mine else "claims", theirs), ("own findings", mine)):
        failing = {k: x for k, x in group.items() if x.record_verdict == Outcome.NOT_REPRODUCED}
        if failing:
            groups = [(words, [k for k, x in failing.items() if x.verdict == key]) for key, words in OUTCOMES]
            groups.append(("not measured there", [k for k, x in failing.items() if x.verdict is None]))
            out += (f" Of the {len(failing)} {label} it does not reproduce: "
                    + "; ".join(f"{words}: {', '.join(ids)}" for words, ids in groups if ids) + ".")
    return html.escape(out, quote=False)
