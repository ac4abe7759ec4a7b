"""A version's claims.csv as it was frozen when published, beside the verdicts its site shows (today's claims over
its run files): where the two differ, both, and why (a claim added since, run files that lack a field today's
claim reads, a value computed otherwise, the same value judged by another rule)."""
from __future__ import annotations

import csv
import decimal
import html
import math
from dataclasses import dataclass
from pathlib import Path

from attnlab.claims.outcome import COMPUTED, MEASURED, Outcome
from attnlab.claims.verdicts import Verdict
from attnlab.report.format import badge, fmt

MEASURED_THEN = (*MEASURED, *COMPUTED, Outcome.DIVERGED)
# a computed claim's verdict, as first named
COMPUTED_WORDS = {Outcome.REPRODUCED: Outcome.HOLDS, Outcome.NOT_REPRODUCED: Outcome.FAILS}


@dataclass
class Frozen:
    """One claim in a published claims.csv: its verdict and its value by part (as text)."""
    verdict: str
    values: dict[str, str]

    def shown(self) -> str:
        return "; ".join(f"{part} {value}" if part else value for part, value in self.values.items() if value)


def frozen_verdicts(folder: Path) -> dict[str, Frozen] | None:
    """Claim id -> its verdict in the claims.csv a version was published with; None where it has none (a
    version of some experiments). Reads both layouts: one row per part (value, value_text) and, older, one row
    per claim (reproduced_value 'part=value; …')."""
    path = Path(folder) / "claims.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    out: dict[str, Frozen] = {}
    for row in rows:
        entry = out.setdefault(row["claim_id"], Frozen(row["verdict"], {}))
        if "part" in row:
            value = row.get("value") or ""
            entry.values[row["part"]] = fmt(float(value)) if value else row.get("value_text") or ""
        else:
            entry.values.update(split_parts(row.get("reproduced_value") or ""))
    return out


def split_parts(text: str) -> dict[str, str]:
    """'a=1; b=2' -> {'a': '1', 'b': '2'}; a value without parts -> {'': text}."""
    pieces = [p.partition("=") for p in text.split("; ")]
    if text and all(sep and name.isidentifier() for name, sep, _ in pieces):
        return {name: value for name, _, value in pieces}
    return {"": text}


def number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def moved(v: Verdict, f: Frozen) -> list[str]:
    """The numeric parts whose value today differs from the published one beyond the published rounding."""
    today = v.reproduced if isinstance(v.reproduced, dict) else {"": v.reproduced}
    out = []
    for part, then in f.values.items():
        now, was = today.get(part), number(then)
        if isinstance(now, (int, float)) and not isinstance(now, bool) and was is not None \
                and abs(now - was) > last_digit(then) / 2 * (1 + 1e-9):
            out.append(part)
    return out


def last_digit(text: str) -> float:
    """The size of the last digit a number was written with ('1.19e-07' -> 1e-09, '0.7167' -> 1e-04): what its
    rounding may have moved it by, twice."""
    return 10.0 ** decimal.Decimal(text.strip()).as_tuple().exponent


def same_verdict(v: Verdict, f: Frozen) -> bool:
    then = COMPUTED_WORDS.get(f.verdict, f.verdict) if v.claim.kind == "computed" else f.verdict
    return then == v.verdict


def unread(v: Verdict, f: Frozen | None) -> bool:
    """A claim its version measured when published that today's claim cannot read: the run files lack a field."""
    return v.verdict == Outcome.NOT_RUN and bool(v.lacking) and f is not None and f.verdict in MEASURED_THEN


def reason(v: Verdict, f: Frozen | None) -> str:
    """Why today's verdict or value differs from the published one; '' where they agree."""
    if f is None:
        return "not in its claims.csv: a claim added since it was published"
    if unread(v, f):
        return f"measured in that version, but its run files lack {', '.join(v.lacking)} that today's claim reads"
    if v.verdict == Outcome.NOT_RUN and f.verdict in MEASURED_THEN:
        return f"measured in that version; today's claim cannot read its run files ({v.note})"
    parts = moved(v, f)
    if parts:
        named = ", ".join(p or "the value" for p in parts)
        return f"today's claim computes {named} otherwise from the same run files"
    if not same_verdict(v, f):
        return "the same value, judged by today's test and interval rule"
    return ""


def beside(v: Verdict, frozen: dict[str, Frozen] | None) -> str:
    """Under a verdict: the published one where it differs, with the reason, kept short (a moved value's
    published number; the rest is in the value column) (HTML); '' where they agree or the version was published
    without a claims.csv."""
    if frozen is None:
        return ""
    f = frozen.get(v.claim.id)
    why = reason(v, f)
    if not why:
        return ""
    parts = moved(v, f) if f else []
    if parts:  # the published numbers; today's are in the value column
        why = ("; ".join(f"{part + ' ' if part else ''}was {f.values[part]}" for part in parts)
               + f": today's claim computes {'it' if len(parts) == 1 else 'them'} otherwise from the same run files")
    return (f'<div class="why published">published: {badge(f.verdict) if f else "–"}; {html.escape(why)}</div>')


def differing(verdicts: list[Verdict], frozen: dict[str, Frozen] | None) -> list[str]:
    """The claims whose verdict or value today differs from the published claims.csv's."""
    if frozen is None:
        return []
    return [v.claim.id for v in verdicts if reason(v, frozen.get(v.claim.id))]
