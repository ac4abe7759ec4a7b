"""A verdict for every claim, computed from the run files; claims.csv."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from attnlab.errors import AttnlabError, why_diverged
from attnlab.report.claims import (DIRECTIONS, ROW_VIEWS, SAFE_BUILTINS, Claim, Registry, apply_check,
                                   load_registry)
from attnlab.report.format import fmt
from attnlab.report.results import NotMeasured, Results, diverged, gather

COLUMNS = ["claim_id", "chapter_value", "reproduced_value", "verdict", "note", "seeds", "per_seed", "single_seed"]
VERDICTS = ("reproduced", "not reproduced", "not run", "diverged")


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    reproduced: object = None   # value, or mapping part -> value (the mean over seeds where the claim has several)
    note: str = ""
    se: dict = field(default_factory=dict)  # part -> standard error (numeric parts): sampling, and seeds' spread
    seeds: dict = field(default_factory=dict)  # seed -> its value (as `reproduced`) where the claim has several
    single: dict = field(default_factory=dict)  # seed -> the verdict that seed's runs alone would have given

    def shown(self) -> dict[str, str]:
        """The reproduced value by part ("" for a simple claim), with its standard error where the evaluation's
        sampling or the seeds give one (v ± se); {} when nothing was computed."""
        if self.reproduced is None:
            return {}
        parts = self.reproduced if isinstance(self.reproduced, dict) else {"": self.reproduced}
        return {p: fmt(v) + (f"\u00a0±\u00a0{fmt(self.se[p])}" if self.se.get(p) else "") for p, v in parts.items()}

    def per_seed(self) -> dict[str, list]:
        """Part -> its value at each seed, in seed order ({} for a claim that reads one seed)."""
        if len(self.seeds) < 2:
            return {}
        by_part = [v if isinstance(v, dict) else {"": v} for v in self.seeds.values()]
        return {p: [b[p] for b in by_part] for p in by_part[0]}

    def survives(self) -> str | None:
        """Would one run have told the same? 'every seed', 'some seeds' or 'no seed' gives the reproduced verdict
        alone (None for a claim that reads one seed)."""
        if len(self.single) < 2:
            return None
        held = sum(v == "reproduced" for v in self.single.values())
        return "every seed" if held == len(self.single) else "no seed" if held == 0 else "some seeds"

    def row(self) -> dict:
        return {
            "claim_id": self.claim.id,
            "chapter_value": fmt(self.claim.chapter_value),
            "reproduced_value": "" if self.reproduced is None else fmt(self.reproduced),
            "verdict": self.verdict,
            "note": self.note,
            "seeds": len(self.seeds) or "",
            "per_seed": "" if not self.seeds else fmt(list(self.seeds.values())),
            "single_seed": " ".join(f"{k}:{v}" for k, v in self.single.items()),
        }


class _NotRun(Exception):
    """One seed's runs cannot give the claim a value; the message says why."""


def evaluate(claim: Claim, res: Results) -> Verdict:
    """The claim's verdict. A claim that reads training runs (or results) made at several seeds is computed once
    per seed, on that seed's runs; its value is the mean over seeds and its standard error the larger of the
    seeds' spread over √n and the evaluation's sampling error (a jackknife of that mean), so that a direction
    must clear seed noise as well as sampling noise."""
    seeds = res.common_seeds(claim.rows, claim.files)
    views = {seed: res.at(seed) for seed in seeds} or {None: res}
    missing = [res.path(w) for w in sorted(claim.files) if res.result(w) is None]
    missing += [res.path(r) for r in sorted(claim.rows) if r not in res.runs]
    if missing:
        return Verdict(claim, "not run", note="missing: " + ", ".join(missing))
    bad = [(seed, r) for seed, view in views.items() for r in sorted(claim.trained_rows) if diverged(view.runs[r])]
    if bad:
        where = [why_diverged(r + ("" if len(views) < 2 else f" (seed {seed})"), views[seed].runs[r])
                 for seed, r in bad]
        return Verdict(claim, "diverged", note="; ".join(where))
    try:
        each = {seed: _measure(claim, view) for seed, view in views.items()}
    except (_NotRun, NotMeasured) as why:  # NotMeasured: the claim read through a diverged run's record
        return Verdict(claim, "not run", note=str(why))
    if len(each) == 1:
        (values, se), = each.values()
        ok, notes = _check(claim, values, se)
        reproduced = values[""] if list(values) == [""] else values
        return Verdict(claim, "reproduced" if ok else "not reproduced", reproduced, notes, se)

    values = {part: _pooled([v[part] for v, _ in each.values()]) for part in claim.code}
    se = _pooled_se(claim, views, each)
    ok, notes = _check(claim, values, se)
    single = {seed: "reproduced" if _check(claim, v, s)[0] else "not reproduced" for seed, (v, s) in each.items()}
    shape = (lambda v: v[""]) if list(values) == [""] else (lambda v: v)
    return Verdict(claim, "reproduced" if ok else "not reproduced", shape(values),
                   f"mean of {len(each)} seeds; " + notes, se,
                   seeds={seed: shape(v) for seed, (v, _) in each.items()}, single=single)


