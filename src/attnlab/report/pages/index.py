"""The overview: the profile, its settings, every claim's verdict, and the provenance of every run file."""
from __future__ import annotations

import html
from functools import partial
from types import SimpleNamespace

import altair as alt
import pandas as pd

from attnlab import registry
from attnlab.eta import Spent, duration, spent
from attnlab.claims.summary import at_larger
from attnlab.claims.outcome import Outcome
from attnlab.report import budget
from attnlab.report.differences import budget_differences
from attnlab.report.charts import WIDTH, fit_page
from attnlab.report.format import badge, chart
from attnlab.report.readings import count
from attnlab.report.site import OURS, anchor, cards_table, origin_mark, tally


def headline(site, verdicts=None, count=partial(tally, bold=True)) -> str:
    """The summary that leads: where a larger budget than the version of record's measured claims (the
    chapter's own, see budget.py), their verdicts there first, pooled over versions, then the others' at the
    record's budget; the record's summary alone where nothing larger is published. `count` words a list of
    verdicts (default: the sources' claims by kind and verdict, then the project's own findings apart)."""
    verdicts = site.verdicts if verdicts is None else verdicts
    larger = site.larger()
    if not larger:
        return count(verdicts)
    there, rest = at_larger(verdicts, larger)
    first = next(iter(larger.values()))
    # the others as the version of record judged them (this site may be a partial version's, that ran none of them)
    rest = [SimpleNamespace(claim=v.claim, verdict=larger[v.claim.id].record_verdict) if v.claim.id in larger else v
            for v in rest]
    at_record = f"at the {first.record['profile']} budget of the version of record: {count(rest)}" if rest else ""
    if not there:
        return at_record
    seeds = sorted({x.seeds for v in there if (x := larger[v.claim.id]).seeds})
    at_seeds = budget.seeds_words(seeds[0]) if len(seeds) == 1 else f", at {seeds[0]} to {seeds[-1]} seeds" if seeds else ""
    out = f"at {budget.budget_words(first.above)}{at_seeds}: {count(there)}"
    return out + (f"; the other {len(rest)} {at_record}" if rest else "")


def page_list(site) -> str:
    """Every experiment's page, in the registry's order, with the claims it holds (none kept by hand)."""
    lines = []
    for e in registry.load():
        ids = [v.claim.id + (f" ({OURS})" if v.claim.ours else "") for v in site.page_verdicts(e.name)]
        lines.append(f"- [{e.title}]({e.name}.md)" + (f": {', '.join(ids)}" if ids else ""))
    return "\n".join(lines) + "\n"


def larger_budget(site) -> str:
    """The claims measured at a budget larger than the version of record's, each verdict beside the record's
    (the versions named in the paragraph above the table, and in a cell where there are several or its verdict
    pools several), and whether the
    budget changed a claim the record does not reproduce; '' (no section) where no version of a larger budget is
    published."""
    larger = site.larger()
    if not larger:
        return ""
    first = next(iter(larger.values()))
    measured = [(c, larger[c.id]) for c in (v.claim for v in site.verdicts) if larger[c.id].verdict]
    several = len({x.manifest["version"] for _, x in measured}) > 1
    rows = [("", [f'<a href="{c.experiment}.html#{anchor(c.id)}">{html.escape(c.id)}</a>{origin_mark(c)}',
                  badge(x.record_verdict),
                  badge(x.verdict)
                  + (f'<div class="why">{html.escape(x.pooled or x.manifest["version"])}</div>'
                     if several or x.pooled else "")
                  + (f'<div class="why">{html.escape(budget.sentence(x), quote=False)}</div>'
                     if x.record_verdict == Outcome.NOT_REPRODUCED else "")]) for c, x in measured]
    columns = [("claim", "id"), (f"{first.record['profile']}, the version of record", "verdict"),
               (f"at {budget.budget_words(first.above)}", "value")]
    table = cards_table("budget", columns, rows) + "\n" if rows else ""
    ours = frozenset(v.claim.id for v in site.verdicts if v.claim.ours)
    return f"## At {budget.budget_words(first.above)}\n\n{budget.tally(larger, ours)}\n\n{table}"


def time_chart(time: Spent) -> dict:
    """One bar per experiment: the run time its run files record, longest first; the wall time of the whole run
    (where its files record dates) as a dashed rule across them, on the same axis."""
    rows = pd.DataFrame([{"experiment": name, "run time (s)": round(secs, 1), "run files": time.files[name]}
                         for name, secs in time.run.items()])
    order = list(rows.sort_values("run time (s)", ascending=False)["experiment"])
    bars = alt.Chart(rows, title="Run time per experiment").mark_bar().encode(
        x=alt.X("run time (s):Q", title="run time (s), summed over its run files"),
        y=alt.Y("experiment:N", sort=order, title=None),
        tooltip=["experiment", alt.Tooltip("run time (s):Q", format=",.1f"), "run files"],
    ).properties(width=WIDTH, height=20 * len(order))
    if not time.wall:
        return fit_page(bars.to_dict())
    wall = pd.DataFrame({"run time (s)": [round(time.wall, 1)], "what": ["wall time of the whole run (s)"]})
    rule = alt.Chart(wall).mark_rule(color="#222", strokeDash=[6, 4], strokeWidth=2.5).encode(
        x="run time (s):Q", tooltip=["what", alt.Tooltip("run time (s):Q", format=",.1f")])
    label = alt.Chart(wall).mark_text(align="right", baseline="bottom", dx=-4, dy=-2, y=0, fontSize=12).encode(
        x="run time (s):Q", text=alt.value(f"wall time of the whole run: {duration(time.wall)}"))
    return fit_page(alt.layer(bars, rule, label).to_dict())


def time_words(time: Spent) -> str:
    """The totals the chart sums, in a sentence: the run time, the wall time and how many jobs that makes at once."""
    n = sum(time.files.values())
    out = (f"The {count(n, 'run file')} record{'s' if n == 1 else ''} {time.total:,.0f} s of run time "
           f"({duration(time.total)})")
    if not time.wall:
        return out + "; their dates, and so the wall time, are not recorded in this version."
    return (out + f"; from the first one's start to the last one's end, {time.wall:,.0f} s passed "
            f"({duration(time.wall)}): {time.total / time.wall:.1f} jobs' worth of run time at once on average.")


def where_time_went(site) -> str:
    """The chart of where this version's (or these results') time went, and its totals; a line where no run file
    records a time."""
    time = spent(site.folder)
    if not time.run:
        return "No run file here records its run time.\n"
    return chart("time-per-experiment", time_chart(time)) + "\n" + time_words(time) + "\n"


def blocks(site) -> dict[str, str]:
    return {
        "profile": f"`{site.profile}`",
        "results_dir": f"`{site.rdir}/`",
        "settings": site.settings_table(),
        "profile_differences": budget_differences(),
        "rerun": site.rerun_code(site.snakemake(gpu=True)),
        "summary": headline(site),
        "budget": larger_budget(site),
        "pages": page_list(site),
        "time": where_time_went(site),
        "verdicts": site.verdicts_block(None, link=True),
        "provenance": site.provenance_block(site.files_of(None)),
    }
