"""Charts as Vega-Lite specs (plain dicts), drawn with Altair from the tidy tables.

The site embeds each spec inline and renders it with the vendored vega-embed,
so a chart needs no network and no server.
"""
from __future__ import annotations

import math

import altair as alt
import pandas as pd

from attnlab.report.tables import seeds_named

WIDTH = 560
PAGE_WIDTH = 650  # the widest a chart is drawn on a 1280-px page (Material's column); a wider one shrinks, text and all
SOURCE_COLORS = alt.Scale(domain=["reproduced", "chapter"], range=["#1f77b4", "#d62728"])


# A chart carries its rows inline in its page, and a chapter-budget curve holds tens of thousands (E4: 4 runs x 3
# seeds x 1000 steps), past the 5,000-row guard Altair keeps for notebooks. Lifted once for every chart of the
# report: each page module reaches this one (through report.site) before it draws.
alt.data_transformers.disable_max_rows()


def fit_page(spec: dict) -> dict:
    """A single or layered chart laid out to PAGE_WIDTH whole (axes, legend and padding included), so a 1280-px
    page draws it, and its text, at its own size."""
    return {**spec, "width": PAGE_WIDTH, "autosize": {"type": "fit-x", "contains": "padding"}}


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values 1, 2, 5 per decade over [lo, hi], reaching a value at or above the decade of `hi`."""
    out = []
    for decade in range(math.floor(math.log10(lo)), math.floor(math.log10(hi)) + 1):
        out += [m * 10.0 ** decade for m in (1, 2, 5) if lo <= m * 10.0 ** decade <= hi]
    return [float(f"{v:.6g}") for v in out]


def line_legend(title: str | None = None, **more) -> alt.Legend:
    """A legend for a dash (strokeDash) channel: each entry a short stroke in its dash, not a dot."""
    return alt.Legend(title=title, symbolType="stroke", symbolStrokeColor="#333", symbolStrokeWidth=2,
                      symbolSize=400, labelLimit=0, **more)


def reference_line(value: float, label: str, field: str = "value") -> alt.Chart:
    """A horizontal reference at `value` (the chart's title names it): dark, dashed and wider than a data line, so
    it shows where a series runs along it."""
    data = pd.DataFrame({field: [value], "reference": [label]})
    return alt.Chart(data).mark_rule(color="#222", strokeDash=[6, 4], strokeWidth=2.5).encode(
        y=alt.Y(f"{field}:Q"), tooltip=["reference", alt.Tooltip(f"{field}:Q", format=".4f")])


SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "triangle-right", "triangle-left"]


def lines_with_marks(base: alt.Chart, field: str, domain: list[str], **line) -> alt.LayerChart:
    """One line per series of `field`, each point a hollow mark in the series' own shape, so that where two series
    run together both still show."""
    shape = alt.Shape(f"{field}:N", sort=domain, scale=alt.Scale(domain=domain, range=SHAPES[:len(domain)]),
                      title=None)
    return alt.layer(base.mark_line().encode(**line),
                     base.mark_point(filled=False, size=50, strokeWidth=1.5, opacity=1).encode(shape=shape))


VARIANT = "your variant"  # a row the profile adds to a chart of the chapter's rows


def rows_chart(rows: pd.DataFrame, variants=()) -> dict:
    """Validation perplexity per row (a rows's rungs): reproduced (every run row; the mean over seeds, with a line from the
    lowest seed to the highest) beside the chapter (where stated); the rows `variants` names (a reader's own) in a
    colour and shape of their own."""
    order = list(rows["row"])
    mine = rows["row"].isin(list(variants))
    long = pd.concat([
        rows[["row", "description"]].assign(source=mine.map({True: VARIANT, False: "reproduced"}),
                                              val_ppl=rows["val_ppl"]),
        rows[["row", "description"]].assign(source="chapter", val_ppl=rows["chapter_val_ppl"]),
    ]).dropna(subset=["val_ppl"])
    sources = ["reproduced", "chapter", *([VARIANT] if VARIANT in set(long["source"]) else [])]
    x = alt.X("val_ppl:Q", title="validation perplexity", scale=alt.Scale(type="log"))
    y = alt.Y("row:N", sort=order, title=None)
    points = alt.Chart(long).mark_point(size=90, filled=True, opacity=0.85).encode(
        x=x, y=y,
        color=alt.Color("source:N", scale=alt.Scale(domain=sources, range=["#1f77b4", "#d62728", "#2ca02c"][
            :len(sources)]), title=None),
        shape=alt.Shape("source:N", scale=alt.Scale(domain=sources, range=["circle", "diamond", "square"][
            :len(sources)]), title=None),
        tooltip=["row", "description", "source", alt.Tooltip("val_ppl:Q", format=".2f")],
    )
    spreads = [(r, sp) for r, sp in zip(rows["row"], rows.get("val_spread", [])) if sp is not None and sp.sd]
    layers = [points]
    if spreads:
        ranges = pd.DataFrame([{"row": r, "lowest seed": min(sp.values), "highest seed": max(sp.values)}
                               for r, sp in spreads])
        layers.insert(0, alt.Chart(ranges).mark_rule(color="#1f77b4", strokeWidth=2).encode(
            y=y, x=alt.X("lowest seed:Q", scale=alt.Scale(type="log")), x2="highest seed:Q",
            tooltip=["row", alt.Tooltip("lowest seed:Q", format=".2f"), alt.Tooltip("highest seed:Q", format=".2f")]))
    title = "Validation perplexity per rung (log scale; lower is better" + (
        "; line: lowest to highest seed)" if spreads else ")")
    chart = alt.layer(*layers).properties(width=WIDTH, height=28 * max(len(order), 1), title=title)
    return fit_page(chart.to_dict())


def seeds_chart(per_seed: pd.DataFrame, order: list[str], measure: str = "validation perplexity") -> dict:
    """One row per run: a dot for every seed, a line from the lowest to the highest, a tick at the mean."""
    mean = per_seed.groupby("run", as_index=False)["value"].agg(["mean", "min", "max", "count"]).reset_index()
    y = alt.Y("run:N", sort=order, title=None)
    x = alt.X("value:Q", title=measure, scale=alt.Scale(zero=False))
    rule = alt.Chart(mean).mark_rule(color="#888").encode(y=y, x=alt.X("min:Q", title=measure), x2="max:Q")
    tick = alt.Chart(mean).mark_tick(color="#1f77b4", thickness=2, size=18).encode(
        y=y, x="mean:Q", tooltip=["run", alt.Tooltip("mean:Q", format=".2f", title="mean over seeds"),
                                  alt.Tooltip("count:Q", title="seeds")])
    dots = alt.Chart(per_seed).mark_point(size=40, filled=True, opacity=0.6, color="#555").encode(
        y=y, x=x, tooltip=["run", "seed", alt.Tooltip("value:Q", format=".2f", title=measure)])
    chart = alt.layer(rule, dots, tick).properties(
        width=WIDTH, height=24 * max(len(order), 1),
        title=f"{measure.capitalize()} at every seed (dots), their range (line) and mean (tick)")
    return chart.to_dict()


def curves_chart(curves: pd.DataFrame) -> dict:
    """Training and validation loss against step, one line per rung and seed, train and val side by side."""
    order = list(dict.fromkeys(curves["row"]))  # the table's own order
    base = alt.Chart().encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("loss:Q", title="cross-entropy (nats)", scale=alt.Scale(zero=False)),
        color=alt.Color("row:N", sort=order, title="rung"),
        detail="seed:N",
        tooltip=["row", "seed", "split", "step", alt.Tooltip("loss:Q", format=".3f")],
    )
    lines = base.mark_line(strokeWidth=1.2, opacity=0.8)
    dots = base.mark_point(size=18, filled=True).transform_filter(alt.datum.split == "val")
    chart = alt.layer(lines, dots, data=curves).properties(width=WIDTH // 2 - 20, height=260).facet(
        column=alt.Column("split:N", sort=["train", "val"], title=None)
    ).properties(title=f"Loss during training, {seeds_named(curves)}")
    return chart.to_dict()


PARTS = ["embedding", "position", "mixer", "mlp", "norm", "head"]


def params_chart(params: pd.DataFrame) -> dict:
    """Where each rung's parameters sit (embedding, position, mixer, MLP, norm, head)."""
    order = list(dict.fromkeys(params["row"]))  # the table's own order
    parts = [p for p in PARTS if p in set(params["part"])] + sorted(set(params["part"]) - set(PARTS))
    params = params.assign(part_rank=params["part"].map({p: i for i, p in enumerate(parts)}))
    chart = alt.Chart(params, title="Parameters per rung, by part").mark_bar().encode(
        x=alt.X("sum(n_params):Q", title="parameters"),
        y=alt.Y("row:N", sort=order, title=None),
        color=alt.Color("part:N", sort=parts, scale=alt.Scale(domain=parts), title="part"),
        order=alt.Order("part_rank:Q"),
        tooltip=["row", "part", alt.Tooltip("n_params:Q", format=",")],
    ).properties(width=WIDTH, height=24 * max(len(order), 1))
    return fit_page(chart.to_dict())


def split_chart(stats: dict, chapter: dict) -> dict:
    """Token counts (whole stream, train, validation): reproduced beside the chapter's."""
    names = {"n_tokens": "all tokens", "n_train": "train", "n_val": "validation"}
    records = [{"count": names[k], "source": "reproduced", "tokens": stats[k]} for k in names if k in stats]
    records += [{"count": names[k], "source": "chapter", "tokens": chapter[k]} for k in names if k in chapter]
    chart = alt.Chart(pd.DataFrame(records), title="Tokens after BPE").mark_bar().encode(
        x=alt.X("tokens:Q", title="tokens"),
        y=alt.Y("source:N", title=None),
        row=alt.Row("count:N", sort=list(names.values()), title=None),
        color=alt.Color("source:N", scale=SOURCE_COLORS, title=None),
        tooltip=["count", "source", alt.Tooltip("tokens:Q", format=",")],
    ).properties(width=WIDTH - 120, height=50)
    return chart.to_dict()


def matrix_chart(matrix: pd.DataFrame) -> dict:
    """Heat map of the causal averaging matrix, with each weight printed in its cell."""
    base = alt.Chart(matrix, title="Causal averaging matrix A (row t averages positions s ≤ t)").encode(
        x=alt.X("s:O", title="key position s"),
        y=alt.Y("t:O", title="query position t"),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
        tooltip=["t", "s", alt.Tooltip("weight:Q", format=".4f")],
    )
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text("weight:Q", format=".3f"),
        color=alt.condition(alt.datum.weight > 0.5, alt.value("white"), alt.value("black")),
    )
    return alt.layer(cells, text).properties(width=300, height=300).to_dict()


def throughput_chart(speed: pd.DataFrame) -> dict:
    """Training tokens/s of the project's model (at each speed setting measured) beside the plain reference."""
    return fit_page(alt.Chart(speed).mark_bar().encode(
        x=alt.X("tokens/s:Q", title="training tokens per second (median over rounds)",
                axis=alt.Axis(tickCount=6, labelFlush=False)),
        y=alt.Y("model:N", title=None, sort=None, axis=alt.Axis(labelLimit=0)),  # a model's name whole
        tooltip=["model", alt.Tooltip("tokens/s:Q", format=",.0f")],
    ).properties(width=520, height=max(90, 24 * len(speed))).to_dict())
