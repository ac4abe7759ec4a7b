"""The overview: the profile, its settings, every claim's verdict, and the provenance of every run file."""
from __future__ import annotations

from collections import Counter

import html

from attnlab import registry
from attnlab.report import budget
from attnlab.report.differences import budget_differences
from attnlab.report.format import badge, code
from attnlab.report.site import anchor, cards_table
from attnlab.runfiles import VERDICTS


def summary(verdicts) -> str:
    """The headline: the measured claims' verdicts; the computed claims (arithmetic, counts) counted apart."""
    measured = [v for v in verdicts if v.claim.kind == "measured"]
    computed = [v for v in verdicts if v.claim.kind == "computed"]
    out = counted(measured, f"of {len(measured)} measured claims")
    if computed:
        out += f" (and {len(computed)} computed claims, which hold or fail by arithmetic: {counted(computed, '')})"
    return out or "no claims registered"


def counted(verdicts, label: str) -> str:
    counts = Counter(v.verdict for v in verdicts)
    listed = ", ".join(f"**{counts[k]}** {k}" for k in VERDICTS if counts[k])
    return f"{listed} {label}".strip() if listed else ""


def page_list(site) -> str:
    """Every experiment's page, in the registry's order, with the claims it holds (none kept by hand)."""
    lines = []
    for e in registry.load():
        ids = [v.claim.id for v in site.page_verdicts(e.name)]
        lines.append(f"- [{e.title}]({e.name}.md)" + (f": {', '.join(ids)}" if ids else ""))
    return "\n".join(lines) + "\n"


def larger_budget(site) -> str:
    """The claims measured at a budget larger than the version of record's, each verdict beside the record's
    (the versions named in the paragraph above the table, and in a cell where there are several), and whether the
    budget changed a claim the record does not reproduce; '' (no section) where no version of a larger budget is
    published."""
    larger = site.larger()
    if not larger:
        return ""
    first = next(iter(larger.values()))
    measured = [(c, larger[c.id]) for c in (v.claim for v in site.verdicts) if larger[c.id].verdict]
    several = len({x.manifest["version"] for _, x in measured}) > 1
    rows = [("", [f'<a href="{c.experiment}.html#{anchor(c.id)}">{html.escape(c.id)}</a>', badge(x.record_verdict),
                  badge(x.verdict)
                  + (f'<div class="why">{html.escape(x.manifest["version"])}</div>' if several else "")
                  + (f'<div class="why">{html.escape(budget.sentence(x), quote=False)}</div>'
                     if x.record_verdict == "not reproduced" else "")]) for c, x in measured]
    columns = [("claim", "id"), (f"{first.record['profile']}, the version of record", "verdict"),
               (f"at {budget.budget_words(first.above)}", "value")]
    table = cards_table("budget", columns, rows) + "\n" if rows else ""
    return f"## At {budget.budget_words(first.above)}\n\n{budget.tally(larger)}\n\n{table}"


def blocks(site) -> dict[str, str]:
    return {
        "profile": f"`{site.profile}`",
        "results_dir": f"`{site.rdir}/`",
        "settings": site.settings_table(),
        "profile_differences": budget_differences(),
        "rerun": site.rerun_code(site.snakemake(gpu=True)),
        "summary": summary(site.verdicts),
        "budget": larger_budget(site),
        "pages": page_list(site),
        "verdicts": site.verdicts_block(None, link=True),
        "provenance": site.provenance_block(site.files_of(None)),
    }
