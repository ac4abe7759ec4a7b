"""Run files, checked as they are read: a file that is cut, garbled or empty is named in one line, never read
as if it were whole. `check_files` checks every file of a results folder by its kind; `publish` runs it on what
it copies, and a published version is checked with it before its site is built.

What each kind must be:
    *.json       a JSON object that is not empty; a run file also holds its provenance
    a training run's files (their names: attnlab.layout)
      run file   its spec, status and steps too
      curve      step, lr, train_loss, val_loss: one row per step its run file counts (and the row of the step
                 that diverged, where one did), every cell a number or empty
      probes     a step column, from the first to the last step its run file says the probes ran at
    claims.csv   one row per claim (claim_id, chapter_value, reproduced_value, verdict, note: versions before the
                 interval rule) or one per part of a claim (claim_id, part, ..., verdict, part_verdict: since),
                 each verdict one the verdicts know; complete against the claims registry where publishing asks
    claims_by_seed.csv  claim_id, part, seed, seed_verdict: every row as long as the header
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Iterable, Sequence

from attnlab import layout
from attnlab.claims.outcome import VERDICTS  # the verdicts a claims.csv may hold
from attnlab.errors import AttnlabError

CURVE = ("step", "lr", "train_loss", "val_loss")
CLAIMS = ("claim_id", "chapter_value", "verdict", "note")  # every version's claims.csv has these
CLAIMS_BY_SEED = ("claim_id", "part", "seed", "seed_verdict")  # claims_by_seed.csv, beside the new claims.csv
CLAIM_PARTS = ("part", "part_verdict")  # ... and, one row per part, these (every version since the interval rule)


def read_json(path: str | Path, what: str = "run file") -> dict:
    """A JSON object that is not empty; `what` names the file in the one-line error."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise AttnlabError(f"{what} {path} cannot be read as JSON ({err}): it is cut or garbled") from None
    if not isinstance(doc, dict):
        raise AttnlabError(f"{what} {path} holds a JSON {type(doc).__name__}, not an object")
    if not doc:
        raise AttnlabError(f"{what} {path} is empty ({{}})")
    return doc


def read_run_file(path: str | Path) -> dict:
    """A run file: a JSON object with its provenance."""
    doc = read_json(path)
    if not isinstance(doc.get("provenance"), dict) or not doc["provenance"]:
        raise AttnlabError(f"run file {path} has no provenance: it is not a whole run file")
    return doc


def read_metrics(path: str | Path) -> dict:
    """A training run's run file (layout.METRICS): a run file with the spec, status and steps of the run, and each
    field the claims read (METRIC_FIELDS) of its kind where it is there."""
    m = read_run_file(path)
    if not (isinstance(m.get("spec"), dict) and isinstance(m.get("status"), str) and _count(m.get("steps"))):
        raise AttnlabError(f"run file {path} lacks a training run's spec, status or steps: "
                           f"it is not a whole {layout.METRICS}")
    for key, (fits, kind) in METRIC_FIELDS.items():
        if key in m and not fits(m[key]):
            shown = repr(m[key]) if len(repr(m[key])) <= 40 else repr(m[key])[:37] + "..."
            raise AttnlabError(f"run file {path}: its field '{key}' is {shown} (a {type(m[key]).__name__}), "
                               f"not {kind}: it is garbled")
    return m


def read_csv(path: str | Path, columns: Sequence[str]) -> list[dict]:
    """The rows of a CSV file whose header has `columns`, every row as long as the header."""
    try:
        with open(path, newline="") as f:
            text = f.read()
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise AttnlabError(f"{path} cannot be read as CSV ({err}): it is cut or garbled") from None
    if not rows:
        raise AttnlabError(f"{path} is empty")
    if not text.endswith("\n"):  # every writer ends its last row; a row cut short may still have all its fields
        raise AttnlabError(f"{path} does not end with a line end: its last row is cut")
    lacking = [c for c in columns if c not in rows[0]]
    if lacking:
        raise AttnlabError(f"{path}: its header lacks {', '.join(lacking)} (it reads {','.join(rows[0])[:80]!r})")
    for i, row in enumerate(rows[1:], 1):
        if len(row) != len(rows[0]):
            raise AttnlabError(f"{path}: row {i} has {len(row)} fields, the header {len(rows[0])}: "
                               "it is cut or garbled")
    return [dict(zip(rows[0], row)) for row in rows[1:]]


