"""E5 (C5.1-C5.4): four position encodings, trained on one window and read through longer ones."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.experiments.position import derive
from attnlab.experiments.position.derive import ORDER
from attnlab.report.charts import fit_page
from attnlab.report.format import chart, finite, md_table, spread
from attnlab.report.readings import PPL_ERROR, interval, said
from attnlab.stats import Estimate
from attnlab.claims.design import paired
from attnlab.report.context import experiment_page, one_run_then_every

EXPERIMENT = "position"


def length_chart(data: pd.DataFrame, trained: list[float]) -> dict:
    encodings = [e for e in ORDER if e in set(data["encoding"])] + sorted(set(data["encoding"]) - set(ORDER))
    line = alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("window:Q", title="evaluation window (tokens, log scale)",  # padded: a rule at the first window
                scale=alt.Scale(type="log", base=2, padding=24),                 # stays off the y-axis
                axis=alt.Axis(values=sorted(set(data["window"])))),
        y=alt.Y("ppl:Q", title="validation perplexity (log)", scale=alt.Scale(type="log")),
        color=alt.Color("encoding:N", sort=encodings, title="position encoding"),
        tooltip=["run", "encoding", "window", alt.Tooltip("ppl:Q", format=".2f")],
    )
    layers = [line]
    if trained:
        rules = pd.DataFrame({"window": sorted(set(trained)), "label": "trained window"})
        layers.append(alt.Chart(rules).mark_rule(strokeDash=[4, 4], color="#555", strokeWidth=1.5).encode(
            x="window:Q", tooltip=["label", "window"]))
        layers.append(alt.Chart(rules).mark_text(align="left", dx=4, dy=8, fontSize=10, color="#555").encode(
            x="window:Q", y=alt.value(0), text="label:N"))
    return fit_page(alt.layer(*layers).properties(width=480, height=300).to_dict())


def length_reading(data: pd.DataFrame, trained: list[float]) -> str:
    """How to read the chart, from the windows actually evaluated (so it cannot describe a side that is absent)."""
    if data.empty or not trained:
        return ""
    t, seen = derive.trained_window(trained), sorted({int(w) for w in data["window"]})
    shorter, longer = [w for w in seen if w < t], [w for w in seen if w > t]
    text = f"What to look for: the dashed line marks the trained window ({t} tokens)."
    if shorter:
        text += (f" At {', '.join(map(str, shorter))}, left of it, every position was seen in training, and the "
                 "encodings should lie close together.")
    if longer:
        text += (f" At {', '.join(map(str, longer))}, right of it, each line shows how its encoding copes with "
                 "positions (or distances) training never produced: one that generalises stays flat or drops, "
                 "having more context to condition on, and one that does not climbs.")
    else:
        text += " No window longer than the trained one was evaluated, so nothing here tests extrapolation."
    return text + "\n"


def rise_reading(rises: dict[str, Estimate], trained: int, longest: str) -> str:
    """Which encodings' perplexity rose, fell or held from the trained window to the longest, each as a ratio
    with its interval (95 %, over the seeds), a direction said only where that interval clears 1."""
    if not rises:
        return ""
    groups: dict[str, list[str]] = {}
    for enc, e in rises.items():
        words = said(e, of=1.0, above="rises", below="falls", within="holds within the noise",
                     unknown="moves by (one seed, no error to judge a direction by)")
        groups.setdefault(words, []).append(f"{enc} ×{interval(e, 3, signed=False)}")
    said_of = "; ".join(f"{words} for {', '.join(items)}" for words, items in groups.items())
    return (f" Here, from {trained} to {longest} tokens (each seed's ratio, their mean ± k·SE at 95 % with SE "
            f"{PPL_ERROR}), perplexity "
            f"{said_of}.")


def method_words(table: pd.DataFrame, wins: list[str], context) -> dict[str, str]:
    """The page's method sentence, from the runs: the window they trained on (against the profile's context, which
    E5 may set apart) and the windows they were read through, as multiples of it."""
    trained = sorted({int(t) for t in table.get("trained", pd.Series(dtype=float)).dropna()})
    if not trained:
        return {"trained_on": "windows of the length the runs record", "windows_read": "several lengths"}
    shown = " and ".join(", ".join(map(str, trained)).rsplit(", ", 1))
    note = "" if context is None or trained == [context] else f" (E5's own setting; the profile's context is {context})"
    sizes = [w for w in wins if w.replace(".", "", 1).isdigit()]
    multiples = " and ".join(", ".join(f"×{float(w) / trained[0]:g}" for w in sizes).rsplit(", ", 1))
    listed = " and ".join(", ".join(sizes).rsplit(", ", 1))
    return {"trained_on": f"windows of {shown} tokens{note}",
            "windows_read": f"{listed} tokens" + (f" ({multiples} the trained length)" if len(trained) == 1 else "")}


def unrun(ctx) -> dict[str, str]:
    return method_words(derive.runs_table(ctx.site.res), [], None)


def render(ctx) -> dict[str, str]:
    site, out = ctx.site, {}
    table, wins = derive.runs_table(site.res), derive.windows(site.res)
    headers = {"run": "run", "encoding": "encoding", "trained": "trained on", "status": "status",
               **{f"spread_{w}": f"ppl at {w}" for w in wins}, "rise": "longest / trained"}
    formats = {**{f"spread_{w}": spread(2) for w in wins}, "rise": lambda v: f"×{v:.3f}",
               "trained": lambda v: str(int(v))}
    text = md_table(table, headers, formats)
    bad = table[table["status"] != "ok"]
    if len(bad):
        text += "\n\n" + "\n".join(
            f"- **{r['run']}** {r['status']}" + (f" at step {int(r['diverged_at'])}" if finite(r["diverged_at"])
                                                  is not None else "") + ": no perplexity to read at any window."
            for _, r in bad.iterrows())
    out["runs_table"] = text
    data = derive.length_long(site.res, table)
    trained = [float(t) for t in table["trained"].dropna()]
    out["length_chart"] = chart("chart-position-length", length_chart(data, trained)) if len(data) else \
        "_No run recorded perplexities at several windows._"
    out["length_reading"] = length_reading(data, trained)
    t = derive.trained_window(trained)
    if t is not None and wins and float(wins[-1]) > t:
        rises = {enc: paired(at_long, at_trained, how=lambda a, b: a / b)
                 for enc, (at_long, at_trained) in derive.rise_spreads(site.res, table, str(t), wins[-1]).items()}
        out["length_reading"] = out["length_reading"].rstrip("\n") + rise_reading(rises, t, wins[-1]) + "\n"
    out |= method_words(table, wins, (site.config.get("model") or {}).get("context"))
    return out


blocks = experiment_page(EXPERIMENT, render, unrun, rerun=one_run_then_every("E5-alibi", "E5"))
