"""Every claim of the chapter and the survey on one page: the source's value, ours, the verdict, where it comes
from (version, hardware) and a link to the claim on its experiment's page; filterable by verdict and experiment
(plain JavaScript, no library: the page works opened from disk)."""
from __future__ import annotations

import html
from collections import Counter

from attnlab import registry
from attnlab.report import budget
from attnlab.report.format import badge
from attnlab.report.pages import index as overview
from attnlab.report.site import alone, anchor, cards_table, parts_cell, reproduced_cell, why_not
from attnlab.report.verdicts import Verdict
from attnlab.runfiles import VERDICTS
from attnlab.versions import hardware


def source(claim_id: str) -> str:
    return "survey" if claim_id.startswith("S") else "chapter"


def where(site, v: Verdict) -> str:
    """The results a verdict comes from: the version (or the unpublished folder) and the hardware its run files
    were made on ('–' where none of them has run)."""
    prov = site.res.provenance()
    files = [site.res.path(f) for f in sorted(v.claim.files)] + [site.res.path(r) for r in sorted(v.claim.rows)]
    made = {f: prov[f] for f in files if f in prov}
    if not made:
        return "–"
    results = site.manifest["version"] if site.manifest else f"{site.res.root.name}/"
    return f"{html.escape(results)} · {html.escape(hardware(made))}"


def row(site, v: Verdict, titles: dict[str, str]) -> tuple[str, list[str]]:
    """A claim's row of the dashboard: its attributes (what the filters read) and its cells."""
    c, larger = v.claim, site.larger()
    cells = [f'<a href="{c.experiment}.html#{anchor(c.id)}">{html.escape(c.id)}</a>',
             html.escape(titles.get(c.experiment, c.experiment)), html.escape(c.claim), parts_cell(c.chapter_value),
             reproduced_cell(v), f"{badge(v.verdict)}{why_not(v)}{alone(v)}", where(site, v)]
    if larger:
        cells.append(budget.cell(larger[c.id], (site.manifest or {}).get("version")))
    return (f'data-verdict="{html.escape(v.verdict)}" data-experiment="{html.escape(c.experiment)}" '
            f'data-kind="{c.kind}"', cells)


COLUMNS = [("claim", "id"), ("experiment", "aside"), ("what it says", "text"), ("source", "value"),
           ("ours (± SE)", "value"), ("verdict", "verdict"), ("from", "aside")]


def controls(verdicts: list[Verdict], titles: dict[str, str]) -> str:
    counts = Counter(v.verdict for v in verdicts)
    by_verdict = "".join(f'<option value="{k}">{k} ({counts[k]})</option>' for k in VERDICTS if counts[k])
    used = dict.fromkeys(v.claim.experiment for v in verdicts)
    by_experiment = "".join(f'<option value="{html.escape(e)}">{html.escape(titles.get(e, e))}</option>'
                            for e in used)
    return ('<div class="dashboard-filters">'
            '<label>verdict <select id="dashboard-verdict"><option value="">all</option>'
            f"{by_verdict}</select></label> "
            '<label>experiment <select id="dashboard-experiment"><option value="">all</option>'
            f"{by_experiment}</select></label> "
            '<span id="dashboard-count" aria-live="polite"></span></div>')


SCRIPT = """<script>
(function () {
  var verdict = document.getElementById("dashboard-verdict");
  var experiment = document.getElementById("dashboard-experiment");
  var rows = document.querySelectorAll("table.dashboard tbody tr");
  function filter() {
    var shown = 0;
    rows.forEach(function (r) {
      var on = (!verdict.value || r.dataset.verdict === verdict.value) &&
               (!experiment.value || r.dataset.experiment === experiment.value);
      r.hidden = !on;
      if (on) shown++;
    });
    document.getElementById("dashboard-count").textContent = shown + " of " + rows.length + " claims";
  }
  verdict.addEventListener("change", filter);
  experiment.addEventListener("change", filter);
  filter();
})();
</script>"""


SURVIVAL = {  # Verdict.survives() -> what it says of a claim the chapter made from one run (the seeds alone, not
    # the mean, whose verdict each group lists beside it)
    "every seed": "reproduce at every seed alone: one run would have found them, whichever seed it drew",
    "some seeds": "reproduce at some seeds alone and not at others: one run would have found them or missed them, "
                  "depending on the seed it drew",
    "no seed": "reproduce at no seed alone: one run would have missed them, whichever seed it drew",
    "no error alone": "cannot be judged at one seed alone: their only error is the spread over seeds, which one "
                      "run does not have, so one run could not have decided them",
}


def seed_noise(site, verdicts: list[Verdict]) -> str:
    """Which single-run claims survive seed noise: the claims computed at several seeds, grouped by how many
    seeds alone would have given each its verdict, each group split by the verdict on the mean."""
    seeded = [v for v in verdicts if v.survives()]
    if not seeded:
        seeds = site.config.get("seeds") or [site.config.get("seed")]
        return (f"These results hold one seed per run ({', '.join(map(str, seeds))}), so they cannot say which of "
                "the chapter's single-run claims survive seed noise; the quick and chapter profiles train at "
                "three.\n")
    n = max(len(v.single) for v in seeded)
    out = [f"{len(seeded)} claims read runs trained at {n} seeds. The chapter made each from one run; here each "
           "was also judged at every seed alone, as a single run would have been:\n"]
    for key, text in SURVIVAL.items():
        group = [v for v in seeded if v.survives() == key]
        if not group:
            continue
        by_verdict = {k: [v for v in group if v.verdict == k] for k in VERDICTS}
        listed = "; ".join(f"{k}: " + ", ".join(
            f"[{html.escape(v.claim.id)}]({v.claim.experiment}.md#{anchor(v.claim.id)})" for v in vs)
            for k, vs in by_verdict.items() if vs)
        out.append(f"- **{len(group)}** {text}. Their verdict on the mean over seeds: {listed}.")
    unseeded = len(verdicts) - len(seeded)
    if unseeded:
        out.append(f"\nThe other {unseeded} claims are computed (counts and arithmetic), read no trained run "
                   "(analyses and benchmarks), or read runs made at one seed.")
    return "\n".join(out) + "\n"


def blocks(site) -> dict[str, str]:
    titles = {e.name: e.title for e in registry.load()}
    summary = "; ".join(f"the {src}'s: " + overview.summary([v for v in site.verdicts if source(v.claim.id) == src])
                        for src in ("chapter", "survey") if any(source(v.claim.id) == src for v in site.verdicts))
    larger = site.larger()
    at = [(f"at {budget.budget_words(next(iter(larger.values())).above)}", "value")] if larger else []
    table = cards_table("dashboard budget" if larger else "dashboard", COLUMNS + at,
                        [row(site, v, titles) for v in site.verdicts])
    return {"summary": summary or "no claims registered", "filters": controls(site.verdicts, titles),
            "budget": budget.tally(larger) + "\n",
            "seed_noise": seed_noise(site, site.verdicts),
            "table": table + "\n" + SCRIPT}
