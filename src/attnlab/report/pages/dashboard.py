"""Every claim of the chapter and the survey on one page: the source's value, ours, the verdict, where it comes
from (version, hardware) and a link to the claim on its experiment's page; filterable by verdict and experiment
(plain JavaScript, no library: the page works opened from disk)."""
from __future__ import annotations

import html

from attnlab import registry
from attnlab.report import budget, published
from attnlab.report.format import badge
from attnlab.report.pages import index as overview
from attnlab.report.readings import at_seeds
from attnlab.report.site import (OURS, alone, anchor, by_kind, cards_table, origin_mark, parts_cell, reproduced_cell,
                                 why_not)
from attnlab.claims.summary import apart, by_survival, by_whose, error_source, made, whose, why_unseeded
from attnlab.claims.verdicts import Verdict
from attnlab.claims.outcome import VERDICTS
from attnlab.versions import hardware


WHOSE = {"chapter": "the chapter's", "survey": "the survey's",
         "ours": "the project's own findings (the sources never state them)"}  # summary.whose() in words


def where(site, v: Verdict) -> str:
    """The results a verdict comes from: the version (or the unpublished folder) and the hardware its run files
    were made on ('–' where none of them has run)."""
    files = made(v, site.res)
    if not files:
        return "–"
    results = (", ".join(sorted({f.split("/")[0] for f in files})) if site.pool else site.manifest["version"]) \
        if site.manifest else f"{site.res.root.name}/"
    return f"{html.escape(results)} · {html.escape(hardware(files))}"


def row(site, v: Verdict, titles: dict[str, str]) -> tuple[str, list[str]]:
    """A claim's row of the dashboard: its attributes (what the filters read) and its cells."""
    c, larger = v.claim, site.larger()
    cells = [f'<a href="{c.experiment}.html#{anchor(c.id)}">{html.escape(c.id)}</a>{origin_mark(c)}',
             html.escape(titles.get(c.experiment, c.experiment)), html.escape(c.claim), parts_cell(c.chapter_value),
             reproduced_cell(v), f"{badge(v.verdict)}{why_not(v)}{alone(v)}{published.beside(v, site.frozen(), site.reads_elsewhere(v.claim))}", where(site, v)]
    if larger:  # the larger budget leads: right after what the source says
        cells.insert(4, budget.cell(larger[c.id], (site.manifest or {}).get("version")))
    return (f'data-verdict="{html.escape(v.verdict)}" data-experiment="{html.escape(c.experiment)}" '
            f'data-kind="{c.kind}" data-whose="{whose(c)}"', cells)


COLUMNS = [("claim", "id"), ("experiment", "aside"), ("what it says", "text"), ("source", "value"),
           ("ours (± SE)", "value"), ("verdict", "verdict"), ("from", "aside")]


def option_count(verdicts: list[Verdict], verdict: str) -> str:
    """A verdict's count in the filter: the sources' claims, and the project's own findings apart ('3 + 1 ours')."""
    theirs, ours = apart(verdicts, verdict)
    return f"{theirs} + {ours} of ours" if ours else str(theirs)


def controls(verdicts: list[Verdict], titles: dict[str, str]) -> str:
    by_verdict = "".join(f'<option value="{k}">{k} ({option_count(verdicts, k)})</option>'
                         for k in VERDICTS if any(apart(verdicts, k)))
    whom = "".join(f'<option value="{w}">{html.escape(WHOSE[w])}</option>' for w in by_whose(verdicts))
    used = dict.fromkeys(v.claim.experiment for v in verdicts)
    by_experiment = "".join(f'<option value="{html.escape(e)}">{html.escape(titles.get(e, e))}</option>'
                            for e in used)
    return ('<div class="dashboard-filters">'
            '<label>verdict <select id="dashboard-verdict"><option value="">all</option>'
            f"{by_verdict}</select></label> "
            '<label>experiment <select id="dashboard-experiment"><option value="">all</option>'
            f"{by_experiment}</select></label> "
            '<label>whose claim <select id="dashboard-whose"><option value="">all</option>'
            f"{whom}</select></label> "
            '<span id="dashboard-count" aria-live="polite"></span></div>')


SCRIPT = """<script>
(function () {
  var verdict = document.getElementById("dashboard-verdict");
  var experiment = document.getElementById("dashboard-experiment");
  var whose = document.getElementById("dashboard-whose");
  var rows = document.querySelectorAll("table.dashboard tbody tr");
  function filter() {
    var shown = 0;
    rows.forEach(function (r) {
      var on = (!verdict.value || r.dataset.verdict === verdict.value) &&
               (!experiment.value || r.dataset.experiment === experiment.value) &&
               (!whose.value || r.dataset.whose === whose.value);
      r.hidden = !on;
      if (on) shown++;
    });
    document.getElementById("dashboard-count").textContent = shown + " of " + rows.length + " claims";
  }
  verdict.addEventListener("change", filter);
  experiment.addEventListener("change", filter);
  whose.addEventListener("change", filter);
  filter();
})();
</script>"""


SURVIVAL = {  # summary.survival(v) -> what it says of a claim the chapter made from one run (the seeds alone, not the
    # mean, whose verdict each group lists beside it)
    "every seed": "reproduce at every seed alone: one run would have found them, whichever seed it drew",
    "some seeds": "reproduce at some seeds alone and not at others: one run would have found them or missed them, "
                  "depending on the seed it drew",
    "no seed": "reproduce at no seed alone: one run would have missed them, whichever seed it drew",
    "in part": "can be judged only in part at one seed alone: some of their parts carry an error of their own at "
               "each seed, which one run has too, and the others have no error but the spread over seeds, which "
               "one run does not have, so one run could not have decided them whole",
    "no error alone": "cannot be judged at one seed alone: no part of them has an error but the spread over seeds, "
                      "which one run does not have, so one run could not have decided them",
}


