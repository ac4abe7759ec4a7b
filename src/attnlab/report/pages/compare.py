"""Two versions claim by claim: these results against every published version (verdicts recomputed from each
version's own run files with today's claims registry). The readings here (the tally, the change of a value, the
warning on different settings) are functions of the values they are given, each tested on both sides."""
from __future__ import annotations

import html
import math
import statistics

from attnlab.config import digest, seeds
from attnlab.report.format import badge, fmt
from attnlab.report.published import Frozen, frozen_verdicts, unread
from attnlab.report.site import cards_table, holds, origin_mark, parts_cell
from attnlab.report.readings import versus
from attnlab.runs import likes
from attnlab.claims.outcome import Outcome
from attnlab.claims.verdicts import Verdict
from attnlab.versions import differing, leaves, settings_of

NOISE_K = 2  # a change of value is read as one only where it clears this many standard errors of the difference
STATUS = {"same": "same", "changed": "≠ changed", "only here": "only here", "only there": "only there",
          "unread here": "unread here today", "unread there": "unread there today", "neither": "not run in either"}


def others(site) -> list[dict]:
    """The manifests of every published version but the one this site shows: the version of record first, then
    newest first."""
    own, record = (site.manifest or {}).get("version"), site.latest()
    return sorted((m for m in site.versions() if m["version"] != own), key=lambda m: m["version"] != record)


def status(mine: Verdict, other: Verdict, then_here: Frozen | None = None, then_there: Frozen | None = None) -> str:
    """'same' verdict, 'changed' verdict, or measured in one version only ('only here', 'only there': not run on
    the other side), which is no change of verdict but a claim one version did not measure, or in neither. A side
    that measured the claim when published (`then_…`: its claims.csv) but whose run files lack a field today's
    claim reads is 'unread' there, not unmeasured."""
    if mine.verdict == other.verdict == Outcome.NOT_RUN:
        return "neither"
    if mine.verdict == other.verdict:
        return "same"
    if Outcome.NOT_RUN in (mine.verdict, other.verdict):
        if other.verdict == Outcome.NOT_RUN:
            return "unread there" if unread(other, then_there) else "only here"
        return "unread here" if unread(mine, then_here) else "only there"
    return "changed"


NOT_BOTH = ("only here", "only there", "unread here", "unread there", "neither")  # not measured in both today


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


def number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def change_words(diff: float, se: float | None, how: str = "") -> str:
    """One part's change, here minus there: signed, ± the standard error of the difference where either side has
    one (`how` it was had, where said), and 'within the noise' where the difference does not clear NOISE_K of
    those errors (no direction is then read into its sign)."""
    text = ("+" if diff > 0 else "") + fmt(diff)
    if se is None:
        return text
    notes = [how] * bool(how) + ["within the noise"] * (abs(diff) <= NOISE_K * se)
    return text + f"\u00a0±\u00a0{fmt(se)}" + (f" ({'; '.join(notes)})" if notes else "")


FLOAT_NOISE = 1e-6  # relative: float32 keeps about seven digits, and a sum of many rounds a few of them
NEGLIGIBLE = 1e-3   # a difference under this share of the value's own error tells a reader nothing


def parts_of(value) -> dict:
    return {} if value is None else value if isinstance(value, dict) else {"": value}


def paired(mine: Verdict, other: Verdict, part: str) -> list[float]:
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


def part_change(a: float, b: float, diffs: list[float], errors: list[float]) -> str:
    """One part's change, here (a) minus there (b): 'identical' where every difference (seed by seed where
    `diffs` pairs them) is rounding; else the change, ± the error of the paired differences' mean (their spread
    over √n) where runs of the same seeds pair them, or both sides' errors combined where they are independent."""
    largest = max(abs(d) for d in diffs or [a - b])
    if identical(diffs or [a - b], [a, b], errors):
        return "identical" + (f" (|difference| ≤ {fmt(largest)})" if largest else "")
    if diffs:
        return change_words(a - b, statistics.stdev(diffs) / math.sqrt(len(diffs)), f"paired: {len(diffs)} seeds")
    return change_words(a - b, math.hypot(*errors) if errors else None)


def change(mine: Verdict, other: Verdict) -> str:
    """The change cell: each numeric part's value here minus there (parts named as in the value cells), '–'
    where either side has no number (see part_change for its error and for 'identical')."""
    here, there = parts_of(mine.reproduced), parts_of(other.reproduced)
    out = {}
    for part in here:
        if number(here[part]) and number(there.get(part)):
            errors = [e for e in (mine.se.get(part), other.se.get(part)) if e]
            out[part] = part_change(here[part], there[part], paired(mine, other, part), errors)
    return parts_cell(out) if out else "–"


