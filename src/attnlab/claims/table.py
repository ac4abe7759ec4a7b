"""claims.csv (one row per part of every claim) and claims_by_seed.csv, written whole or not at all; and a
published version's claims.csv read back, claim by claim, beside today's verdict of the same claim."""
from __future__ import annotations

import csv
import decimal
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from attnlab.claims.evaluate import evaluate_all
from attnlab.claims.outcome import COMPUTED, MEASURED, Outcome
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


MEASURED_THEN = (*MEASURED, *COMPUTED, Outcome.DIVERGED)
# a computed claim's verdict, as first named
COMPUTED_WORDS = {Outcome.REPRODUCED: Outcome.HOLDS, Outcome.NOT_REPRODUCED: Outcome.FAILS}


@dataclass
class Frozen:
    """One claim in a published claims.csv: its verdict and its value by part (as text)."""
    verdict: str
    values: dict[str, str]

    def shown(self) -> str:
        return "; ".join(f"{part} {value}" if part else value for part, value in self.values.items() if value)


def frozen_verdicts(folder: Path) -> dict[str, Frozen] | None:
    """Claim id -> its verdict in the claims.csv a version was published with; None where it has none (a
    version of some experiments). Reads both layouts: one row per part (value, value_text) and, older, one row
    per claim (reproduced_value 'part=value; …')."""
    path = Path(folder) / "claims.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    out: dict[str, Frozen] = {}
    for row in rows:
        entry = out.setdefault(row["claim_id"], Frozen(row["verdict"], {}))
        if "part" in row:
            value = row.get("value") or ""
            entry.values[row["part"]] = fmt(float(value)) if value else row.get("value_text") or ""
        else:
            entry.values.update(split_parts(row.get("reproduced_value") or ""))
    return out


def split_parts(text: str) -> dict[str, str]:
    """'a=1; b=2' -> {'a': '1', 'b': '2'}; a value without parts -> {'': text}."""
    pieces = [p.partition("=") for p in text.split("; ")]
    if text and all(sep and name.isidentifier() for name, sep, _ in pieces):
        return {name: value for name, _, value in pieces}
    return {"": text}


def number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def moved(v: Verdict, f: Frozen) -> list[str]:
    """The numeric parts whose value today differs from the published one beyond the published rounding."""
    today = v.reproduced if isinstance(v.reproduced, dict) else {"": v.reproduced}
    out = []
    for part, then in f.values.items():
        now, was = today.get(part), number(then)
        if isinstance(now, (int, float)) and not isinstance(now, bool) and was is not None \
                and abs(now - was) > last_digit(then) / 2 * (1 + 1e-9):
            out.append(part)
    return out


def last_digit(text: str) -> float:
    """The size of the last digit a number was written with ('1.19e-07' -> 1e-09, '0.7167' -> 1e-04): what its
    rounding may have moved it by, twice."""
    return 10.0 ** decimal.Decimal(text.strip()).as_tuple().exponent


def same_verdict(v: Verdict, f: Frozen) -> bool:
    then = COMPUTED_WORDS.get(f.verdict, f.verdict) if v.claim.kind == "computed" else f.verdict
    return then == v.verdict


def unread(v: Verdict, f: Frozen | None) -> bool:
    """A claim its version measured when published that today's claim cannot read: the run files lack a field."""
    return v.verdict == Outcome.NOT_RUN and bool(v.lacking) and f is not None and f.verdict in MEASURED_THEN
