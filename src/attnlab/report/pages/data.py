"""C0: the corpus, the byte-level BPE and the token splits."""
from __future__ import annotations

import html

import pandas as pd

from attnlab.report import charts
from attnlab.report.format import chart, fmt, md_table

NAME = "data"


def stats_table(stats: dict) -> pd.DataFrame:
    """The data stage's numbers as (quantity, value) rows."""
    keys = ["n_chars", "sha256", "vocab_size", "n_merges", "pattern", "n_tokens", "chars_per_token",
            "n_train", "n_val", "tokenizer_seconds", "encode_seconds"]
    return pd.DataFrame([(k, stats.get(k)) for k in keys if k in stats], columns=["quantity", "value"])


def merges_table(stats: dict, chapter_merges: list[str] | None) -> pd.DataFrame:
    ours = list(stats.get("first_merges") or [])
    theirs = list(chapter_merges or [])
    n = max(len(ours), len(theirs))
    pad = lambda xs: xs + [None] * (n - len(xs))  # noqa: E731
    table = pd.DataFrame({"rank": range(1, n + 1), "reproduced": pad(ours), "chapter": pad(theirs)})
    both = table["reproduced"].notna() & table["chapter"].notna()
    table["same"] = (table["reproduced"] == table["chapter"]).where(both, None)
    return table


def pretty(v) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"`{v}`" if isinstance(v, str) and len(v) > 20 else fmt(v)
    return f"{v:,}" if isinstance(v, int) else f"{v:,.4g}"


def token(v) -> str:
    return f"<code>{html.escape(v.replace(' ', '␣'))}</code>" if isinstance(v, str) else "–"


def blocks(site) -> dict[str, str]:
    out = site.skeleton(NAME)
    stats = site.res.result(NAME)
    if stats is None:
        missing = site.missing(NAME)
        return out | {"stats_table": missing, "merges_table": missing, "split_chart": ""}
    chapter_counts = {**site.chapter_parts("C0.2"), **site.chapter_parts("C0.3")}
    merges = merges_table(stats, site.chapter_value("C0.4"))
    return out | {
        "stats_table": md_table(stats_table(stats), formats={"value": pretty}),
        "split_chart": chart("chart-split", charts.split_chart(stats, chapter_counts)),
        "merges_table": md_table(merges, {"rank": "rank", "reproduced": "reproduced", "chapter": "chapter",
                                          "same": "same"}, {"reproduced": token, "chapter": token}),
    }
