"""The History page of a tree of versions (site/history/index.html): one section per claim (#claim-<id>) with its
value and interval in every version that measured it (a chart, coloured by budget, the source's value as a rule),
the table `attnlab history` prints, and a sentence naming the steps and the commits between."""
from __future__ import annotations

import html
import json
from pathlib import Path

import altair as alt
import pandas as pd

from attnlab import versions
from attnlab.comparison import number
from attnlab.history import Row, history, step_text, value_text
from attnlab.report.format import fmt
from attnlab.report.readings import count
from attnlab.report.site import anchor

VENDOR = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")


def sentence(claim_id: str, rows: list[Row]) -> str:
    """The claim's history in words, from its rows: how many versions measured it, and each step (or none)."""
    if not rows:
        return f"No published version measured {claim_id}."
    steps = [r for r in rows if r.step]
    measured = f"{count(len(rows), 'published version')} measured {claim_id}"
    if not steps:
        return (f"{measured}; between the versions of each budget its value never moved beyond the noise and its "
                "verdict never changed.")
    said = []
    for r in steps:
        s = r.step
        what = [f"{p or 'its value'} moved by {fmt(c['diff'])}" + (f" ± {fmt(c['se'])}" if c["se"] else "")
                for p, c in s.moved.items()]
        what += [f"its verdict went from {s.was} to {r.verdict.verdict}"] if s.was is not None else []
        commits = ("git cannot list the commits between them here" if s.commits is None else
                   f"{count(len(s.commits), 'commit')} between them touched its code ({hashes(s.commits)})"
                   if s.commits else "no commit between them touched its code")
        settings = (f"{count(len(s.settings), 'setting')} its runs read differ "
                    f"({', '.join(d.setting for d in s.settings)})" if s.settings else "no setting its runs read differs")
        said.append(f"at {r.version}, since {s.since}, {' and '.join(what)}: {commits}, and {settings}")
    return f"{measured}; it stepped {count(len(steps), 'time')}: " + "; ".join(said) + "."


NAMED = 6  # commits named in a sentence; the table under it names every one


def hashes(commits: list[tuple[str, str]]) -> str:
    """'a1b2c3d, …' the first NAMED commits, and how many more."""
    named = ", ".join(h for h, _ in commits[:NAMED])
    return named + (f" and {len(commits) - NAMED} more, in the table" if len(commits) > NAMED else "")


def chart_rows(rows: list[Row], chapter) -> pd.DataFrame:
    """One row per version and numeric part: its value, its interval (None where it has none: one seed, or a
    computed part; the point is drawn without a bar) and its budget."""
    chapter = chapter if isinstance(chapter, dict) else {"": chapter}
    out = []
    for i, r in enumerate(rows):
        for part, p in r.verdict.parts.items():
            if number(p.value):  # NaN and infinity have no place on an axis
                source = chapter.get(part)
                lo, hi = p.interval or (None, None)
                out.append({"order": i, "version": r.version, "budget": r.manifest["profile"], "part": part or "value",
                            "value": p.value, "lo": lo, "hi": hi, "verdict": str(r.verdict.verdict),
                            "source": source if number(source) else None})
    return pd.DataFrame(out)


def chart(claim_id: str, data: pd.DataFrame) -> dict | None:
    """The value with its interval across versions, one panel per part (its own y scale, named by its row header),
    the source's value as a rule; None where no version measured a numeric part."""
    if data.empty:
        return None
    order = list(dict.fromkeys(data.sort_values("order")["version"]))
    x = alt.X("version:N", sort=order, title=None, axis=alt.Axis(labelAngle=-40, labelLimit=260))
    colour = alt.Color("budget:N", title="budget")
    base = alt.Chart().encode(x=x)
    layers = [base.mark_rule().encode(y=alt.Y("lo:Q", title=None, scale=alt.Scale(zero=False)), y2="hi:Q",
                                      color=colour),
              base.mark_point(filled=True, size=60).encode(y="value:Q", color=colour,
                                                           tooltip=["version", "budget", "part", "value", "lo", "hi",
                                                                    "verdict"])]
    if data["source"].notna().any():
        layers.append(alt.Chart().mark_rule(strokeDash=[4, 3], color="black").encode(y="source:Q"))
    spec = alt.layer(*layers, data=data).properties(width=560, height=150).facet(
        row=alt.Row("part:N", title=None)).resolve_scale(y="independent")
    return spec.properties(title=f"{claim_id}: value and interval in every version that measured it").to_dict()


def table(rows: list[Row]) -> str:
    head = "<tr><th>version</th><th>budget</th><th>seeds</th><th>value ± SE</th><th>verdict</th><th>step</th></tr>"
    body = "".join(
        f"<tr><td><a href=\"../{html.escape(r.version)}/index.html\"><code>{html.escape(r.version)}</code></a></td>"
        f"<td>{html.escape(r.manifest['profile'])}</td><td>{r.seeds}</td><td>{html.escape(value_text(r.verdict))}</td>"
        f"<td>{html.escape(str(r.verdict.verdict))}</td><td>{html.escape(step_text(r.step)) if r.step else ''}</td></tr>"
        for r in rows)
    return f'<table class="history">{head}{body}</table>'


def build_history(out_site: Path, root: Path, claims: list, verdicts_of, record: str) -> Path:
    """out_site/history/index.html for `claims` (registry claims), every version's verdicts from `verdicts_of`;
    the charts draw with the version of record's vendored Vega (relative paths: it works opened from disk)."""
    folder = Path(out_site) / "history"
    folder.mkdir(parents=True, exist_ok=True)
    scripts = "".join(f'<script src="../{record}/assets/vendor/{name}"></script>' for name in VENDOR)
    sections, embeds = [], []
    for c in claims:
        rows = history(c.id, root, verdicts_of)
        spec = chart(c.id, chart_rows(rows, c.chapter_value))
        div = f"chart-{anchor(c.id)}"
        if spec:
            embeds.append(f"vegaEmbed('#{div}', {json.dumps(spec)}, {{actions: false}});")
        sections.append(
            f'<section id="{anchor(c.id)}"><h2>{html.escape(c.id)} · {html.escape(c.claim)}</h2>'
            f"<p>{html.escape(sentence(c.id, rows))}</p>" + (f'<div class="wide" id="{div}"></div>' if spec else "")
            + (f'<div class="wide">{table(rows)}</div>' if rows else "") + "</section>")
    names = [m["version"] for m in versions.versions(root)]
    page = ('<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            'content="width=device-width, initial-scale=1"><title>attnlab · every claim across '
            f'versions</title>{scripts}<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;'
            "padding:0 8px}div.wide{overflow-x:auto}"  # a phone scrolls the chart and the table, not the page
            "table.history{border-collapse:collapse;font-size:90%}table.history td,table.history th{border:1px solid "
            "#ccc;padding:3px 6px;vertical-align:top}</style></head><body>"
            f'<p><a href="../index.html">every version</a> · <a href="../{versions.ALIAS}/index.html">the version of '
            f"record</a></p><h1>Every claim across the versions</h1>"
            f"<p>Each claim in every published version whose run files answer it ({count(len(names), 'version')}), "
            "read with today's claims, oldest commit first. A step (◆) is a version whose value moved beyond the "
            "noise (two standard errors of the difference, as the compare page tests it) or whose verdict changed "
            "since the previous version of its budget; versions of other budgets are never compared. "
            "<code>python -m attnlab history &lt;claim&gt;</code> prints the same table.</p>"
            + "".join(sections) + f"<script>{''.join(embeds)}</script></body></html>")
    (folder / "index.html").write_text(page)
    return folder / "index.html"
