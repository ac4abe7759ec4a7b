"""The chart checks themselves (tests/charts.py): a panel drawing another panel's rows, a bounded measure drawn
outside [0, 1], and what a reader can read (legends, series, axes, text), each fed a broken chart; every chart of
the smoke site goes through the first in test_workflow.py, every chart of the version of record through all here."""
from __future__ import annotations

import os
from pathlib import Path

import altair as alt
import pandas as pd
import pytest

from charts import faceted_and_described, png, problems

ROWS = pd.DataFrame({"panel": ["a", "a", "b", "b"], "x": [1, 2, 1, 2], "share": [0.1, 0.2, 0.7, 0.9]})


def faceted(own_data: bool, rows: pd.DataFrame = ROWS) -> dict:
    enc = dict(x="x:Q", y="share:Q", tooltip=["panel", "x", "share"])
    line = alt.Chart().mark_line().encode(**enc)
    dots = (alt.Chart(rows.assign(mark="dot")) if own_data else alt.Chart()).mark_point().encode(**enc)
    return alt.layer(line, dots, data=rows).facet(row="panel:N").to_dict()


def test_a_facet_layer_with_its_own_data_draws_other_panels_rows():
    found = problems("bad", faceted(own_data=True))
    assert any("bring their own data" in p for p in found)
    assert any("panel 1 holds rows of 2 values of panel" in p for p in found), found


def test_a_facet_whose_layers_share_its_data_draws_each_panel_alone():
    spec = faceted(own_data=False)
    assert problems("good", spec) == [] and faceted_and_described(spec)


@pytest.mark.parametrize("share, bad", [(1.4, True), (-0.2, True), (1.0, False), (0.0, False)])
def test_a_share_is_drawn_inside_zero_to_one(share, bad):
    rows = ROWS.assign(share=[0.1, 0.2, 0.5, share])
    assert any("outside [0, 1]" in p for p in problems("s", faceted(False, rows))) == bad


# ---- what a reader can read (issue 30): each check over a broken chart and its mended twin --------------------

from attnlab.report import charts as report_charts  # noqa: E402
from charts import (axis_problems, legend_problems, legends, readability_problems, scene_items,  # noqa: E402
                    series_problems, text_problems, chart_width, version_charts)

SERIES = pd.DataFrame({"x": [1, 2, 3] * 4, "y": [1, 2, 3, 2, 3, 4, 1.2, 2.2, 3.2, 2.3, 3.3, 4.3],
                       "run": ["a"] * 3 + ["b"] * 3 + ["a"] * 3 + ["b"] * 3,
                       "mode": ["cache"] * 6 + ["recompute"] * 6})


def check(spec: dict, *checks) -> list[str]:
    items = scene_items(spec)
    return [p for c in checks for p in c("chart", items)]


def test_a_dash_legend_of_dots_is_caught_and_one_of_strokes_is_not():
    dots = alt.Chart(SERIES).mark_line(point=True).encode(x="x:Q", y="y:Q", color="run:N",
                                                          strokeDash="mode:N").to_dict()
    assert any("drawn alike" in p for p in check(dots, legend_problems)), "a legend of identical dots passed"
    base = alt.Chart(SERIES).encode(x="x:Q", y="y:Q", color="run:N")
    dash = alt.StrokeDash("mode:N", legend=report_charts.line_legend())
    strokes = alt.layer(base.mark_line().encode(strokeDash=dash),
                        base.mark_point(filled=True)).to_dict()
    assert check(strokes, legend_problems) == []


@pytest.mark.parametrize("own_legend, faint", [(True, True), (False, False)])
def test_a_legend_swatch_in_a_bands_colour_is_caught(own_legend, faint):
    rows = SERIES[SERIES["mode"] == "cache"].assign(lo=lambda d: d["y"] - 0.2, hi=lambda d: d["y"] + 0.2)
    band = alt.Chart(rows).mark_area(opacity=0.15).encode(
        x="x:Q", y="lo:Q", y2="hi:Q", color=alt.Color("run:N", legend=alt.Legend() if own_legend else None))
    line = alt.Chart(rows).mark_line().encode(x="x:Q", y="y:Q", color="run:N")
    layered = alt.layer(band, line)
    spec = (layered if own_legend else layered.resolve_legend(color="independent")).to_dict()
    found = check(spec, legend_problems)
    assert any("faint" in p for p in found) == faint, found
    assert [label for label, _ in legends(scene_items(spec))[0]] == ["a", "b"]