def check_curve(path: Path, metrics: dict) -> None:
    rows = read_csv(path, CURVE)
    # train.py logs one row per step; a run that diverged within a step adds that step's row after the last
    steps = metrics["steps"]
    steps += metrics["status"] == "diverged" and metrics.get("diverged_at_step") == steps + 1
    bad = next((r for r in rows if not all(_number(r[c]) for c in CURVE)), None)
    if bad:
        raise AttnlabError(f"{path}: the row of step {bad['step']!r} holds something other than numbers: it is garbled")
    if len(rows) != steps or (rows and _float(rows[-1]["step"]) != steps):
        last = rows[-1]["step"] if rows else "none"
        raise AttnlabError(f"{path} has {len(rows)} rows (last step {last}), but its {layout.METRICS} counts {steps} "
                           "steps, one row each: it is cut or garbled")


def check_probes(path: Path, metrics: dict) -> None:
    rows = read_csv(path, ("step",))
    steps = [_float(r["step"]) for r in rows]
    if None in steps:
        raise AttnlabError(f"{path}: row {steps.index(None) + 1} has no step number: it is garbled")
    first, last = metrics.get("probes_first") or {}, metrics.get("probes_last") or {}
    want, got = [first.get("step"), last.get("step")], [steps[0], steps[-1]] if steps else [None, None]
    if got != want:
        raise AttnlabError(f"{path} runs from step {rows[0]['step'] if rows else None} to "
                           f"{rows[-1]['step'] if rows else None}, but its {layout.METRICS} says the probes ran from "
                           f"step {want[0]} to {want[1]}: it is cut or garbled")


def check_claims(path: Path, ids: Sequence[str] | None = None) -> None:
    """claims.csv: one row per claim, or per part of a claim, each with a known verdict; with `ids` (the claims
    registry), every claim there and no other."""

    rows = read_csv(path, CLAIMS)
    parted = bool(rows) and all(c in rows[0] for c in CLAIM_PARTS)
    if parted:
        rows = read_csv(path, CLAIMS + CLAIM_PARTS)
    if not rows or not all(r["claim_id"] for r in rows):
        raise AttnlabError(f"{path} has {'a row without a claim id' if rows else 'no claims'}: it is cut or garbled")
    for key in ("verdict", "part_verdict") if parted else ("verdict",):
        bad = next((r for r in rows if r[key] not in VERDICTS), None)
        if bad:
            raise AttnlabError(f"{path}: claim {bad['claim_id']} has {key.replace('_', ' ')} {bad[key]!r}, none of "
                               f"{', '.join(VERDICTS)}: it is cut or garbled")
    keys = [(r["claim_id"], r["part"] if parted else "") for r in rows]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise AttnlabError(f"{path} holds claim {' part '.join(filter(None, twice[0]))} more than once")
    got = list(dict.fromkeys(r["claim_id"] for r in rows))
    if ids is None:
        return
    missing, stray = [i for i in ids if i not in got], [i for i in got if i not in ids]
    if missing or stray:
        what = (f"lacks {len(missing)} of its {len(ids)} claims ({', '.join(missing[:3])}" if missing else
                f"holds {len(stray)} claims it does not ({', '.join(stray[:3])}")
        raise AttnlabError(f"{path} is not complete against the claims registry: it {what}"
                           f"{', …' if len(missing or stray) > 3 else ''}); rerun the claims rule to rewrite it "
                           "(a published version's: restore it from git)")


def check_files(folder: Path, rels: Iterable[str], claim_ids: Sequence[str] | None = None) -> None:
    """Every file `rels` names under `folder`, checked by its kind (see the top); raises naming the first that
    is damaged. `claim_ids`: claims.csv must hold exactly these."""
    for rel in rels:
        path = Path(folder) / rel
        if path.name in (layout.CURVE, layout.PROBES):
            metrics = read_metrics(path.with_name(layout.METRICS))
            (check_curve if path.name == layout.CURVE else check_probes)(path, metrics)
        elif path.name == "claims.csv":
            check_claims(path, claim_ids)
        elif path.name == "claims_by_seed.csv":
            read_csv(path, CLAIMS_BY_SEED)
        elif path.name == layout.METRICS:
            read_metrics(path)
        elif path.suffix == ".json":
            read_run_file(path)


def _float(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _number(cell: str) -> bool:
    """An empty cell (not measured at that step) or a number (nan and inf included)."""
    return cell == "" or _float(cell) is not None


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number_or_null(value) -> bool:
    return value is None or isinstance(value, (int, float)) and not isinstance(value, bool)


def _mapping_or_null(value) -> bool:
    return value is None or isinstance(value, dict)


METRIC_FIELDS = {  # a training run's fields that claims compute with (claims.expressions.ROW_VIEWS) -> their kind
    "n_params": (_count, "a count"),
    "param_breakdown": (lambda v: isinstance(v, dict) and all(map(_count, v.values())), "a mapping of counts"),
    **{key: (_number_or_null, "a number or null") for key in ("val_ppl", "train_ppl", "val_loss", "train_loss")},
    **{key: (_mapping_or_null, "a mapping or null") for key in ("val_ppl_at", "probes_first", "probes_last")},
}
