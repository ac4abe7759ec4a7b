"""E1 (C1.x): attention as a causal average, written three ways."""
from __future__ import annotations

import pandas as pd

from attnlab.report import charts
from attnlab.report.format import chart, md_table
from attnlab.report.readings import rounding_steps
from attnlab.report.context import experiment_page
from attnlab.experiments.averaging import derive

NAME = "averaging"


def weight(v) -> str:
    return "0" if v == 0 else f"{v:.4f}"


def rounding_reading(e1: dict) -> str:
    """The largest of the three differences in float32 rounding steps (arithmetic on fixed inputs: no noise)."""
    top = derive.largest_difference(e1)
    if top is None:
        return ""
    return ("Here every comparison gives exactly the same numbers." if top == 0 else
            f"Here the largest difference is {top:.3g}, {rounding_steps(top)}.")


def render(ctx) -> dict[str, str]:
    site, e1, out = ctx.site, ctx.result, {}
    ch = {**site.chapter_parts("C1.2"), "shuffle": site.chapter_value("C1.1")}
    diffs = pd.DataFrame([
        ("last row on x vs on x[randperm] (C1.1)", e1.get("shuffle_max_abs_diff"), ch.get("shuffle")),
        ("loop of means vs A @ x (C1.2)", e1.get("loop_vs_matmul_max_abs_diff"), ch.get("loop_vs_matmul")),
        ("loop of means vs softmax(S) @ x (C1.2)", e1.get("loop_vs_softmax_max_abs_diff"), ch.get("loop_vs_softmax")),
        ("−inf mask still −inf in float16 (C1.3)", e1.get("float16_mask_is_inf"), True),
    ], columns=["comparison", "reproduced", "chapter"])
    matrix = derive.matrix(e1)
    return out | {
        "d": f"{e1.get('d')}", "T": f"{e1.get('T')}",
        "rounding_reading": rounding_reading(e1),
        "matrix_table": md_table(matrix, formats={c: weight for c in matrix.columns[1:]}),
        "matrix_chart": chart("chart-matrix", charts.matrix_chart(derive.weights(e1))),
        "diffs_table": md_table(diffs, {"comparison": "comparison", "reproduced": "reproduced (max |diff|)",
                                        "chapter": "chapter"}),
    }


blocks = experiment_page(NAME, render)
