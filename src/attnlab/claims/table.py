"""claims.csv (one row per part of every claim) and claims_by_seed.csv, written whole or not at all."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from attnlab.claims.evaluate import evaluate_all
from attnlab.claims.registry import load_registry
from attnlab.claims.text import fmt
from attnlab.claims.verdicts import Verdict
from attnlab.results import gather

COLUMNS = ["claim_id", "part", "kind", "chapter_value", "value", "value_text", "se", "k", "lo", "hi", "n_seeds",
           "verdict", "part_verdict", "settle", "note",
           "dominant", "look", "level"]  # claims.csv: one row per part of every claim
BY_SEED_COLUMNS = ["claim_id", "part", "seed", "value", "value_text", "seed_verdict"]  # claims_by_seed.csv


def verdict_table(verdicts: list[Verdict]) -> pd.DataFrame:
    """claims.csv: one row per part of every claim."""
    return pd.DataFrame([r for v in verdicts for r in v.rows()], columns=COLUMNS, dtype=object)  # ints stay ints


def seed_table(verdicts: list[Verdict]) -> pd.DataFrame:
    """claims_by_seed.csv: every part's value at every seed, for the claims computed at several."""
    return pd.DataFrame([r for v in verdicts for r in v.seed_rows()], columns=BY_SEED_COLUMNS, dtype=object)


def write_claims_csv(results_dir: str | Path, claims_path: str | Path, out_csv: str | Path,
                     first_look: int | None = None) -> pd.DataFrame:
    """claims.csv and, beside it, claims_by_seed.csv; each whole or not at all. `first_look`: the profile's own
    seed count (attnlab.versions.first_look_of). Returns one row per claim: its id, kind, verdict, settle, value
    (as shown) and note."""
    verdicts = evaluate_all(load_registry(claims_path), gather(results_dir), first_look)
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    for table, path in ((seed_table(verdicts), out_csv.with_name("claims_by_seed.csv")),
                        (verdict_table(verdicts), out_csv)):
        tmp = path.with_name(path.name + ".tmp")
        table.to_csv(tmp, index=False)
        tmp.replace(path)
    return pd.DataFrame([{"claim_id": v.claim.id, "kind": v.claim.kind, "verdict": v.verdict, "settle": v.settle,
                          "reproduced_value": "" if v.reproduced is None else fmt(v.reproduced), "note": v.note}
                         for v in verdicts])
