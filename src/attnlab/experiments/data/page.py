"""C0: the corpus, the byte-level BPE and the token splits."""
from __future__ import annotations

import html

import pandas as pd

from attnlab.report import charts
from attnlab.report.format import chart, fmt, md_table
from attnlab.report.readings import count
from attnlab.report.context import experiment_page

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


def split_words(config: dict) -> str:
    """The split the profile asks for: 'the first 90 % for training, the rest for validation'."""
    val = (config.get("data") or {}).get("val_fraction")
    if val is None:
        return "a training part and a validation part (the profile's val_fraction)"
    return f"the first {100 * (1 - val):g} % for training, the rest for validation"


def shown(piece: str) -> str:
    """A token as the page shows it (␣ for a space)."""
    return piece.replace(" ", "␣")


def merges_reading(first: list[str]) -> str:
    """The first merges in words, counted from them: how many glue a space to one letter, how many join two
    letters, and the first longer piece with the two earlier pieces it joins (where two are found)."""
    spaced = [shown(m) for m in first if len(m) == 2 and m[0] == " " and m[1].isalpha()]
    letters = [m for m in first if len(m) == 2 and m.isalpha()]
    kinds = [f"{count(len(spaced), 'glues', 'glue')} a space to one letter ({', '.join(spaced)})"] if spaced else []
    kinds += [f"{len(letters)} join two letters ({', '.join(letters)})"] if letters else []
    said = [f"of the first {len(first)}, " + " and ".join(kinds)] if kinds else []
    i, m = next(((i, m) for i, m in enumerate(first) if len(m) > 2), (None, None))
    if m is not None:
        known = {piece: j + 1 for j, piece in enumerate(first[:i])}
        a, b = next(((m[:k], m[k:]) for k in range(1, len(m)) if m[:k] in known and m[k:] in known), (None, None))
        said.append(f"the first longer piece, {shown(m)}, comes at rank {i + 1}" + (
            f" and joins two earlier ones, {shown(a)} and {shown(b)} (ranks {known[a]} and {known[b]})" if a else ""))
    text = "; ".join(said)
    return text[:1].upper() + text[1:] + "." if text else ""


def unrun(ctx) -> dict[str, str]:
    return {"split": split_words(ctx.settings)}


def render(ctx) -> dict[str, str]:
    site, stats, out = ctx.site, ctx.result, unrun(ctx)
    chapter_counts = {**site.chapter_parts("C0.2"), **site.chapter_parts("C0.3")}
    merges = merges_table(stats, site.chapter_value("C0.4"))
    return out | {
        "stats_table": md_table(stats_table(stats), formats={"value": pretty}),
        "split_chart": chart("chart-split", charts.split_chart(stats, chapter_counts)),
        "merges_reading": merges_reading(list(stats.get("first_merges") or [])),
        "merges_table": md_table(merges, {"rank": "rank", "reproduced": "reproduced", "chapter": "chapter",
                                          "same": "same"}, {"reproduced": token, "chapter": token}),
    }


blocks = experiment_page(NAME, render, unrun)