@pytest.mark.parametrize("offset, hidden", [(0.0, True), (0.5, False)])
def test_a_series_drawn_exactly_under_another_is_caught(offset, hidden):
    rows = pd.DataFrame({"x": [1, 2, 3] * 2, "y": [1, 2, 3, 1 + offset, 2 + offset, 3 + offset],
                         "run": ["under"] * 3 + ["over"] * 3})
    spec = alt.Chart(rows).mark_line(point=True).encode(x="x:Q", y="y:Q", color=alt.Color(
        "run:N", sort=["under", "over"])).properties(width=300, height=200).to_dict()
    found = check(spec, series_problems)
    assert any("'under' is drawn wholly under" in p for p in found) == hidden, found


def test_hollow_marks_in_their_own_shapes_show_both_of_two_equal_series():
    rows = pd.DataFrame({"x": [1, 2, 3] * 2, "y": [1, 2, 3] * 2, "run": ["under"] * 3 + ["over"] * 3})
    base = alt.Chart(rows).encode(x="x:Q", y="y:Q", color=alt.Color("run:N", sort=["under", "over"],
                                                                       scale=alt.Scale(domain=["under", "over"])))
    spec = report_charts.lines_with_marks(base, "run", ["under", "over"]).to_dict()
    assert check(spec, series_problems) == []


def test_a_legend_entry_with_nothing_drawn_is_caught():
    spec = alt.Chart(SERIES).mark_point().encode(x="x:Q", y="y:Q", color=alt.Color(
        "run:N", scale=alt.Scale(domain=["a", "b", "never measured"]))).to_dict()
    assert any("'never measured' but nothing is drawn" in p for p in check(spec, series_problems))


def test_a_reference_line_under_a_data_line_is_caught_and_the_shared_one_shows():
    rows = pd.DataFrame({"x": [1, 2, 3], "y": [2 / 3] * 3})
    line = alt.Chart(rows).mark_line(strokeWidth=2).encode(x="x:Q", y=alt.Y("y:Q", scale=alt.Scale(domain=[0, 1])))
    hidden_rule = alt.Chart(pd.DataFrame({"y": [2 / 3]})).mark_rule(color="#999", strokeDash=[4, 3]).encode(y="y:Q")
    found = check(alt.layer(line, hidden_rule).to_dict(), series_problems)
    assert any("rule" in p and "wholly under" in p for p in found)
    assert check(alt.layer(line, report_charts.reference_line(2 / 3, "2/3", "y")).to_dict(), series_problems) == []


def test_a_rule_on_the_y_axis_is_caught():
    rows = pd.DataFrame({"w": [64, 128, 256], "ppl": [50, 60, 80]})
    x = alt.X("w:Q", scale=alt.Scale(type="log", base=2))
    rule = alt.Chart(pd.DataFrame({"w": [64]})).mark_rule(strokeDash=[4, 4]).encode(x=x)
    assert any("wholly under" in p for p in check(alt.layer(alt.Chart(rows).mark_line().encode(x=x, y="ppl:Q"), rule)
                                                  .to_dict(), series_problems))


@pytest.mark.parametrize("values, short", [([0.1, 0.2, 0.5, 0.9], True), (report_charts.log_ticks(0.1, 1.42), False)])
def test_a_log_axis_with_no_label_at_the_decade_of_its_largest_value_is_caught(values, short):
    rows = pd.DataFrame({"x": [1, 2, 3], "y": [0.1, 0.6, 1.42]})
    spec = alt.Chart(rows).mark_line().encode(x="x:Q", y=alt.Y("y:Q", scale=alt.Scale(type="log", nice=False),
                                                                 axis=alt.Axis(values=values))).to_dict()
    assert any("no label at or above 1" in p for p in check(spec, axis_problems)) == short


