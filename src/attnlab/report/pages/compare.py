"""Two versions claim by claim: these results against every published version (verdicts recomputed from each
version's own run files with today's claims registry). The readings here (the tally, the change of a value, the
warning on different settings) are functions of the values they are given, each tested on both sides."""
from __future__ import annotations

import html

from attnlab.comparison import NOISE_K, NOT_BOTH, changes, differing_settings, others, paired_up, profile_of, variants
from attnlab.report.format import badge, fmt
from attnlab.claims.table import frozen_verdicts, unread
from attnlab.report.site import cards_table, holds, origin_mark, parts_cell
from attnlab.report.readings import versus
from attnlab.claims.verdicts import Verdict
from attnlab.versions import settings_of

STATUS = {"same": "same", "changed": "≠ changed", "only here": "only here", "only there": "only there",
          "unread here": "unread here today", "unread there": "unread there today", "neither": "not run in either"}


def tally(statuses: dict[str, str]) -> str:
    """The comparison's first line (claim id -> status): how many of the claims both versions measured keep their
    verdict, then the claims that changed, those measured in one version only and those in neither, by id."""
    same = sum(s == "same" for s in statuses.values())
    both = sum(s not in NOT_BOTH for s in statuses.values())
    out = f"<strong>{same}</strong> of {'the ' if both < len(statuses) else ''}{both} claims " + \
        ("measured in both have the same verdict" if both < len(statuses) else "have the same verdict in both")
    for key, label in (("changed", "changed"), ("only here", "only here (not run there)"),
                       ("only there", "only there (not run here)"),
                       ("unread there", "measured there when published, but its run files lack a field today's "
                                        "claim reads"),
                       ("unread here", "measured here when published, but its run files lack a field today's "
                                       "claim reads"), ("neither", "not run in either")):
        ids = [claim for claim, s in statuses.items() if s == key]
        if ids:
            out += f"; {label}: {', '.join(ids)}"
    return out + "."


def change_words(diff: float, se: float | None, how: str = "") -> str:
    """One part's change, here minus there: signed, ± the standard error of the difference where either side has
    one (`how` it was had, where said), and 'within the noise' where the difference does not clear NOISE_K of
    those errors (no direction is then read into its sign)."""
    text = ("+" if diff > 0 else "") + fmt(diff)
    if se is None:
        return text
    notes = [how] * bool(how) + ["within the noise"] * (abs(diff) <= NOISE_K * se)
    return text + f"\u00a0±\u00a0{fmt(se)}" + (f" ({'; '.join(notes)})" if notes else "")


def change_cell(c: dict) -> str:
    """One part's attnlab.comparison.part_change in words: 'identical' where it is rounding (with the largest
    difference, where any), else the change (change_words), its error paired by seed where it is."""
    if "identical" in c:
        return "identical" + (f" (|difference| ≤ {fmt(c['identical'])})" if c["identical"] else "")
    return change_words(c["diff"], c["se"], f"paired: {c['paired']} seeds" if c["paired"] else "")


def change(mine: Verdict, other: Verdict) -> str:
    """The change cell: each numeric part's value here minus there (comparison.changes; parts named as in the
    value cells), '–' where either side has no number."""
    out = {part: change_cell(c) for part, c in changes(mine, other).items()}
    return parts_cell(out) if out else "–"


SHOWN = 4  # differing settings named in a warning (those every run shares first); the rest are counted


def setting_differences(here: dict, there: dict) -> str:
    """The settings (dotted names) whose values differ between two profiles' leaves, each with both values
    ('unset' where one side lacks it or leaves it null), the first SHOWN named (those every run shares first)
    and the rest counted; '' where none differ."""
    def show(leaf, key):
        return "unset" if leaf.get(key) is None else html.escape(str(leaf[key]))
    differ = differing_settings(here, there)
    named = [f"<code>{html.escape(k)}</code> {show(here, k)} here, {show(there, k)} there" for k in differ[:SHOWN]]
    more = f"; and {len(differ) - SHOWN} more" if len(differ) > SHOWN else ""
    return f"The settings that differ: {'; '.join(named)}{more}." if named else ""


SETTINGS = (("profile", "profile", html.escape), ("seeds", "seeds", lambda s: ", ".join(map(str, s))),
            ("digest", "profile digest", lambda d: f"<code>{html.escape(str(d))}</code>"))