ERROR_SOURCE = {"stated": "the error its run file states", "sampled": "the evaluation's sampling error",
                "exact": "an exact test"}  # summary.error_source's keys in words


def parts_alone(v: Verdict) -> str:
    """A claim judged in part at one seed: which parts one run could judge (their error, and at how many seeds
    alone each reproduces) and which it could not."""
    seeds = len(v.single)
    judged = "; ".join(f"{html.escape(p)} ({ERROR_SOURCE[error_source(v, p)]}) reproduces at {n} of {seeds} seeds "
                       "alone" for p, n in v.judged_alone().items())
    return (f"[{html.escape(v.claim.id)}]({v.claim.experiment}.md#{anchor(v.claim.id)}): {judged}; "
            f"no error at one seed: {', '.join(map(html.escape, v.errorless_alone()))}")


def seed_noise(site, verdicts: list[Verdict]) -> str:
    """Which single-run claims survive seed noise: the claims computed at several seeds, grouped by how many
    seeds alone would have given each its verdict, each group split by the verdict on the mean; then the others,
    counted by why no seed alone judged them."""
    seeded = [v for v in verdicts if v.survives()]
    if not seeded:
        return (f"These results hold one seed per run ({', '.join(map(str, site.seeds()))}), so they cannot say "
                f"which of the chapter's single-run claims survive seed noise{elsewhere(site)}.\n")
    counts = sorted({len(v.single) for v in seeded})  # an experiment whose seeds wait for its second look has fewer
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    out = [f"{len(seeded)} claims read runs trained at {n} seeds. The chapter made each from one run; here each "
           "was also judged at every seed alone, as a single run would have been:\n"]
    for key, by_verdict in by_survival(seeded).items():
        listed = "; ".join(f"{k}: " + ", ".join(linked(v) for v in vs) for k, vs in by_verdict.items())
        group = [v for vs in by_verdict.values() for v in vs]
        out.append(f"- **{len(group)}** {SURVIVAL[key]}. Their verdict on the mean over seeds: {listed}.")
        if key == "in part":
            out += [f"    - {parts_alone(v)}." for v in group]
    others = [v for v in verdicts if not v.survives()]
    if others:
        out.append("\n" + unseeded(site, others))
    return "\n".join(out) + "\n"


def linked(v: Verdict) -> str:
    return f"[{html.escape(v.claim.id)}]({v.claim.experiment}.md#{anchor(v.claim.id)})" + (f" ({OURS})" if v.claim.ours else "")


UNSEEDED = {  # summary.why_unseeded() -> the words for claims no seed alone judged
    "computed": "computed (counts and arithmetic), which no seed moves",
    "descriptive": "descriptive (shown, tested by nothing)",
    "pooled": "from one analysis that trained its models at {} seeds and states only their mean and its error "
              "(no seed judged alone)",
    "once": "from run files made once, {}",
    "no value": "with no value to judge (not run, or diverged)",
}


def filled(key: str, seeds: list[int]) -> str:
    """What fills an UNSEEDED blank: the seeds summary.why_unseeded names, counted or listed."""
    return str(len(seeds)) if key == "pooled" else (at_seeds(seeds) or "no seed recorded") if key == "once" else ""


def unseeded(site, verdicts: list[Verdict]) -> str:
    """The claims no seed alone judged, counted by why, each group listed."""
    groups: dict[tuple, list[Verdict]] = {}
    for v in verdicts:
        key, seeds = why_unseeded(v, site.res)
        groups.setdefault((key, filled(key, seeds)), []).append(v)
    order = list(UNSEEDED)
    lines = [f"- **{len(vs)}** {UNSEEDED[key].format(blank)}: {', '.join(linked(v) for v in vs)}."
             for (key, blank), vs in sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1]))]
    return f"The other {len(verdicts)} claims are not judged seed by seed:\n\n" + "\n".join(lines)


def elsewhere(site) -> str:
    """Where results of several seeds are, for a site whose runs have one: the version of record's count (from
    its run files), where it has more; '' else."""
    record = site.latest()
    n = site.seeds_of(record) if record and record != (site.manifest or {}).get("version") else None
    return f"; the version of record ({html.escape(record)}) was trained at {n} seeds" if n and n > 1 else ""


def blocks(site) -> dict[str, str]:
    titles = {e.name: e.title for e in registry.load()}
    summary = "; ".join(f"{WHOSE[w]}: " + overview.headline(
        site, group, lambda vs, w=w: by_kind(vs, "findings" if w == "ours" else "claims", bold=True))
        for w, group in by_whose(site.verdicts).items())
    larger = site.larger()
    columns = COLUMNS
    if larger:
        record = next(iter(larger.values())).record["profile"]
        columns = [*COLUMNS[:4], (f"at {budget.budget_words(next(iter(larger.values())).above)}", "value"),
                   (f"ours at {record} (± SE)", "value"), (f"{record} verdict", "verdict"), COLUMNS[-1]]
    table = cards_table("dashboard budget" if larger else "dashboard", columns,
                        [row(site, v, titles) for v in site.verdicts])
    return {"summary": summary or "no claims registered", "filters": controls(site.verdicts, titles),
            "budget": budget.tally(larger, frozenset(v.claim.id for v in site.verdicts if v.claim.ours)) + "\n",
            "seed_noise": seed_noise(site, site.verdicts),
            "table": table + "\n" + SCRIPT}