@pytest.mark.parametrize("values, short", [([4, 16, 64, 256], True), ([4, 16, 64, 256, 1024], False)])
def test_a_base_2_axis_without_its_last_value_is_caught(values, short):
    rows = pd.DataFrame({"d": [4, 16, 64, 256, 1024], "v": [1, 2, 3, 4, 5]})
    spec = alt.Chart(rows).mark_line().encode(x=alt.X("d:Q", scale=alt.Scale(type="log", base=2),
                                                      axis=alt.Axis(values=values)), y="v:Q").to_dict()
    assert any("no label at or above 1000" in p for p in check(spec, axis_problems)) == short


@pytest.mark.parametrize("flush, collide", [(True, True), (False, False)])
def test_colliding_tick_labels_are_caught(flush, collide):
    rows = pd.DataFrame({"model": ["a", "b"], "speed": [39_000, 51_500]})
    spec = alt.Chart(rows).mark_bar().encode(
        x=alt.X("speed:Q", axis=alt.Axis(labelFlush=flush, tickCount=12 if flush else 6)), y="model:N").properties(
        width=520).to_dict()
    assert any("collide" in p for p in check(spec, axis_problems)) == collide


@pytest.mark.parametrize("size, width, small", [(7, 300, True), (10, 900, True), (10, 300, False)])
def test_text_under_ten_pixels_on_a_1280_px_page_is_caught(size, width, small):
    spec = alt.Chart(SERIES).mark_point().encode(x="x:Q", y="y:Q").properties(width=width).configure_axis(
        labelFontSize=size).to_dict()
    found = text_problems("chart", scene_items(spec), chart_width(spec))
    assert any("under 10 px" in p for p in found) == small, found


def test_fit_page_brings_a_wide_chart_to_the_page_width():
    wide = alt.Chart(SERIES).mark_point().encode(x="x:Q", y="y:Q", color="run:N").properties(width=900).to_dict()
    assert chart_width(wide) > 650 and chart_width(report_charts.fit_page(wide)) <= 650


@pytest.mark.parametrize("limit, cut", [(None, True), (0, False)])
def test_a_legend_label_cut_off_is_caught(limit, cut):
    rows = SERIES.assign(part=SERIES["run"].map({"a": "projections and reshapes (rest of the layer)", "b": "core"}))
    legend = alt.Legend() if limit is None else alt.Legend(labelLimit=limit)
    spec = alt.Chart(rows).mark_point().encode(x="x:Q", y="y:Q", color=alt.Color("part:N", legend=legend)).to_dict()
    assert any("cut off" in p for p in text_problems("chart", scene_items(spec), chart_width(spec))) == cut


def test_log_ticks_reach_the_decade_of_the_largest_value():
    assert report_charts.log_ticks(0.085, 1.42) == [0.1, 0.2, 0.5, 1.0]
    assert report_charts.log_ticks(3, 450) == [5.0, 10.0, 20.0, 50.0, 100.0, 200.0]


REPO = Path(__file__).resolve().parents[1]
RECORD = (REPO / "results" / "LATEST").read_text().strip()


def test_every_chart_of_the_version_of_record_reads_at_1280_px(tmp_path):
    """Every chart the site of the version of record draws (results/LATEST, real data; its pages rendered without
    mkdocs): legends told apart, every series and reference line in view, log and linear axes labelled over their
    data, no tick labels colliding, no text under 10 px on a 1280-px page, no label cut off. The PNGs land in
    $ATTNLAB_CHARTS (else this test's folder) to look at."""
    specs = version_charts(REPO / "results" / RECORD, None)
    assert len(specs) >= 40, sorted(specs)
    folder = Path(os.environ.get("ATTNLAB_CHARTS") or tmp_path / "charts")
    found = []
    for name, spec in specs.items():
        found += readability_problems(name, spec)
        if os.environ.get("ATTNLAB_CHARTS"):
            png(spec, folder / (name.replace("/", "_").replace("#", "-") + ".png"))
    assert not found, "\n".join(found)


def test_a_dash_legend_of_one_entry_is_not_taken_for_a_colour_with_nothing_drawn():
    rows = SERIES[SERIES["mode"] == "cache"]
    base = alt.Chart(rows).encode(x="x:Q", y="y:Q", color="run:N")
    spec = alt.layer(base.mark_line().encode(strokeDash=alt.StrokeDash("mode:N", legend=report_charts.line_legend())),
                     base.mark_point(filled=True)).to_dict()
    assert check(spec, legend_problems, series_problems) == []
