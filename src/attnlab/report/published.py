"""A version's claims.csv as it was frozen when published, beside the verdicts its site shows (today's claims over
its run files): where the two differ, both, and why (a claim added since, run files that lack a field today's
claim reads, a value computed otherwise, the same value judged by another rule)."""
from __future__ import annotations

import html

from attnlab.claims.outcome import Outcome
from attnlab.claims.table import MEASURED_THEN, Frozen, moved, same_verdict, unread
from attnlab.claims.verdicts import Verdict
from attnlab.report.format import badge


ELSEWHERE = "today's verdict also reads run files of other versions (their seeds pooled in, or a second look)"


def reason(v: Verdict, f: Frozen | None, elsewhere: bool = False) -> str:
    """Why today's verdict or value differs from the published one; '' where they agree. `elsewhere`: today's
    verdict reads run files of other versions too, which the published one could not."""
    if f is None:
        return "not in its claims.csv: a claim added since it was published"
    if unread(v, f):
        return f"measured in that version, but its run files lack {', '.join(v.lacking)} that today's claim reads"
    if v.verdict == Outcome.NOT_RUN and f.verdict in MEASURED_THEN:
        return f"measured in that version; today's claim cannot read its run files ({v.note})"
    parts = moved(v, f)
    if parts and elsewhere:
        return ELSEWHERE
    if parts:
        named = ", ".join(p or "the value" for p in parts)
        return f"today's claim computes {named} otherwise from the same run files"
    if not same_verdict(v, f):
        return ELSEWHERE if elsewhere else "the same value, judged by today's test and interval rule"
    return ""


def beside(v: Verdict, frozen: dict[str, Frozen] | None, elsewhere: bool = False) -> str:
    """Under a verdict: the published one where it differs, with the reason, kept short (a moved value's
    published number; the rest is in the value column) (HTML); '' where they agree or the version was published
    without a claims.csv. `elsewhere`: the verdict reads run files of other versions too (see reason)."""
    if frozen is None:
        return ""
    f = frozen.get(v.claim.id)
    why = reason(v, f, elsewhere)
    if not why:
        return ""
    parts = moved(v, f) if f else []
    if parts:  # the published numbers; today's are in the value column
        how = ("other versions' run files read too" if elsewhere else
               f"today's claim computes {'it' if len(parts) == 1 else 'them'} otherwise from the same run files")
        why = "; ".join(f"{part + ' ' if part else ''}was {f.values[part]}" for part in parts) + f": {how}"
    return (f'<div class="why published">published: {badge(f.verdict) if f else "–"}; {html.escape(why)}</div>')


def differing(verdicts: list[Verdict], frozen: dict[str, Frozen] | None) -> list[str]:
    """The claims whose verdict or value today differs from the published claims.csv's."""
    if frozen is None:
        return []
    return [v.claim.id for v in verdicts if reason(v, frozen.get(v.claim.id))]
