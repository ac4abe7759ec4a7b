"""E3 without training (C3.1-C3.3): score variance, effective tokens and saturation of a fresh softmax."""
from __future__ import annotations

import math

import altair as alt
import pandas as pd

from attnlab.report import charts
from attnlab.stats import t95
from attnlab.report.format import chart, md_table, num
from attnlab.stats import Estimate, side
from attnlab.report.context import experiment_page

NAME = "scores"
DIVISION = alt.Scale(domain=["divided by √d_k", "undivided"], range=["#1f77b4", "#d62728"])


def variance_table(e3: dict, chapter: dict) -> pd.DataFrame:
    rows = [{**r, "chapter": chapter.get(f"var_d{r['d']}")} for r in e3["variance"]]
    return pd.DataFrame(rows)


def variance_chart(e3: dict, chapter: dict) -> dict:
    """Var(q.k) against d on log-log axes, with the line Var = d the theory predicts."""
    points = [{"d": r["d"], "variance": r["var"], "source": "reproduced", "z": r["z"]} for r in e3["variance"]]
    points += [{"d": r["d"], "variance": chapter[f"var_d{r['d']}"], "source": "chapter", "z": None}
               for r in e3["variance"] if chapter.get(f"var_d{r['d']}") is not None]
    theory = pd.DataFrame({"d": [r["d"] for r in e3["variance"]]}).assign(variance=lambda t: t["d"])
    x = alt.X("d:Q", title="width d", scale=alt.Scale(type="log", base=2))
    y = alt.Y("variance:Q", title="Var(q·k)", scale=alt.Scale(type="log"))
    line = alt.Chart(theory).mark_line(color="#999", strokeDash=[4, 3]).encode(x=x, y=y)
    dots = alt.Chart(pd.DataFrame(points)).mark_point(filled=True, opacity=0.85).encode(
        x=x, y=y,  # the chapter's smaller mark on top, so that a reproduced point on it still shows
        size=alt.Size("source:N", scale=alt.Scale(domain=["reproduced", "chapter"], range=[160, 45]), legend=None),
        color=alt.Color("source:N", scale=alt.Scale(domain=["reproduced", "chapter"], range=["#1f77b4", "#d62728"]),
                        title=None),
        shape=alt.Shape("source:N", scale=alt.Scale(domain=["reproduced", "chapter"], range=["circle", "diamond"]),
                        title=None),
        tooltip=["source", "d", alt.Tooltip("variance:Q", format=".3f"), alt.Tooltip("z:Q", format=".2f")],
    )
    return alt.layer(line, dots).properties(
        width=420, height=300, title="Variance of q·k against width (dashed: Var = d)").to_dict()


