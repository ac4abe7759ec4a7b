"""Two versions claim by claim, the numbers the compare page words: each claim's status (the same verdict, a
changed one, measured on one side only), each numeric part's change here minus there with its error, and what
the two versions ran (the profile, its seeds and digest, the settings that differ)."""
from __future__ import annotations

import math
import statistics

from attnlab.claims.outcome import Outcome
from attnlab.config import digest, seeds
from attnlab.runs import likes
from attnlab.versions import differing, leaves

NOT_BOTH = ("only here", "only there", "unread here", "unread there", "neither")  # not measured in both today
FLOAT_NOISE = 1e-6  # relative: float32 keeps about seven digits, and a sum of many rounds a few of them
NEGLIGIBLE = 1e-3   # a difference under this share of the value's own error tells a reader nothing
SHARED = ("threads", "device", "data.", "model.", "train.")  # the settings every run shares
NOISE_K = 2  # a change of value is read as one only where it clears this many standard errors of the difference


def others(manifests: list[dict], own: str | None, record: str | None) -> list[dict]:
    """The manifests of every version but `own`: the version of record first, then in the order given."""
    return sorted((m for m in manifests if m["version"] != own), key=lambda m: m["version"] != record)


def status(mine, other, unread_here: bool = False, unread_there: bool = False) -> str:
    """'same' verdict, 'changed' verdict, or measured in one version only ('only here', 'only there': not run on
    the other side), which is no change of verdict but a claim one version did not measure, or in neither. A side
    that measured the claim when published but whose run files lack a field today's claim reads (`unread_…`,
    published.unread) is 'unread' there, not unmeasured."""
    if mine.verdict == other.verdict == Outcome.NOT_RUN:
        return "neither"
    if mine.verdict == other.verdict:
        return "same"
    if Outcome.NOT_RUN in (mine.verdict, other.verdict):
        if other.verdict == Outcome.NOT_RUN:
            return "unread there" if unread_there else "only here"
        return "unread here" if unread_here else "only there"
    return "changed"


def paired_up(mine: list, theirs: dict, unread_here, unread_there) -> tuple[list[tuple], dict[str, str]]:
    """Each verdict here beside the same claim's there (`theirs`: claim id -> Verdict), what both measured first
    (else in order), and each claim's status (`unread_here(v)`, `unread_there(v)`: whether that side measured the
    claim when published but cannot read it today)."""
    pairs = [(v, theirs[v.claim.id]) for v in mine]
    statuses = {v.claim.id: status(v, other, unread_here(v), unread_there(other)) for v, other in pairs}
    return sorted(pairs, key=lambda pair: statuses[pair[0].claim.id] in NOT_BOTH), statuses


def number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def parts_of(value) -> dict:
    return {} if value is None else value if isinstance(value, dict) else {"": value}


def paired(mine, other, part: str) -> list[float]:
    """The part's seed-by-seed differences, here minus there, where both versions computed it at the same seeds
    (two or more): runs of one seed share their data and initial weights, so their difference is paired; [] else."""
    here, there = ({seed: parts_of(x).get(part) for seed, x in v.seeds.items()} for v in (mine, other))
    if len(here) < 2 or set(here) != set(there) or not all(number(x) for x in [*here.values(), *there.values()]):
        return []
    return [here[seed] - there[seed] for seed in sorted(here)]


def identical(diffs: list[float], values: list[float], errors: list[float]) -> bool:
    """Whether differences are rounding, not a change: each within float32's noise on the values, or under a
    thousandth of the larger side's error."""
    tolerance = max(FLOAT_NOISE * max(map(abs, values)), NEGLIGIBLE * max(errors, default=0.0))
    return all(abs(d) <= tolerance for d in diffs)


def part_change(a: float, b: float, diffs: list[float], errors: list[float]) -> dict:
    """One part's change, here (a) minus there (b): {"identical": the largest |difference|} where every
    difference (seed by seed where `diffs` pairs them) is rounding; else {"diff": a − b, "se", "paired"}: the
    error of the paired differences' mean (their spread over √n, "paired": n) where runs of the same seeds pair
    them, or both sides' `errors` combined where they are independent ("paired": 0; None where neither has one)."""
    if identical(diffs or [a - b], [a, b], errors):
        return {"identical": max(abs(d) for d in diffs or [a - b])}
    if diffs:
        return {"diff": a - b, "se": statistics.stdev(diffs) / math.sqrt(len(diffs)), "paired": len(diffs)}
    return {"diff": a - b, "se": math.hypot(*errors) if errors else None, "paired": 0}


def changes(mine, other) -> dict[str, dict]:
    """Each part both verdicts give a number for (parts named as in their values): its part_change."""
    here, there = parts_of(mine.reproduced), parts_of(other.reproduced)
    return {part: part_change(here[part], there[part], paired(mine, other, part),
                              [e for e in (mine.se.get(part), other.se.get(part)) if e])
            for part in here if number(here[part]) and number(there.get(part))}


def profile_of(cfg: dict) -> dict:
    """What two versions must share for their values to differ only by the code: the profile, its seeds and its
    digest, of the profile as validated today (the digest each page's settings table shows; a manifest's
    config_digest also moves with the schema's defaults at publishing, which change no run)."""
    return {"profile": cfg.get("profile"), "seeds": seeds(cfg), "digest": digest(cfg),
            "settings": {k: v for k, v in leaves(cfg).items() if k not in ("profile", "seeds")}}


def differing_settings(here: dict, there: dict) -> list[str]:
    """The settings (dotted names) whose values differ between two profiles' leaves, those every run shares
    (SHARED) first, each group by name."""
    return sorted(differing(here, there), key=lambda k: not k.startswith(SHARED))


def variants(cfg: dict, here, there_of) -> list[tuple]:
    """The runs this profile adds (runs.likes), each that ran here as (run, the run it is like, its validation
    perplexity here: results.Spread from `here`, results.Results; that run's there: `there_of(run)`, a Spread or
    None)."""
    out = []
    for name, like in likes(cfg).items():
        if (mine := here.spread(name, "val_ppl")) is not None:
            out.append((name, like, mine, there_of(like)))
    return out