def profile_warning(here: dict, there: dict) -> str:
    """A warning where the two versions ran different settings (profile, seeds, profile digest), naming each
    difference and the settings behind a digest's; '' where they ran the same."""
    differ = [f"{label} {show(here[key])} here, {show(there[key])} there"
              for key, label, show in SETTINGS if here[key] != there[key]]
    if not differ:
        return ""
    named = setting_differences(here.get("settings", {}), there.get("settings", {}))
    return ('<div class="admonition warning"><p class="admonition-title">different settings</p><p>The two '
            f"versions ran different settings: {'; '.join(differ)}. {named + ' ' if named else ''}A value or a "
            "verdict that moved may have moved with the settings, not with the code.</p></div>")


def verdict_cell(v: Verdict, then: dict) -> str:
    """A side's verdict; for a claim unread today, the one its version was published with beneath it."""
    f = then.get(v.claim.id)
    return badge(v.verdict) + (f'<div class="why">published: {badge(f.verdict)}</div>' if unread(v, f) else "")


def value_cell(v: Verdict, then: dict) -> str:
    """A side's value (± SE); for a claim unread today, the published value and the fields its files lack."""
    f = then.get(v.claim.id)
    if not unread(v, f):
        return parts_cell(v.shown())
    lacking = ", ".join(f"<code>{html.escape(name)}</code>" for name in v.lacking)
    return (parts_cell(f.values) + f'<div class="why">as published: measured in that version, but its run files '
            f"lack {lacking} that today's claim reads</div>")


COLUMNS = [("claim", "id"), ("here", "verdict"), ("there", "value"), ("verdict", "value"), ("value here (± SE)", "value"),
           ("value there (± SE)", "value"), ("change: here − there (± SE)", "value")]


def variant_lines(variants: list[tuple]) -> str:
    """The runs this profile adds, each one's validation perplexity here against the run it is like's there
    (comparison.variants: run, like, results.Spread here, there or None), paired by the seeds both have; '' where
    none ran here."""
    items = [f"<li><code>{html.escape(name)}</code> here against <code>{html.escape(like)}</code> there (validation "
             f"perplexity): {html.escape(versus(mine, there, 'higher here', 'lower here') if there else 'not run there')}"
             "</li>" for name, like, mine, there in variants]
    if not items:
        return ""
    return ("<p>Runs of this profile's own, each against the run it is like in that version (a difference paired by "
            f"the seeds both have, ± k·SE; a direction only where that interval clears zero):</p><ul>{''.join(items)}"
            "</ul>")


def comparison(site, manifest: dict) -> str:
    """One table: each claim's verdict and value here and in `manifest`'s version, what changed, and by how
    much; a warning first where the two ran different settings."""
    folder = site.versions_root / "results" / manifest["version"]
    then_here, then_there = site.frozen() or {}, frozen_verdicts(folder) or {}
    pairs, statuses = paired_up(site.verdicts, site.verdicts_of(manifest["version"]),
                                lambda v: unread(v, then_here.get(v.claim.id)),
                                lambda v: unread(v, then_there.get(v.claim.id)))
    rows = [("", [html.escape(mine.claim.id) + origin_mark(mine.claim), verdict_cell(mine, then_here),
                  verdict_cell(other, then_there), STATUS[statuses[mine.claim.id]], value_cell(mine, then_here),
                  value_cell(other, then_there), change(mine, other)]) for mine, other in pairs]
    m = manifest
    about = (f"Version <code>{html.escape(m['version'])}</code>: profile {html.escape(m['profile'])}, runs at commit "
             f"<code>{m['commit']}</code> on {html.escape(m['hardware'])}, published {m['published'][:10]}{holds(m)}.")
    warning = profile_warning(profile_of(site.config), profile_of(settings_of(folder / "config.yaml")))
    there = variants(site.config, site.res, lambda run: site.pool_of(m["version"]).results.spread(run, "val_ppl"))
    return (f'<div class="compare-version"><p>{about}</p>{warning}<p>{tally(statuses)}</p>{variant_lines(there)}'
            + cards_table("compare changes", COLUMNS, rows) + "</div>")


def blocks(site) -> dict[str, str]:
    here = (f"version <code>{html.escape(site.manifest['version'])}</code>" if site.manifest
            else f"the unpublished results in <code>{html.escape(site.res.root.name)}/</code>")
    record = site.latest()
    found = others(site.versions(), (site.manifest or {}).get("version"), record)
    rule = {"here": here, "noise_k": f"{NOISE_K} standard errors"}
    if not found:
        return rule | {"compare": "_No other published version to compare with: `attnlab publish` makes one._"}
    sections = [f'<details class="compare"{" open" if i == 0 else ""}><summary>against version '
                f'{html.escape(m["version"])}{" (the version of record)" if m["version"] == record else ""}</summary>'
                f"{comparison(site, m)}</details>" for i, m in enumerate(found)]
    return rule | {"compare": "\n\n".join(sections)}
