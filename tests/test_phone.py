"""The site of the version of record on a phone (390 px) and a desktop (1280 px), in headless Chromium: each table
of claims keeps its first verdict in view with nothing to scroll (the page, or a box inside it), every chart's
text is drawn at 10 px or more (its font size times the scale CSS draws the chart at), and no number breaks
across lines. One page has its fixes undone, so the measure is shown to catch what it guards against."""
from __future__ import annotations

import pytest

from attnlab.report.build import build_site
from attnlab.report.format import badge, nobreak
from attnlab.report.site import cards_table
from attnlab.versions import latest
from helpers import CHROMIUM, REPO, playwright_or_skip
from dag import LocalSite

WIDTHS = {390: 844, 1280: 900}  # viewport width -> height: a phone, a desktop
# every kind of table and chart layout the site has: the three tables of claims; single, layered, faceted by
# column, row and both, wrapped, hconcat and vconcat charts
PAGES = ["index", "dashboard", "compare", "ladder", "depth", "seq2seq", "scaling", "winograd", "data"]
SMALLEST_TEXT = 10  # px, as drawn

MEASURE = """() => {
  const width = document.documentElement.clientWidth;
  const out = {page: document.documentElement.scrollWidth, width, verdicts: [], charts: [], broken: []};
  function scroller(el) {  // the nearest box that scrolls `el` sideways, if any
    for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible" && a.scrollWidth > a.clientWidth + 1) {
        return a.tagName.toLowerCase() + "." + a.className;
      }
    }
    return null;
  }
  for (const table of document.querySelectorAll("table.cards")) {
    const cell = table.querySelector("tbody tr:not([hidden]) td.c-verdict");
    const box = cell && cell.getBoundingClientRect();
    if (!box || box.width === 0) continue;  // in a closed block
    out.verdicts.push({table: table.className, left: box.left, right: box.right, scroller: scroller(cell)});
  }
  for (const chart of document.querySelectorAll(".attnlab-chart")) {
    const svg = chart.querySelector("svg");
    if (!svg || svg.getBoundingClientRect().width === 0) continue;
    const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
    let least = Infinity, text = "";
    for (const t of svg.querySelectorAll("text")) {
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (t.textContent.trim() && px < least) { least = px; text = t.textContent; }
    }
    out.charts.push({id: chart.id, least, text});
  }
  for (const n of document.querySelectorAll("table.cards .num")) {
    if (n.getClientRects().length > 1) out.broken.push(n.textContent);
  }
  return out;
}"""

UNDONE = """/* the layout before: a wide table scrolls in its own box, an svg shrinks to its box */
.md-typeset table.cards { display: block !important; overflow-x: auto !important; }
.md-typeset table.cards thead { display: table-header-group !important; }
.md-typeset table.cards tbody { display: table-row-group !important; }
.md-typeset table.cards tr { display: table-row !important; }
.md-typeset table.cards td { display: table-cell !important; min-width: 6.5em !important; }
.md-typeset table.cards td.c-value { width: 1px !important; }
.md-typeset .num { white-space: normal !important; overflow-wrap: anywhere !important; }
.md-typeset .attnlab-chart svg { max-width: 100% !important; height: auto !important; }"""


def problems(name: str, width: int, m: dict) -> list[str]:
    """What a page measured (MEASURE) shows wrong at `width`, one line each."""
    out = [f"{name} at {width} px: the page is {m['page']} px wide and scrolls sideways"] if m["page"] > width else []
    if not m["verdicts"] and name in ("index", "dashboard", "compare", "ladder"):
        out.append(f"{name} at {width} px: no table of claims found")
    for v in m["verdicts"]:
        if v["right"] > m["width"] + 0.5 or v["left"] < 0 or v["scroller"]:
            out.append(f"{name} at {width} px: the first verdict of table.{v['table']} is at {v['left']:.0f}–"
                       f"{v['right']:.0f} px" + (f", scrolled by {v['scroller']}" if v["scroller"] else ""))
    for c in m["charts"]:
        if c["least"] < SMALLEST_TEXT - 0.05:
            out.append(f"{name} at {width} px: chart {c['id']} draws {c['text']!r} at {c['least']:.1f} px")
    out += [f"{name} at {width} px: the number {n!r} breaks across lines" for n in m["broken"]]
    return out


