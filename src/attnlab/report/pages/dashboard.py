"""Every claim of the chapter and the survey on one page: the source's value, ours, the verdict, where it comes
from (version, hardware) and a link to the claim on its experiment's page; filterable by verdict and experiment
(plain JavaScript, no library: the page works opened from disk)."""
from __future__ import annotations

import html
from collections import Counter

from attnlab import registry
from attnlab.report.format import badge
from attnlab.report.page import anchor, parts_cell
from attnlab.report.verdicts import VERDICTS, Verdict
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


def row(site, v: Verdict, titles: dict[str, str]) -> str:
    c = v.claim
    why = f'<div class="why">{html.escape(v.note)}</div>' if v.verdict in ("not run", "diverged") and v.note else ""
    return (f'<tr data-verdict="{html.escape(v.verdict)}" data-experiment="{html.escape(c.experiment)}">'
            f'<td><a href="{c.experiment}.html#{anchor(c.id)}">{html.escape(c.id)}</a></td>'
            f"<td>{html.escape(titles.get(c.experiment, c.experiment))}</td>"
            f"<td>{html.escape(c.claim)}</td><td>{parts_cell(c.chapter_value)}</td><td>{parts_cell(v.shown())}</td>"
            f"<td>{badge(v.verdict)}{why}</td><td>{where(site, v)}</td></tr>")


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


def blocks(site) -> dict[str, str]:
    titles = {e.name: e.title for e in registry.load()}
    counts = Counter((source(v.claim.id), v.verdict) for v in site.verdicts)
    summary = "; ".join(
        f"the {src}'s {sum(n for (s, _), n in counts.items() if s == src)} claims: "
        + ", ".join(f"**{counts[(src, k)]}** {k}" for k in VERDICTS if counts[(src, k)])
        for src in ("chapter", "survey") if any(s == src for s, _ in counts))
    table = ('<table class="dashboard"><thead><tr><th>claim</th><th>experiment</th><th>what it says</th>'
             "<th>source</th><th>ours</th><th>verdict</th><th>from</th></tr></thead><tbody>"
             + "".join(row(site, v, titles) for v in site.verdicts) + "</tbody></table>")
    return {"summary": summary or "no claims registered", "filters": controls(site.verdicts, titles),
            "table": table + "\n" + SCRIPT}
