"""Every experiment's charts as files, for the Snakemake report (`snakemake --report`, workflow/rules/report.smk).

The charts are the ones the site's pages draw: each experiment's page module makes its blocks, and every chart in
them (report/format.py's `chart`) is written as <out>/<experiment>/<chart id>.svg, drawn offline by vl-convert;
every attention viewer in them (report/viewer_widget.py) as <out>/<experiment>/<viewer id>.html, a page of its own.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import vl_convert

from attnlab import registry
from attnlab.report.build import DOCS, page_blocks, swap_in
from attnlab.report.format import charts_in
from attnlab.report.site import Site
from attnlab.report.viewer_widget import standalone, viewers_in


def write_figures(site: Site, out: Path) -> dict[str, list[Path]]:
    """Write every experiment's charts and viewers under `out` (replaced whole); experiment -> the files written."""
    building, written = out.with_name(out.name + ".building"), {}
    shutil.rmtree(building, ignore_errors=True)  # a failed attempt's
    for e in registry.load():
        folder = building / e.name
        folder.mkdir(parents=True)
        markup = "\n".join(page_blocks(site, f"{e.name}.md").values())
        for chart_id, spec in charts_in(markup).items():
            (folder / f"{chart_id}.svg").write_text(vl_convert.vegalite_to_svg(spec))
        for viewer_id, fragment in viewers_in(markup).items():
            (folder / f"{viewer_id}.html").write_text(standalone(fragment, DOCS / "assets"))
        written[e.name] = sorted(out / p.relative_to(building) for p in folder.iterdir())
    swap_in(building, out)
    return written
