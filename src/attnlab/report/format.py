"""How values look on the site and in claims.csv: numbers, markdown tables, charts, notices."""
from __future__ import annotations

import json
import math
import re

from attnlab.claims.text import fmt
from attnlab.errors import why_diverged


NOT_RECORDED = "not recorded in this version"  # a field an older version's run file predates


def recorded(record: dict, key: str, show=fmt) -> str:
    """A run file's field as text, or, where the version predates that field, that it did not record it: a page
    reading an older version's files says so instead of failing."""
    return show(record[key]) if isinstance(record, dict) and key in record else NOT_RECORDED


def cell(x) -> str:
    text = fmt(x) if not isinstance(x, str) else x
    return text.replace("|", "\\|").replace("\n", " ")


def breakable(text: str | None) -> str | None:
    """A hash or digest that may break anywhere (attnlab.css: .hash), so that 64 hex digits do not set a narrow
    screen's table wider than the screen."""
    return None if text is None else f'<span class="hash">{text}</span>'


def md_table(df, headers: dict[str, str] | None = None, formats: dict | None = None) -> str:
    """A markdown table; `headers` picks and renames columns, `formats` maps column -> callable. A column whose
    formatter says what its ± is (`spread`: a standard deviation) carries that in its header, unless the header
    already has a ±: a reader never has to guess which error a ± is."""
    import pandas as pd  # here, so that reading claims (at DAG parse time) does not import pandas

    formats = formats or {}
    headers = {col: label if "±" in label or not hasattr(formats.get(col), "plus_minus")
               else f"{label} ({formats[col].plus_minus})" for col, label in (headers or {c: c for c in df.columns}).items()}
    lines = ["| " + " | ".join(cell(h) for h in headers.values()) + " |", "|" + "---|" * len(headers)]
    for _, r in df.iterrows():
        vals = []
        for col in headers:
            v = r[col]
            v = None if v is pd.NA or (isinstance(v, float) and pd.isna(v)) else v
            vals.append(cell(formats[col](v) if col in formats and v is not None else ("–" if v is None else v)))
        lines.append("| " + " | ".join(vals) + " |")
    return "\n".join(lines)


def num(decimals: int):
    return lambda v: f"{v:,.{decimals}f}"


def spread(decimals: int):
    """A formatter for a results.Spread: mean ± standard deviation over seeds, every seed's value on hover
    (one seed: its value)."""
    def show(sp) -> str:
        text = f"{sp.mean:,.{decimals}f}" + (f"\u00a0±\u00a0{sp.sd:,.{decimals}f}" if sp.sd is not None else "")
        hover = "; ".join(f"seed {k}: {v:,.{decimals}f}" for k, v in sp.by_seed.items())
        return f'<span class="seeds" title="{hover}">{text}</span>'
    show.plus_minus = "mean ± sd"  # md_table heads the column with it
    return show


def machine(device: str, threads) -> str:
    """Where a benchmark ran, for a page: the device as its provenance names it and the thread count, said once
    (a CPU's name already carries it: 'cpu: x86_64 (2 threads)')."""
    said = f"({threads} threads)"
    return f"**{device}**" + ("" if threads is None or said in device else f" {said}")


def not_run(*paths: str, command: str | None = None) -> str:
    body = "Missing: " + ", ".join(f"`{p}`" for p in paths) + "."
    if command:
        body += f" Produce it with `{command}`."
    return f'!!! warning "not run"\n    {body}\n'


def diverged_note(records: list[dict]) -> str:
    """The notice a page shows for the runs it could not measure because they diverged (Diverged records,
    attnlab.errors); '' for none."""
    if not records:
        return ""
    body = "; ".join(why_diverged(r["run"], r) for r in records)
    return f'!!! warning "diverged"\n    Not measured, because the run diverged: {body}.\n'


def chart(chart_id: str, spec: dict) -> str:
    blob = json.dumps(spec, separators=(",", ":"), default=str).replace("</", "<\\/")
    return (f'<div id="{chart_id}" class="attnlab-chart"></div>\n<script>\n'
            f'document.addEventListener("DOMContentLoaded", function () {{ '
            f'vegaEmbed("#{chart_id}", {blob}, {{actions: {{export: true, source: false, compiled: false, editor: false}}}}); }});\n</script>\n')


EMBEDDED = re.compile(r'vegaEmbed\("#([^"]+)", (\{.*?\}), \{actions')  # what `chart` writes


def charts_in(markup: str) -> dict[str, dict]:
    """Every chart `chart` drew into `markup`: its id -> its Vega-Lite spec."""
    return {chart_id: json.loads(blob.replace("<\\/", "</")) for chart_id, blob in EMBEDDED.findall(markup)}


def badge(verdict: str) -> str:
    return f'<span class="verdict verdict-{verdict.replace(" ", "-")}">{verdict}</span>'


def code(command: str) -> str:
    return f"```bash\n{command}\n```\n"


def span(dates) -> str:
    dates = sorted({str(d) for d in dates})
    return dates[0] if len(dates) == 1 else f"{dates[0]} … {dates[-1]}"


def total(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(sum(values), 3) if values else None


def gpu_region(r) -> str | None:
    """One sentence on what NVML saw during a timed region (attnlab.bench.nvml's record), or None off a GPU."""
    if r is None:
        return None
    if "error" in r:
        return f"NVML: {r['error']}"
    if not r.get("samples"):
        return f"NVML: {r.get('note', 'no samples')}"
    lo, hi = r["sm_mhz"]
    text = (f"SM clock {lo}–{hi} MHz (max {r['max_sm_mhz']}), {r['temperature_c'][0]}–{r['temperature_c'][1]} °C, "
            f"{r['power_w'][0]:.0f}–{r['power_w'][1]:.0f} W over {r['samples']} samples")
    reasons = ", ".join(r.get("reasons") or []) or "none"
    text += f"; clock-event reasons: {reasons} ({'throttled' if r.get('throttled') else 'not throttled'})"
    if r.get("low_clock_samples"):
        text += f"; {r['low_clock_samples']} samples below 75 % of the maximum clock"
    return text


def clocks(c) -> str | None:
    if c is None:
        return None
    if "error" in c:
        return f"NVML: {c['error']}"
    return f"SM {c.get('sm_mhz')} / max {c.get('max_sm_mhz')} MHz, {c.get('temperature_c')} °C"


def finite(x) -> float | None:
    """x when it is a finite number (not a bool), else None: what a table or chart may show."""
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


NUMBER = re.compile(r"(?<![\w&#.\-−])[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?"
                    r"(?:[\s\u00a0]*±[\s\u00a0]*\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?)?(?![\w\-])")  # not in a name
TAG = re.compile(r"(<[^>]*>|&[#\w]+;)")  # markup and entities, which hold digits that are no number


def nobreak(markup: str) -> str:
    """`markup` with every number (and its ± error) in the text, outside tags and entities, in a span that never
    breaks (attnlab.css, .num): a number cut across two lines ('0.00 / 9089') reads as two."""
    def wrap(m: re.Match) -> str:
        return f'<span class="num">{m.group(0)}</span>'
    return "".join(part if TAG.fullmatch(part) else NUMBER.sub(wrap, part) for part in TAG.split(markup))