def effective_chart(e3: dict) -> dict:
    """Mean effective tokens per row against d_k, divided and undivided, out of n_keys."""
    long = pd.DataFrame([{"d_k": r["d_k"], "division": label, "tokens": r[key]}
                         for r in e3["effective_tokens"]
                         for key, label in (("divided_mean", "divided by √d_k"), ("undivided_mean", "undivided"))])
    return alt.Chart(long, title=f"Effective tokens of a {e3['n_keys']}-key softmax row (mean of "
                                 f"{e3['n_rows']:,} rows)").mark_line(point=True).encode(
        x=alt.X("d_k:Q", title="d_k", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("tokens:Q", title="exp(entropy), log scale", scale=alt.Scale(type="log", domain=[1, e3["n_keys"]])),
        color=alt.Color("division:N", scale=DIVISION, title=None),
        tooltip=["division", "d_k", alt.Tooltip("tokens:Q", format=".2f")],
    ).properties(width=420, height=280).to_dict()


def saturation_chart(e3: dict, chapter: dict) -> dict:
    """Two panels against d_k: mean Jacobian mass 1 - sum w^2, and the fraction of frozen rows."""
    long = pd.DataFrame([{"d_k": r["d_k"], "division": label, "mass": r[f"mass_{key}"], "frozen": r[f"frozen_{key}"]}
                         for r in e3["saturation"]
                         for key, label in (("divided", "divided by √d_k"), ("undivided", "undivided"))])
    x = alt.X("d_k:Q", title="d_k", scale=alt.Scale(type="log", base=2),
              axis=alt.Axis(values=sorted(set(long["d_k"]))))
    color = alt.Color("division:N", scale=DIVISION, title=None)
    base = alt.Chart(long).mark_line(point=True).encode(x=x, color=color)
    reference = charts.reference_line(e3["mass_reference"], "1 − e/64", "mass")
    mass = alt.layer(base.encode(y=alt.Y("mass:Q", title="Jacobian mass 1 − Σw² (mean)", scale=alt.Scale(
        domain=[0, 1])), tooltip=["division", "d_k", alt.Tooltip("mass:Q", format=".4f")]), reference).properties(
        width=220, height=240, title="Jacobian mass (dashed: 1 − e/64)")
    frozen_layers = [base.encode(y=alt.Y("frozen:Q", title="fraction of rows frozen", scale=alt.Scale(domain=[0, 1])),
                                 tooltip=["division", "d_k", alt.Tooltip("frozen:Q", format=".3f")])]
    if chapter.get("frozen_undivided_1024") is not None:
        frozen_layers.append(alt.Chart(pd.DataFrame([{"d_k": 1024, "frozen": chapter["frozen_undivided_1024"],
                                                      "source": "chapter"}])).mark_point(
            shape="diamond", size=110, color="#444", filled=True).encode(
            x=x, y="frozen:Q", tooltip=["source", "d_k", "frozen"]))
    frozen = alt.layer(*frozen_layers).properties(width=220, height=240,
                                                  title="Frozen rows (diamond: the chapter's 7 in 10)")
    return alt.hconcat(mass, frozen).configure_legend(orient="bottom").to_dict()


def variance_reading(e3: dict) -> str:
    """Whether each width's variance matches d: its interval (± k·SE, normal) against d, the widths where it
    does not named."""
    rows, k = e3["variance"], t95(math.inf)
    away = [f"d = {r['d']} ({where} d)" for r in e3["variance"]
            if (where := side(Estimate(r["var"], r["se_var"]), r["d"])) in ("above", "below")]
    if not away:
        return f"At every width the measured variance equals d within the noise (|z| ≤ {k:.2f}, 95 %)."
    rest = "" if len(away) == len(rows) else "; at the other widths it equals d within the noise"
    return f"Beyond the noise (|z| > {k:.2f}, 95 %) the variance is off d at {', '.join(away)}{rest}."


def between(values: list[float], digits: int) -> str:
    """'is 0.000 at every d_k' or 'lies between 40.12 and 42.19 at every d_k'."""
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return f"is {lo} at every d_k" if lo == hi else f"lies between {lo} and {hi} at every d_k"


def goes(rows: list[dict], key: str, x: str, digits: int) -> str:
    """'goes from 21.33 at 4 to 1.18 at 1024': a column's first and last value along the widths."""
    first, last = rows[0], rows[-1]
    return f"goes from {first[key]:.{digits}f} at {first[x]} to {last[key]:.{digits}f} at {last[x]}"


def effective_reading(e3: dict) -> str:
    """The effective-tokens table in words: the undivided mean and the share of near one-hot rows along d_k, the
    divided mean's range, and at how many widths the undivided mean lies above the median in these rows."""
    rows = e3["effective_tokens"]
    divided = [r["divided_mean"] for r in rows]
    above = [r["d_k"] for r in rows if r["undivided_mean"] > r["undivided_median"]]
    text = (f"Undivided, the mean number of effective tokens {goes(rows, 'undivided_mean', 'd_k', 2)}, and the "
            f"share of rows under 1.5 tokens {goes(rows, 'undivided_frac_below_1_5', 'd_k', 3)}; divided, the mean "
            f"(of {e3['n_keys']} keys) {between(divided, 2)}.")
    if above:
        where = "every d_k" if len(above) == len(rows) else "d_k = " + ", ".join(map(str, above))
        text += (f" In these {e3['n_rows']:,} rows the undivided mean lies above the median at {where}: a few rows "
                 "whose largest scores land close together share their weight between two or three keys and pull "
                 "the mean up.")
    return text + "\n"


def saturation_reading(e3: dict) -> str:
    """The saturation table in words: the divided mass's range against its reference, the undivided mass and the
    share of frozen rows along d_k."""
    rows = e3["saturation"]
    divided = [r["mass_divided"] for r in rows]
    return (f"Divided, the mass {between(divided, 4)} (the reference 1 − e/64 ≈ {e3['mass_reference']:.4f}), and "
            f"the share of frozen rows {between([r['frozen_divided'] for r in rows], 3)}. "
            f"Undivided, the mass {goes(rows, 'mass_undivided', 'd_k', 4)}, and the share of frozen rows "
            f"{goes(rows, 'frozen_undivided', 'd_k', 3)}.\n")


def render(ctx) -> dict[str, str]:
    site, e3, out = ctx.site, ctx.result, {}

    c31, c33 = site.chapter_parts("C3.1"), site.chapter_parts("C3.3")
    out["settings"] = (f"{e3['n_pairs']:,} pairs per width for the variance; {e3['n_rows']:,} rows of "
                       f"{e3['n_keys']} keys per d_k for the softmax rows; seed {e3['seed']}.")
    out["se_method"] = f"*The standard error and z:* {e3['se_method']}"
    out["frozen_definition"] = f"**When a row counts as frozen.** {e3['frozen_definition']}"

    out["variance_table"] = md_table(variance_table(e3, c31), {
        "d": "d", "var": "Var(q·k)", "chapter": "chapter Var", "std": "std", "sqrt_d": "√d",
        "se_var": "standard error", "z": "z = (Var − d)/se"},
        {"var": num(3), "chapter": num(3), "std": num(3), "sqrt_d": num(0), "se_var": num(3), "z": num(2)})
    out["variance_chart"] = chart("chart-e3-variance", variance_chart(e3, c31))
    out["variance_reading"] = variance_reading(e3)
    out["effective_reading"] = effective_reading(e3)
    out["saturation_reading"] = saturation_reading(e3)

    out["effective_table"] = md_table(pd.DataFrame(e3["effective_tokens"]), {
        "d_k": "d_k", "divided_mean": "divided: mean", "undivided_mean": "undivided: mean",
        "undivided_median": "undivided: median", "undivided_frac_below_1_5": "undivided: rows < 1.5 tokens"},
        {"divided_mean": num(2), "undivided_mean": num(2), "undivided_median": num(3),
         "undivided_frac_below_1_5": num(3)})
    out["effective_chart"] = chart("chart-e3-effective", effective_chart(e3))

    out["saturation_table"] = md_table(pd.DataFrame(e3["saturation"]), {
        "d_k": "d_k", "mass_divided": "mass, divided", "mass_undivided": "mass, undivided",
        "frozen_divided": "frozen, divided", "frozen_undivided": "frozen, undivided",
        "max_weight_gt_0_99_undivided": "undivided: max weight > 0.99"},
        {"mass_divided": num(4), "mass_undivided": num(4), "frozen_divided": num(3), "frozen_undivided": num(3),
         "max_weight_gt_0_99_undivided": num(3)})
    out["saturation_chart"] = chart("chart-e3-saturation", saturation_chart(e3, c33))
    return out


blocks = experiment_page(NAME, render)
