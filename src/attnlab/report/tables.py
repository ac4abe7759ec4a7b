"""Tidy tables (pandas) built only from run files, shared by the pages (a page's own tables live in its module)."""
from __future__ import annotations

import pandas as pd

from attnlab import layout
from attnlab.results import Results


def row_order(rows, known=()) -> list[str]:
    """Rows in the order `known` gives them (a page's own order, or the profile's), then any others alphabetically."""
    known = [r for r in dict.fromkeys(known) if r in rows]
    return known + sorted(set(rows) - set(known))


def per_seed_csv(res: Results, run: str, file: str) -> pd.DataFrame:
    """A run's `file` (layout.CURVE, layout.PROBES) at every seed it was trained at, with a `seed` column (empty if
    none): a chart drawn from one seed would show one draw of the noise as if it were the result."""
    frames = [pd.read_csv(res.root / layout.sibling(rel, file)).assign(seed=seed)
              for seed, rel in sorted(res.seed_paths.get(run, {}).items())
              if (res.root / layout.sibling(rel, file)).is_file()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def seeds_named(table: pd.DataFrame) -> str:
    """'seed 1337' or 'seeds 1337, 1338, 1339 (a line each)': what a chart drawn from `table` shows."""
    seeds = sorted(set(table["seed"])) if "seed" in table else []
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    return f"seeds {', '.join(map(str, seeds))} (a line each)" if seeds else "no seed"
