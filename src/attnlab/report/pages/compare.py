"""Two versions claim by claim: these results against every published version (verdicts recomputed from each
version's own run files with today's claims registry)."""
from __future__ import annotations

import html

from attnlab.report.format import badge
from attnlab.report.page import holds, parts_cell
from attnlab.report.results import gather
from attnlab.report.verdicts import evaluate_all


def others(site) -> list[dict]:
    """The manifests of every published version but the one this site shows, newest first."""
    own = (site.manifest or {}).get("version")
    return [m for m in site.versions() if m["version"] != own]


def comparison(site, manifest: dict) -> str:
    """One table: each claim's verdict and value here and in `manifest`'s version; changed verdicts flagged."""
    theirs = {v.claim.id: v for v in evaluate_all(site.registry, gather(site.versions_root / "results" / manifest["version"]))}
    rows, changed = [], []
    for mine in site.verdicts:
        other = theirs.get(mine.claim.id)
        same = other is not None and other.verdict == mine.verdict
        if not same:
            changed.append(mine.claim.id)
        value = (lambda v: "" if v is None else parts_cell(v.shown()))
        rows.append(f"<tr><td>{html.escape(mine.claim.id)}</td><td>{badge(mine.verdict)}</td>"
                    f"<td>{badge(other.verdict) if other else '–'}</td><td>{'same' if same else '≠ changed'}</td>"
                    f"<td>{value(mine)}</td><td>{value(other)}</td></tr>")
    head = (f"<strong>{len(site.verdicts) - len(changed)}</strong> of {len(site.verdicts)} claims have the same "
            f"verdict in both" + (f"; changed: {', '.join(changed)}." if changed else "."))
    m = manifest
    about = (f"Version <code>{html.escape(m['version'])}</code>: profile {html.escape(m['profile'])}, runs at commit "
             f"<code>{m['commit']}</code> on {html.escape(m['hardware'])}, published {m['published'][:10]}{holds(m)}.")
    return (f'<div class="compare-version"><p>{about}</p><p>{head}</p>'
            '<table class="compare"><thead><tr><th>claim</th><th>here</th><th>there</th><th>verdict</th>'
            f"<th>value here</th><th>value there</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def blocks(site) -> dict[str, str]:
    here = (f"version <code>{html.escape(site.manifest['version'])}</code>" if site.manifest
            else f"the unpublished results in <code>{html.escape(site.res.root.name)}/</code>")
    found = others(site)
    if not found:
        return {"here": here, "compare": "_No other published version to compare with: `attnlab publish` makes one._"}
    sections = [f'<details class="compare"{" open" if i == 0 else ""}><summary>against version '
                f'{html.escape(m["version"])}</summary>{comparison(site, m)}</details>' for i, m in enumerate(found)]
    return {"here": here, "compare": "\n\n".join(sections)}
