"""The overview: the profile, its settings, every claim's verdict, and the provenance of every run file."""
from __future__ import annotations

from collections import Counter

from attnlab import registry
from attnlab.report.format import code
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


def blocks(site) -> dict[str, str]:
    return {
        "profile": f"`{site.profile}`",
        "results_dir": f"`{site.rdir}/`",
        "settings": site.settings_table(),
        "rerun": code(site.snakemake(gpu=True)),
        "summary": summary(site.verdicts),
        "pages": page_list(site),
        "verdicts": site.verdicts_block(None, link=True),
        "provenance": site.provenance_block(site.files_of(None)),
    }
