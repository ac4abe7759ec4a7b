"""The chart check itself (tests/charts.py): it must see a panel drawing another panel's rows, and a bounded
measure drawn outside [0, 1]; every chart of the smoke site goes through it in test_workflow.py."""
from __future__ import annotations

import altair as alt
import pandas as pd
import pytest

from charts import faceted_and_described, problems

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
