"""Tidy tables (pandas) shared by the pages, in words (a page's own tables live in its module; the run files' own,
row_order and per_seed_csv, are attnlab.results')."""
from __future__ import annotations

import pandas as pd



def seeds_named(table: pd.DataFrame) -> str:
    """'seed 1337' or 'seeds 1337, 1338, 1339 (a line each)': what a chart drawn from `table` shows."""
    seeds = sorted(set(table["seed"])) if "seed" in table else []
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    return f"seeds {', '.join(map(str, seeds))} (a line each)" if seeds else "no seed"
