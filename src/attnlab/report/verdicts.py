"""A verdict for every claim, computed from the run files; claims.csv."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from attnlab.errors import AttnlabError
from attnlab.report.claims import (DIRECTIONS, ROW_VIEWS, SAFE_BUILTINS, Claim, Registry, apply_check,
                                   load_registry)
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
    se: dict = field(default_factory=dict)  # part -> standard error from the evaluation's sampling (numeric parts)

    def shown(self) -> dict[str, str]:
        """The reproduced value by part ("" for a simple claim), with its standard error where the evaluation's
        sampling gives one (v ± se); {} when nothing was computed."""
        if self.reproduced is None:
            return {}
        parts = self.reproduced if isinstance(self.reproduced, dict) else {"": self.reproduced}
        return {p: fmt(v) + (f"\u00a0±\u00a0{fmt(self.se[p])}" if self.se.get(p) else "") for p, v in parts.items()}

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

    scope = _scope(res)
    values = {part: _value(claim, part, code, scope) for part, code in claim.code.items()}
    unmeasured = [part for part, value in values.items() if value is None]
    if unmeasured:  # the producer ran but could not measure this here (e.g. no out-of-memory below a CPU's cap)
        where = ", ".join(f"value{'.' + p if p else ''}" for p in unmeasured)
        return Verdict(claim, "not run", note=f"{where} is null in the run files: this run did not measure it")
    needs_se = any(set(check) & DIRECTIONS for check in claim.checks.values())
    unblocked = [r for r in sorted(claim.trained_rows) if not (res.runs[r].get("eval") or {}).get("val_blocks")]
    if needs_se and unblocked:
        return Verdict(claim, "not run", note="a direction needs the evaluation's sampling error, and "
                       + ", ".join(res.path(r) for r in unblocked) + " records no evaluation blocks (rerun it)")
    se = standard_errors(claim, res, values) if not unblocked else {}
    se.update({part: _value(claim, part, code, scope, "se") for part, code in claim.se_code.items()})
    notes, ok = [], True
    for part, value in values.items():
        passed, why = apply_check(claim.checks[part], value, claim.id, part, se.get(part))
        ok &= passed
        notes.append(f"{'✓' if passed else '✗'} {part + ': ' if part else ''}{why}")
    reproduced = values[""] if list(values) == [""] else values
    return Verdict(claim, "reproduced" if ok else "not reproduced", reproduced, "; ".join(notes), se)


def _scope(res: Results, drop: int | None = None) -> dict:
    """What expressions see; with `drop`, every evaluation is re-read without its block number `drop`."""
    scope = {"__builtins__": SAFE_BUILTINS, **res.files}
    for name, key in ROW_VIEWS.items():
        scope[name] = {row: m.get(key) for row, m in res.runs.items()}
    if drop is None:
        return scope
    for row, m in res.runs.items():
        ev = m.get("eval") or {}
        if ev.get("val_blocks"):
            scope["ppl"][row] = _ppl_without(ev["val_blocks"], drop)
            scope["train_ppl"][row] = _ppl_without(ev["train_blocks"], drop)
        if ev.get("val_blocks_at"):
            scope["ppl_at"][row] = {w: _ppl_without(b, drop) for w, b in ev["val_blocks_at"].items()}
    return scope


def _ppl_without(blocks: list, drop: int) -> float:
    kept = [(mean, n) for i, (mean, n) in enumerate(blocks) if i != drop]
    return math.exp(sum(mean * n for mean, n in kept) / sum(n for _, n in kept))


def _value(claim: Claim, part: str, code, scope: dict, what: str = "value"):
    try:
        return eval(code, scope, {})  # noqa: S307 - whitelisted syntax and names, see _compile
    except (KeyError, IndexError, TypeError, ZeroDivisionError, ValueError) as err:
        label = f"{what}{'.' + part if part else ''}"
        raise AttnlabError(f"claim {claim.id}: {label} (for {claim.values[part]!r}) failed on the run files "
                           f"({type(err).__name__}: {err}); does a producer write that field?") from None


def standard_errors(claim: Claim, res: Results, values: dict) -> dict[str, float]:
    """Delete-one-block jackknife over the evaluation blocks every run records: each replicate re-reads every
    perplexity without the same stretch of the split (so runs scored on the same tokens stay paired) and
    recomputes the claim. A value that reads no perplexity has no sampling error here (0)."""
    numeric = {p for p, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    k = len(next((m["eval"]["val_blocks"] for r, m in res.runs.items()
                  if r in claim.trained_rows and (m.get("eval") or {}).get("val_blocks")), []))
    if not claim.trained_rows or k < 2:
        return {p: 0.0 for p in numeric}
    replicates = [_scope(res, drop=i) for i in range(k)]
    out = {}
    for part in numeric:
        reps = [_value(claim, part, claim.code[part], scope) for scope in replicates]
        mean = sum(reps) / k
        out[part] = math.sqrt((k - 1) / k * sum((r - mean) ** 2 for r in reps))
    return out


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
