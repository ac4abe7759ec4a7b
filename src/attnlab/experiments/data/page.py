"""C0: the corpus, the byte-level BPE and the token splits."""
from __future__ import annotations

import html

from attnlab.report import charts
from attnlab.report.format import chart, fmt, md_table
from attnlab.report.readings import count
from attnlab.report.context import experiment_page
from attnlab.experiments.data import derive

NAME = "data"


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
    spaced, letters = [shown(m) for m in derive.space_and_letter(first)], derive.two_letters(first)
    kinds = [f"{count(len(spaced), 'glues', 'glue')} a space to one letter ({', '.join(spaced)})"] if spaced else []
    kinds += [f"{len(letters)} join two letters ({', '.join(letters)})"] if letters else []
    said = [f"of the first {len(first)}, " + " and ".join(kinds)] if kinds else []
    if longer := derive.first_longer(first):
        rank, piece, split = longer
        said.append(f"the first longer piece, {shown(piece)}, comes at rank {rank}" + (
            " and joins two earlier ones, {} and {} (ranks {} and {})".format(*(shown(p) for p, _ in split),
                                                                       *(r for _, r in split)) if split else ""))
    text = "; ".join(said)
    return text[:1].upper() + text[1:] + "." if text else ""


def unrun(ctx) -> dict[str, str]:
    return {"split": split_words(ctx.settings)}


def render(ctx) -> dict[str, str]:
    site, stats, out = ctx.site, ctx.result, unrun(ctx)
    chapter_counts = {**site.chapter_parts("C0.2"), **site.chapter_parts("C0.3")}
    merges = derive.merges(stats, site.chapter_value("C0.4"))
    return out | {
        "stats_table": md_table(derive.quantities(stats), formats={"value": pretty}),
        "split_chart": chart("chart-split", charts.split_chart(stats, chapter_counts)),
        "merges_reading": merges_reading(list(stats.get("first_merges") or [])),
        "merges_table": md_table(merges, {"rank": "rank", "reproduced": "reproduced", "chapter": "chapter",
                                          "same": "same"}, {"reproduced": token, "chapter": token}),
    }


blocks = experiment_page(NAME, render, unrun)