def profile_of(cfg: dict) -> dict:
    """What two versions must share for their values to differ only by the code: the profile, its seeds and its
    digest, of the profile as validated today (the digest each page's settings table shows; a manifest's
    config_digest also moves with the schema's defaults at publishing, which change no run)."""
    return {"profile": cfg.get("profile"), "seeds": seeds(cfg), "digest": digest(cfg),
            "settings": {k: v for k, v in leaves(cfg).items() if k not in ("profile", "seeds")}}


SHOWN = 4  # differing settings named in a warning (those every run shares first); the rest are counted
SHARED = ("threads", "device", "data.", "model.", "train.")


def setting_differences(here: dict, there: dict) -> str:
    """The settings (dotted names) whose values differ between two profiles' leaves, each with both values
    ('unset' where one side lacks it or leaves it null), the first SHOWN named (those every run shares first)
    and the rest counted; '' where none differ."""
    def show(leaf, key):
        return "unset" if leaf.get(key) is None else html.escape(str(leaf[key]))
    differ = sorted(differing(here, there), key=lambda k: not k.startswith(SHARED))  # stable: by name within
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


def variant_lines(mine: dict, theirs_of, like_of: dict[str, str]) -> str:
    """The runs this profile adds (`like_of`: run -> the run it is like), each one's validation perplexity here
    against that run's there, paired by the seeds both have (`mine`: run -> results.Spread here; `theirs_of(run)`:
    its results.Spread there, or None); '' where none ran here."""
    items = []
    for name, like in like_of.items():
        if mine.get(name) is None:
            continue
        there = theirs_of(like)
        said = versus(mine[name], there, "higher here", "lower here") if there else "not run there"
        items.append(f"<li><code>{html.escape(name)}</code> here against <code>{html.escape(like)}</code> there "
                     f"(validation perplexity): {html.escape(said)}</li>")
    if not items:
        return ""
    return ("<p>Runs of this profile's own, each against the run it is like in that version (a difference paired by "
            f"the seeds both have, ± k·SE; a direction only where that interval clears zero):</p><ul>{''.join(items)}"
            "</ul>")


def comparison(site, manifest: dict) -> str:
    """One table: each claim's verdict and value here and in `manifest`'s version, what changed, and by how
    much; a warning first where the two ran different settings."""
    folder = site.versions_root / "results" / manifest["version"]
    theirs = site.verdicts_of(manifest["version"])
    pairs = [(mine, theirs[mine.claim.id]) for mine in site.verdicts]
    then_here, then_there = site.frozen() or {}, frozen_verdicts(folder) or {}
    statuses = {v.claim.id: status(v, other, then_here.get(v.claim.id), then_there.get(v.claim.id))
                for v, other in pairs}
    pairs.sort(key=lambda pair: statuses[pair[0].claim.id] in NOT_BOTH)  # what both measured first, in order
    rows = [("", [html.escape(mine.claim.id) + origin_mark(mine.claim), verdict_cell(mine, then_here),
                  verdict_cell(other, then_there), STATUS[statuses[mine.claim.id]], value_cell(mine, then_here),
                  value_cell(other, then_there), change(mine, other)]) for mine, other in pairs]
    m = manifest
    about = (f"Version <code>{html.escape(m['version'])}</code>: profile {html.escape(m['profile'])}, runs at commit "
             f"<code>{m['commit']}</code> on {html.escape(m['hardware'])}, published {m['published'][:10]}{holds(m)}.")
    warning = profile_warning(profile_of(site.config), profile_of(settings_of(folder / "config.yaml")))
    like_of = likes(site.config)
    mine = {name: site.res.spread(name, "val_ppl") for name in like_of}
    variants = variant_lines(mine, lambda run: site.pool_of(m["version"]).results.spread(run, "val_ppl"), like_of) \
        if like_of else ""
    return (f'<div class="compare-version"><p>{about}</p>{warning}<p>{tally(statuses)}</p>{variants}'
            + cards_table("compare changes", COLUMNS, rows) + "</div>")


def blocks(site) -> dict[str, str]:
    here = (f"version <code>{html.escape(site.manifest['version'])}</code>" if site.manifest
            else f"the unpublished results in <code>{html.escape(site.res.root.name)}/</code>")
    found, record = others(site), site.latest()
    rule = {"here": here, "noise_k": f"{NOISE_K} standard errors"}
    if not found:
        return rule | {"compare": "_No other published version to compare with: `attnlab publish` makes one._"}
    sections = [f'<details class="compare"{" open" if i == 0 else ""}><summary>against version '
                f'{html.escape(m["version"])}{" (the version of record)" if m["version"] == record else ""}</summary>'
                f"{comparison(site, m)}</details>" for i, m in enumerate(found)]
    return rule | {"compare": "\n\n".join(sections)}