def _measure(claim: Claim, res: Results) -> tuple[dict, dict]:
    """(part -> value, part -> standard error) on one seed's runs (or on runs that have one seed)."""
    scope = _scope(res)
    values = {part: _value(claim, part, code, scope) for part, code in claim.code.items()}
    unmeasured = [part for part, value in values.items() if value is None]
    if unmeasured:  # the producer ran but could not measure this here (e.g. no out-of-memory below a CPU's cap)
        where = ", ".join(f"value{'.' + p if p else ''}" for p in unmeasured)
        raise _NotRun(f"{where} is null in the run files: this run did not measure it")
    needs_se = any(set(check) & DIRECTIONS for check in claim.checks.values())
    unblocked = [r for r in sorted(claim.trained_rows) if not (res.runs[r].get("eval") or {}).get("val_blocks")]
    if needs_se and unblocked:
        raise _NotRun("a direction needs the evaluation's sampling error, and "
                      + ", ".join(res.path(r) for r in unblocked) + " records no evaluation blocks (rerun it)")
    se = standard_errors(claim, res, values) if not unblocked else {}
    se.update({part: _value(claim, part, code, scope, "se") for part, code in claim.se_code.items()})
    return values, se


def _check(claim: Claim, values: dict, se: dict) -> tuple[bool, str]:
    notes, ok = [], True
    for part, value in values.items():
        passed, why = apply_check(claim.checks[part], value, claim.id, part, se.get(part))
        ok &= passed
        notes.append(f"{'✓' if passed else '✗'} {part + ': ' if part else ''}{why}")
    return ok, "; ".join(notes)


def _numeric(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _pooled(values: list):
    """One part over seeds: a number's mean; a truth that must hold at every seed; anything else as it is when
    every seed agrees, else the list (which no check of one value passes)."""
    if all(_numeric(v) for v in values):
        return sum(values) / len(values)
    if all(isinstance(v, bool) for v in values):
        return all(values)
    return values[0] if all(v == values[0] for v in values) else values


def _pooled_se(claim: Claim, views: dict, each: dict) -> dict[str, float]:
    """Per numeric part, the standard error of the mean over seeds: the larger of the seeds' spread (sd / √n)
    and the sampling error (a jackknife of the mean over the shared evaluation blocks, or the mean of the
    errors the run files state, `se:`; seeds are scored on the same held-out data, so those errors do not
    shrink with n)."""
    n = len(each)
    out = {}
    for part in claim.code:
        vals = [v[part] for v, _ in each.values()]
        if not all(_numeric(v) for v in vals):
            continue
        mean = sum(vals) / n
        seed_se = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1) / n)
        if part in claim.se_code:
            sampling = sum(s.get(part) or 0.0 for _, s in each.values()) / n
        else:
            sampling = _jackknife_of_mean(claim, part, list(views.values()))
        out[part] = max(seed_se, sampling)
    return out


def _jackknife_of_mean(claim: Claim, part: str, views: list[Results]) -> float:
    """Delete-one-block jackknife of the claim's mean over seeds (each replicate leaves the same stretch out of
    every perplexity at every seed); 0 for a value that reads no perplexity."""
    k = _blocks(claim, views[0])
    if not claim.trained_rows or k < 2:
        return 0.0
    reps = []
    for i in range(k):
        at_seeds = [_value(claim, part, claim.code[part], _scope(view, drop=i)) for view in views]
        reps.append(sum(at_seeds) / len(at_seeds))
    mean = sum(reps) / k
    return math.sqrt((k - 1) / k * sum((r - mean) ** 2 for r in reps))


def _blocks(claim: Claim, res: Results) -> int:
    return len(next((m["eval"]["val_blocks"] for r, m in res.runs.items()
                     if r in claim.trained_rows and (m.get("eval") or {}).get("val_blocks")), []))


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
    numeric = {p for p, v in values.items() if _numeric(v)}
    k = _blocks(claim, res)
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
