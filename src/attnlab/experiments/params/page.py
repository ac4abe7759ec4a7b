"""E7 (C7.1-C7.3, C2.10 across widths): parameters counted on models built from specs, beside the formula."""
from __future__ import annotations

import altair as alt
import pandas as pd

from attnlab.report import charts
from attnlab.report.format import chart, md_table
from attnlab.report.context import experiment_page

NAME = "params"
LINE_ITEMS = [  # key in e7['gpt2'], label, how the formula gets it
    ("token_embeddings", "token embeddings", "V·d = 50,257 × 768"),
    ("position_embeddings", "position embeddings", "context·d = 1,024 × 768"),
    ("one_block", "one block", "12d² + 13d"),
    ("blocks", "all blocks", "n_blocks × (12d² + 13d)"),
    ("final_norm", "final LayerNorm", "2d"),
    ("output_layer", "output layer (tied to the token table)", "0: shares the token embeddings"),
    ("total", "total", "published: 124,439,808"),
]
SHARES = {"mlp_share": "MLP / (attention + MLP) in the block", "embedding_share": "token table / whole model",
          "output_share": "output layer / whole model"}


def count(v) -> str:
    return f"{int(v):,}"


def gpt2_table(e7: dict, chapter: dict) -> pd.DataFrame:
    g = e7["gpt2"]
    return pd.DataFrame([{"item": label, "counted": g[key], "chapter": chapter.get(key), "formula": formula}
                         for key, label, formula in LINE_ITEMS])


def shares_chart(e7: dict) -> dict:
    """Where the one-block model's parameters go as the width grows."""
    long = pd.DataFrame([{"d": r["d"], "share": SHARES[key], "value": r[key]} for r in e7["shares"] for key in SHARES])
    shares = list(SHARES.values())
    lines = charts.lines_with_marks(alt.Chart(long).encode(
        x=alt.X("d:Q", title="width d", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("value:Q", title="share", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("share:N", sort=shares, scale=alt.Scale(domain=shares), title=None,
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0)),
        tooltip=["share", "d", alt.Tooltip("value:Q", format=".4f")],
    ), "share", shares)
    spec = e7["width_spec"]  # the one-block models' shape, as the run built them
    return charts.fit_page(alt.layer(lines, charts.reference_line(2 / 3, "2/3")).properties(
        width=480, height=280, title=f"One-block model (vocabulary {spec['vocab_size']}, context {spec['context']}) by "
                                     "width (dashed: 2/3)").to_dict())


def widths_words(e7: dict) -> str:
    """The one-block models the run built, from its own spec and widths: 'at 6 widths (vocabulary 1024, ...)'."""
    spec, widths = e7["width_spec"], sorted(e7["widths"])
    return (f"at {len(widths)} widths (vocabulary {spec['vocab_size']}, context {spec['context']}, "
            f"{'tied' if spec.get('tie_embeddings') else 'untied'} output layer), d from {widths[0]} to {widths[-1]}")


def shares_reading(e7: dict) -> str:
    """The shares table in words: the MLP's share of the block against 2/3 at every width, the token table's
    share of the whole model along the widths, and GPT-2 small's, with its vocabulary and blocks against the
    one-block model's."""
    rows, g, spec = e7["shares"], e7["gpt2"], e7["width_spec"]
    mlp = [r["mlp_share"] for r in rows]
    first, last = rows[0], rows[-1]
    return (f"The MLP's share of the block lies between {min(mlp):.4f} and {max(mlp):.4f} at every width "
            f"(2/3 = {2 / 3:.4f}; the biases make the difference). The token table's share of the whole one-block "
            f"model goes from {first['embedding_share']:.3f} at d = {first['d']} to {last['embedding_share']:.3f} at "
            f"d = {last['d']}. GPT-2 small, with {g['spec']['vocab_size'] / spec['vocab_size']:.0f} times that "
            f"vocabulary and {g['n_blocks']} blocks, has {100 * g['token_embedding_share']:.1f} % of its parameters in its "
            "token table.\n")


def gpt2_words(spec: dict) -> str:
    """GPT-2 small as the run file's spec built it: 'vocabulary 50,257, d = 768, context 1024, 12 blocks of 12
    heads, learned positions, pre-norm, output layer tied to the token embeddings'."""
    tied = "tied to the token embeddings" if spec.get("tie_embeddings") else "untied"
    return (f"vocabulary {spec['vocab_size']:,}, d = {spec['d_model']}, context {spec['context']}, "
            f"{spec['n_blocks']} blocks of {spec['n_heads']} heads, {spec['position']} positions, "
            f"{spec['norm']}-norm, output layer {tied}")


def unrun(ctx) -> dict[str, str]:
    return {"widths": "at several widths", "gpt2_spec": "as the chapter gives it"}


def render(ctx) -> dict[str, str]:
    site, e7, out = ctx.site, ctx.result, {}
    spec = e7["gpt2"].get("spec")
    out["gpt2_spec"] = gpt2_words(spec) if spec else "its shape is not recorded in this version's run file"

    out["gpt2_table"] = md_table(gpt2_table(e7, site.chapter_parts("C7.2")),
                                 {"item": "line item", "counted": "counted", "chapter": "chapter",
                                  "formula": "where it comes from"},
                                 {"counted": count, "chapter": count})
    out["per_block_table"] = md_table(pd.DataFrame(e7["per_block"]), {
        "d": "d", "attention": "attention", "attention_formula": "4d² + 4d", "mlp": "MLP",
        "mlp_formula": "8d² + 5d", "norms": "two LayerNorms", "counted": "block, counted",
        "formula": "12d² + 13d", "matches": "equal"},
        {k: count for k in ("attention", "attention_formula", "mlp", "mlp_formula", "norms", "counted", "formula")})
    out["shares_table"] = md_table(pd.DataFrame(e7["shares"]), {
        "d": "d", "total": "whole model", "mlp_share": "MLP share of the block",
        "embedding_share": "token table share", "output_share": "output layer share"},
        {"total": count, "mlp_share": lambda v: f"{v:.4f}", "embedding_share": lambda v: f"{v:.3f}",
         "output_share": lambda v: f"{v:.3f}"})
    out["shares_chart"] = chart("chart-e7-shares", shares_chart(e7))
    out["shares_reading"], out["widths"] = shares_reading(e7), widths_words(e7)
    g, lean = e7["gpt2"], e7["gpt2_no_qkv_bias"]
    out["qkv_bias"] = (f"Built again with `qkv_bias=False`, one block has {lean['one_block']:,} parameters instead of "
                       f"{g['one_block']:,}: **{e7['qkv_bias_saving_per_block']:,} fewer per block** "
                       f"({lean['total']:,} in all). GPT-2 small's token table is "
                       f"{g['token_embeddings']:,} of {g['total']:,} parameters, "
                       f"**{g['token_embedding_share']:.1%}**; with the position table, "
                       f"{g['embedding_share']:.1%}.")
    return out


blocks = experiment_page(NAME, render, unrun)
