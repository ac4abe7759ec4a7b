"""A verdict for every claim, computed from the run files; claims.csv."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from attnlab.errors import AttnlabError
from attnlab.report.claims import ROW_VIEWS, SAFE_BUILTINS, Claim, Registry, apply_check, load_registry
from attnlab.report.format import fmt
from attnlab.report.results import Results, diverged, gather

COLUMNS = ["claim_id", "chapter_value", "reproduced_value", "verdict", "note"]
VERDICTS = ("reproduced", "not reproduced", "not run", "diverged")


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    reproduced: object = None   # value, or mapping part -> value
    note: str = ""

    def row(self) -> dict:
        return {
            "claim_id": self.claim.id,
            "chapter_value": fmt(self.claim.chapter_value),
            "reproduced_value": "" if self.reproduced is None else fmt(self.reproduced),
            "verdict": self.verdict,
            "note": self.note,
        }


def evaluate(claim: Claim, res: Results) -> Verdict:
    missing = [res.path(w) for w in sorted(claim.files) if res.result(w) is None]
    missing += [res.path(r) for r in sorted(claim.rows) if r not in res.runs]
    if missing:
        return Verdict(claim, "not run", note="missing: " + ", ".join(missing))
    bad = [r for r in sorted(claim.trained_rows) if diverged(res.runs[r])]
    if bad:
        where = [f"{r} diverged at step {res.runs[r].get('diverged_at_step')}" for r in bad]
        return Verdict(claim, "diverged", note="; ".join(where))

    scope = {"__builtins__": SAFE_BUILTINS, **res.files}
    for name, key in ROW_VIEWS.items():
        scope[name] = {row: m.get(key) for row, m in res.runs.items()}
    values, notes, ok = {}, [], True
    for part, code in claim.code.items():
        label = f"value{'.' + part if part else ''}"
        try:
            value = eval(code, scope, {})  # noqa: S307 - whitelisted syntax and names, see _compile
        except (KeyError, IndexError, TypeError, ZeroDivisionError, ValueError) as err:
            raise AttnlabError(f"claim {claim.id}: {label} = {claim.values[part]!r} failed on the run files "
                               f"({type(err).__name__}: {err}); does a producer write that field?") from None
        passed, why = apply_check(claim.checks[part], value, claim.id, part)
        values[part] = value
        ok &= passed
        notes.append(f"{'✓' if passed else '✗'} {part + ': ' if part else ''}{why}")
    reproduced = values[""] if list(values) == [""] else values
    return Verdict(claim, "reproduced" if ok else "not reproduced", reproduced, "; ".join(notes))


def evaluate_all(registry: Registry, res: Results) -> list[Verdict]:
    return [evaluate(c, res) for c in registry.claims]


def verdict_table(verdicts: list[Verdict]) -> pd.DataFrame:
    return pd.DataFrame([v.row() for v in verdicts], columns=COLUMNS)


def write_claims_csv(results_dir: str | Path, claims_path: str | Path, out_csv: str | Path) -> pd.DataFrame:
    table = verdict_table(evaluate_all(load_registry(claims_path), gather(results_dir)))
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_csv.with_name(out_csv.name + ".tmp")
    table.to_csv(tmp, index=False)
    tmp.replace(out_csv)  # whole or not at all
    return table