@pytest.fixture(scope="module")
def record_site(tmp_path_factory):
    """The site of the version of record (results/LATEST), built from its committed run files."""
    version = latest(REPO)
    if version is None:
        pytest.skip("no version is published under results/")
    site = tmp_path_factory.mktemp("record") / "site"
    build_site(REPO / "results" / version, None, None, site)
    return site


def measured(view, url: str) -> dict:
    """A page once every chart is drawn for good (assets/attnlab-charts.js marks it data-fitted)."""
    view.goto(url, wait_until="networkidle")
    view.wait_for_function("() => [...document.querySelectorAll('.attnlab-chart')]"
                           ".every(c => c.hasAttribute('data-fitted'))", timeout=60_000)
    return view.evaluate(MEASURE)


def undone(view, url: str) -> dict:
    """A page as it was before: charts embedded without assets/attnlab-charts.js, and UNDONE's layout."""
    view.route("**/attnlab-charts.js", lambda route: route.fulfill(body="", content_type="text/javascript"))
    view.goto(url, wait_until="networkidle")
    view.add_style_tag(content=UNDONE)
    view.wait_for_function("() => [...document.querySelectorAll('.attnlab-chart')]"
                           ".every(c => c.querySelector('svg'))", timeout=60_000)
    return view.evaluate(MEASURE)


def test_verdicts_in_view_charts_readable_and_numbers_whole_at_390_and_1280_px(record_site):
    sync_api = playwright_or_skip()
    server, found, counts = LocalSite(record_site), [], {}
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM))
            for width, height in WIDTHS.items():
                view = browser.new_page(viewport={"width": width, "height": height})
                for name in PAGES:
                    m = measured(view, server.url + f"{name}.html")
                    counts[name, width] = (len(m["verdicts"]), len(m["charts"]))
                    found += problems(name, width, m)
                view.close()
            phone = browser.new_page(viewport={"width": 390, "height": 844})
            before = problems("ladder (fixes undone)", 390, undone(phone, server.url + "ladder.html"))
            browser.close()
    finally:
        server.close()
    assert not found, "\n".join(found)
    assert all(counts[name, w][1] >= 2 for name in ("ladder", "depth", "seq2seq") for w in WIDTHS), counts
    # the measure catches each thing it guards against: with the fixes undone, the verdict scrolls in its box,
    # chart text shrinks and a number breaks
    assert any("scrolled by table" in line for line in before), before
    assert any("draws" in line for line in before), before
    assert any("breaks across lines" in line for line in before), before


def test_a_number_and_its_error_are_kept_whole_and_nothing_else_is_touched():
    assert nobreak("0.4409\u00a0±\u00a00.009089") == '<span class="num">0.4409\u00a0±\u00a00.009089</span>'
    marked = nobreak('<span title="seed 1337: 0.44">C2.1 &#x27;L4&#39; -3e-07 (within the noise), 1,234.5</span>')
    assert marked == ('<span title="seed 1337: 0.44">C2.1 &#x27;L4&#39; <span class="num">-3e-07</span> (within the '
                      'noise), <span class="num">1,234.5</span></span>')  # no id, entity or attribute split
    assert nobreak("2026-12-02-chapter-cpu-680862e at 4303899b35ad") == "2026-12-02-chapter-cpu-680862e at 4303899b35ad"


def test_a_claims_table_labels_each_value_with_its_column_and_refuses_an_unknown_role():
    columns = [("claim", "id"), ("ours (± SE)", "value"), ("verdict", "verdict")]
    table = cards_table("verdicts", columns, [('data-verdict="reproduced"', ["C1.1", "1.5\u00a0±\u00a00.2",
                                                                             badge("reproduced")]),
                                              ("", ["C1.2", '<td class="none">–</td>', "2 of 3"])])
    assert table.startswith('<table class="cards verdicts"><thead><tr><th class="c-id">claim</th>')
    assert ('<tr data-verdict="reproduced"><td class="c-id" data-label="claim">C1.1</td><td class="c-value" '
            'data-label="ours (± SE)"><span class="num">1.5\u00a0±\u00a00.2</span></td>') in table
    assert '<td class="none">–</td><td class="c-verdict" data-label="verdict">2 of 3</td>' in table  # kept as given
    with pytest.raises(ValueError, match=r"unknown column role \['wide'\]"):
        cards_table("verdicts", [("claim", "wide")], [])
