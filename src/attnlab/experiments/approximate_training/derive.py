"""S8 trained: the numbers its page shows, from the run files: every run here beside the full-attention run L9,
with its status and perplexities over the seeds, and which runs give one approximation more than another."""
from __future__ import annotations

import pandas as pd

from attnlab.experiments.approximate_training import settings
from attnlab.results import Results

EXPERIMENT = "approximate_training"
FULL = settings.FULL  # the run with full attention every run here is set against
PAIRS = [("S8-w16", "S8-w32"), ("S8-w16", "S8-w16-g4"), ("S8-w32", "S8-w32-g4"), ("S8-w16", "S8-w16-sym"),
         ("S8-w32", "S8-w32-sym"), ("S8-favor32", "S8-favor128")]  # (less, more) of one approximation


def runs_table(res: Results) -> pd.DataFrame:
    """The full-attention run, then every run here in the settings' own order (the site's profile arrives with its
    keys sorted), then any other: its model, status and perplexities over the seeds; a run with no finite
    validation perplexity is left out."""
    rows, ran = [], res.experiment(EXPERIMENT)
    for name in [FULL, *(r for r in settings.DEFAULTS if r in ran), *(r for r in ran if r not in settings.DEFAULTS)]:
        val = res.spread(name, "val_ppl")
        if val is not None:
            rows.append({"run": name, "spec": res.spec(name), "status": res.status(name), "val_spread": val,
                         "train_spread": res.spread(name, "train_ppl"), "val_ppl": val.mean})
    return pd.DataFrame(rows)


def pairs(runs) -> list[tuple[str, str]]:
    """The (less, more) pairs of PAIRS whose two runs are both among `runs`."""
    return [(a, b) for a, b in PAIRS if a in runs and b in runs]
