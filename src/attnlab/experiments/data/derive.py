"""C0's numbers from the data stage's stats file: what it counted, its first merges beside the chapter's, and
what kinds of piece those merges make."""
from __future__ import annotations

import pandas as pd

QUANTITIES = ["n_chars", "sha256", "vocab_size", "n_merges", "pattern", "n_tokens", "chars_per_token",
              "n_train", "n_val", "tokenizer_seconds", "encode_seconds"]


def quantities(stats: dict) -> pd.DataFrame:
    """The data stage's numbers as (quantity, value) rows, in QUANTITIES' order, those the file has."""
    return pd.DataFrame([(k, stats.get(k)) for k in QUANTITIES if k in stats], columns=["quantity", "value"])


def merges(stats: dict, chapter_merges: list[str] | None) -> pd.DataFrame:
    """The first merges by rank, ours (reproduced) beside the chapter's (None past a list's end), and whether the
    two are the same piece (None where either is missing)."""
    ours, theirs = list(stats.get("first_merges") or []), list(chapter_merges or [])
    n = max(len(ours), len(theirs))
    table = pd.DataFrame({"rank": range(1, n + 1), "reproduced": ours + [None] * (n - len(ours)),
                          "chapter": theirs + [None] * (n - len(theirs))})
    both = table["reproduced"].notna() & table["chapter"].notna()
    table["same"] = (table["reproduced"] == table["chapter"]).where(both, None)
    return table


def space_and_letter(first: list[str]) -> list[str]:
    """The merges that glue a space to one letter (' t')."""
    return [m for m in first if len(m) == 2 and m[0] == " " and m[1].isalpha()]


def two_letters(first: list[str]) -> list[str]:
    """The merges that join two letters ('he')."""
    return [m for m in first if len(m) == 2 and m.isalpha()]


def first_longer(first: list[str]) -> tuple[int, str, list[tuple[str, int]]] | None:
    """The first merge longer than two characters: its rank (from 1), the piece, and the two earlier merges it
    joins, each with its rank ([] where it splits into no two of them); None where none is longer."""
    i, m = next(((i, m) for i, m in enumerate(first) if len(m) > 2), (None, None))
    if m is None:
        return None
    known = {piece: j + 1 for j, piece in enumerate(first[:i])}
    split = next(((m[:k], m[k:]) for k in range(1, len(m)) if m[:k] in known and m[k:] in known), ())
    return i + 1, m, [(piece, known[piece]) for piece in split]
