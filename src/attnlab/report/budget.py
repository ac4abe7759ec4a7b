"""Each claim at the largest budget where a published version measured it, beside the version of record's.

A version's budget is its profile's (BUDGETS orders them) where nothing but the seeds and the speed settings was
laid over that profile's file. A version counts for the claims of the experiments it holds: every claim for a
complete version, those of the experiments named for a partial one (`publish --only`).
Among the versions of a larger budget than the version of record's, the largest that measured a claim (its
verdict is not "not run") gives its verdict there, the newest among equals. Where no version has a larger budget
than the record's, nothing is shown: a site of quick versions looks as it did.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from attnlab.report.format import badge

BUDGETS = ("smoke", "quick", "chapter")  # the profiles by budget (steps × batch); a profile file has no rank
KEEPS_BUDGET = ("seeds", "threads", "device", "train.precision", "train.compile", "train.adamw")


def rank(manifest: dict) -> int | None:
    """A version's place in BUDGETS: its profile's, unless settings other than the seeds and the speed settings
    were laid over that profile's file (the manifest's `set`), which make its budget no profile's."""
    profile, laid = manifest.get("profile"), manifest.get("set") or {}
    if any(setting not in KEEPS_BUDGET for setting in laid):
        return None
    return BUDGETS.index(profile) if profile in BUDGETS else None


def counts(manifest: dict, experiment: str) -> bool:
    """Whether a version speaks for a claim of `experiment`: a complete one for every claim, a partial one for the
    claims of the experiments it holds."""
    return manifest.get("complete", True) or experiment in (manifest.get("experiments") or [])


def budget_words(profile: str) -> str:
    return "the chapter's budget" if profile == "chapter" else f"the {profile} profile's budget"


@dataclass(frozen=True)
class Larger:
    """A claim at the largest budget beyond the version of record's: its verdict there (None: not measured at
    any larger budget) and that version's manifest; and the record's verdict and manifest, beside it."""
    verdict: str | None
    manifest: dict | None
    record_verdict: str
    record: dict
    above: str  # the largest budget published above the record's
    seeds: int | None = None  # the seeds that version trained at (one: its error is the evaluation's alone)
    shown: str = ""   # its value there (± SE), as the verdict tables show a value
    pooled: str = ""  # the versions and seeds pooled into it (pooling.Pool.words); '' for one version alone

    @property
    def profile(self) -> str:
        """The budget the sentence names: the version's, or (not measured) the largest published."""
        return self.manifest["profile"] if self.manifest else self.above


def largest(claims: list, published: list[dict], record: str | None, verdicts_of,
            seeds_of=lambda name: None) -> dict[str, Larger]:
    """claim id -> Larger, for every claim of `claims` (each with .id and .experiment), among the `published`
    manifests (newest first, as versions() lists them); `verdicts_of(name)` -> {claim id: verdict};
    `seeds_of(name)` -> how many seeds it trained at. {} where no version of a larger budget than the record's
    counts for any of the claims."""
    base = next((m for m in published if m["version"] == record), None)
    if base is None or rank(base) is None:
        return {}
    above = [m for m in published if rank(m) is not None and rank(m) > rank(base)]
    above.sort(key=lambda m: -rank(m))  # largest first; stable: newest first within a budget
    if not any(counts(m, c.experiment) for m in above for c in claims):
        return {}
    top = BUDGETS[max(rank(m) for m in above)]
    mine = verdicts_of(record)
    out = {}
    for c in claims:
        found = next(((m, v) for m in above if counts(m, c.experiment)
                      and (v := verdicts_of(m["version"]).get(c.id, "not run")) != "not run"), (None, None))
        out[c.id] = Larger(found[1], found[0], mine.get(c.id, "not run"), base, top,
                           seeds_of(found[0]["version"]) if found[0] else None)
    return out


def seeds_words(n: int | None) -> str:
    """', at one seed' (its interval then holds the evaluation's sampling error alone, not the seeds' spread),
    ', at 3 seeds', or '' where unknown."""
    return "" if not n else ", at one seed" if n == 1 else f", at {n} seeds"


def sentence(x: Larger) -> str:
    """Whether the larger budget changed a claim that the version of record does not reproduce, in words."""
    if x.verdict is None:
        return f"Not measured at {budget_words(x.profile)}."
    at = f"At {budget_words(x.profile)} ({x.manifest['version']}{seeds_words(x.seeds)})"
    quick = f"the {x.record['profile']} verdict"
    if x.verdict == "reproduced":
        return f"{at} it is reproduced: {quick} was the budget's."
    if x.verdict == "not reproduced":
        return f"{at} it is still not reproduced: the budget does not explain {quick}."
    if x.verdict == "inconclusive":
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
    if x.record_verdict == "not reproduced":
        out += f'<div class="why budget-reading">{html.escape(sentence(x), quote=False)}</div>'
    bare = ' class="none"' if out.endswith("–</span>") else ""
    return f'<td data-label="at {html.escape(budget_words(x.above))}"{bare}>{out}</td>'


OUTCOMES = (("reproduced", "reproduced there (the budget's)"), ("not reproduced", "still not reproduced"),
            ("inconclusive", "inconclusive there"), ("diverged", "diverged there"))


def tally(larger: dict[str, Larger], ours: frozenset = frozenset()) -> str:
    """The larger budget in one paragraph: how many claims it measured, in which versions, and what became there
    of the claims the version of record does not reproduce, by id; `ours` (the ids of the project's own findings)
    counted apart from the sources' claims. '' where nothing is larger."""
    if not larger:
        return ""
    first = next(iter(larger.values()))
    measured = [x for x in larger.values() if x.verdict]
    names = sorted({x.manifest["version"] for x in measured})
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
        failing = {k: x for k, x in group.items() if x.record_verdict == "not reproduced"}
        if failing:
            groups = [(words, [k for k, x in failing.items() if x.verdict == key]) for key, words in OUTCOMES]
            groups.append(("not measured there", [k for k, x in failing.items() if x.verdict is None]))
            out += (f" Of the {len(failing)} {label} it does not reproduce: "
                    + "; ".join(f"{words}: {', '.join(ids)}" for words, ids in groups if ids) + ".")
    return html.escape(out, quote=False)
