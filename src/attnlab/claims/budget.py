"""Each claim at the largest budget where a published version measured it, beside the version of record's.

A version's budget is its profile's (BUDGETS orders them) where nothing but the seeds and the speed settings was
laid over that profile's file. A version counts for the claims of the experiments it holds: every claim for a
complete version, those of the experiments named for a partial one (`publish --only`).
Among the versions of a larger budget than the version of record's, the largest that measured a claim (its
verdict is not "not run") gives its verdict there, the newest among equals. Where no version has a larger budget
than the record's, nothing is shown: a site of quick versions looks as it did.
"""
from __future__ import annotations

from dataclasses import dataclass

from attnlab.claims.outcome import Outcome

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


@dataclass(frozen=True)
class Larger:
    """A claim at the largest budget beyond the version of record's: its verdict there (None: not measured at
    any larger budget) and that version's manifest; and the record's verdict and manifest, beside it."""
    verdict: Outcome | str | None
    manifest: dict | None
    record_verdict: Outcome | str
    record: dict
    above: str  # the largest budget published above the record's
    seeds: int | None = None  # the seeds that version trained at (one: its error is the evaluation's alone)
    shown: str = ""   # its value there (± SE), as the verdict tables show a value
    pooled: str = ""  # the versions and seeds pooled into it (pooling.Pool.words); '' for one version alone
    members: tuple[str, ...] = ()  # the versions pooled into it, its own first; () for one version alone

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version its verdict rests on: those pooled into it, or its own alone; () where not measured."""
        return self.members or ((self.manifest["version"],) if self.manifest else ())

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
                      and (v := verdicts_of(m["version"]).get(c.id, Outcome.NOT_RUN)) != Outcome.NOT_RUN),
                     (None, None))
        out[c.id] = Larger(found[1], found[0], mine.get(c.id, Outcome.NOT_RUN), base, top,
                           seeds_of(found[0]["version"]) if found[0] else None)
    return out
