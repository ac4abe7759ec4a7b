"""The overview: the profile, its settings, every claim's verdict, and the provenance of every run file."""
from __future__ import annotations

from collections import Counter

from attnlab import registry
from attnlab.report.format import code
from attnlab.report.verdicts import VERDICTS


def page_list(site) -> str:
    """Every experiment's page, in the registry's order, with the claims it holds (none kept by hand)."""
    lines = []
    for e in registry.load():
        ids = [v.claim.id for v in site.page_verdicts(e.name)]
        lines.append(f"- [{e.title}]({e.name}.md)" + (f": {', '.join(ids)}" if ids else ""))
    return "\n".join(lines) + "\n"


def blocks(site) -> dict[str, str]:
    counts = Counter(v.verdict for v in site.verdicts)
    summary = ", ".join(f"**{counts[k]}** {k}" for k in VERDICTS
                        if counts[k])
    return {
        "profile": f"`{site.profile}`",
        "results_dir": f"`{site.rdir}/`",
        "settings": site.settings_table(),
        "rerun": code(site.snakemake(gpu=True)),
        "summary": summary or "no claims registered",
        "pages": page_list(site),
        "verdicts": site.verdicts_block(None, link=True),
        "provenance": site.provenance_block(site.files_of(None)),
    }
