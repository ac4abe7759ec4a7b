"""The claims registry (claims/<experiment>.yaml) and its expression language.

A claim's reproduced value is a small Python expression over the run files
(see claims/README.md). Expressions are checked when the registry loads:
only a whitelist of syntax, only the names below, and runs written as
literal strings, so that the inputs a claim needs are known before anything
is evaluated. That is what lets a missing run become "not run" (naming the
file) and a diverged run become "diverged", instead of a crash or a guess.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from pathlib import Path

from attnlab import registry as experiments
from attnlab.config import read_yaml
from attnlab.errors import AttnlabError
from attnlab.report.format import fmt

SAFE_BUILTINS = {f.__name__: f for f in (abs, min, max, round, len, all, any, sum, range, enumerate)}
ROW_VIEWS = {  # name in expressions -> field of <experiment>/<run>/metrics.json (runs are named uniquely)
    "ppl": "val_ppl",
    "train_ppl": "train_ppl",
    "n_params": "n_params",
    "breakdown": "param_breakdown",
    "probe_start": "probes_first",  # attention probes at step 0 (runs with probe_every)
    "probe_end": "probes_last",     # ... and at the last probed step
    "ppl_at": "val_ppl_at",         # {"64": ppl, ...}: the trained model read through other windows (E5)
}
NEEDS_TRAINED = {"ppl", "train_ppl", "probe_end", "ppl_at"}  # these are meaningless for a diverged run
CHECKS = {"equals", "between", "target", "abs_le", "is_true", "above", "below"}
DIRECTIONS = {"above", "below"}  # checks of a direction: the value must clear the bound by MARGIN_SE errors
MARGIN_SE = 2  # standard errors; one-sided, a tie or a difference within sampling noise passes nothing

_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Store, ast.Subscript, ast.Slice,
    ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
    ast.keyword, ast.GeneratorExp, ast.ListComp, ast.comprehension,
    ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)


# ----------------------------------------------------------------- registry

@dataclass
class Claim:
    id: str
    claim: str
    chapter_value: object
    values: dict[str, str]          # part -> expression ("" is the only part of a simple claim)
    checks: dict[str, dict]         # part -> check
    tolerance_note: str
    experiment: str = ""                                # whose claims file holds it: its page
    files: set[str] = field(default_factory=set)      # result files (by experiment name) it reads
    rows: set[str] = field(default_factory=set)       # training runs it reads
    trained_rows: set[str] = field(default_factory=set)  # rows whose ppl it reads
    code: dict = field(default_factory=dict, repr=False)
    se_code: dict = field(default_factory=dict, repr=False)  # part -> expression of its standard error ('se:')


@dataclass
class Registry:
    chapter: str
    reference: dict
    claims: list[Claim]

    def by_id(self, claim_id: str) -> Claim:
        return next(c for c in self.claims if c.id == claim_id)


def load_registry(folder: str | Path) -> Registry:
    """The claims of every experiment that has them (folder/<experiment>.yaml, in registry order)."""
    folder = Path(folder)
    parts = [load_file(folder / f"{e.name}.yaml", e.name) for e in experiments.load() if e.claims]
    stray = sorted(p.name for p in folder.glob("*.yaml") if p.stem not in {e.name for e in experiments.load()})
    if stray:
        raise AttnlabError(f"claims file {folder / stray[0]} belongs to no experiment in the registry")
    claims = [c for part in parts for c in part.claims]
    dup = sorted({c.id for c in claims if sum(d.id == c.id for d in claims) > 1})
    if dup:
        raise AttnlabError(f"claim {dup[0]}: duplicate id across {folder}/*.yaml")
    reference = {}
    for part in parts:
        for key, value in part.reference.items():
            reference.setdefault(key, {}).update(value)
    return Registry(chapter=parts[0].chapter if parts else "", reference=reference, claims=claims)


def load_file(path: Path, experiment: str) -> Registry:
    doc = read_yaml(path, "claims file")
    if not isinstance(doc.get("claims"), list):
        raise AttnlabError(f"claims file {path} must be a mapping with a 'claims' list")
    claims, seen = [], set()
    for i, entry in enumerate(doc["claims"]):
        claim = parse_claim(entry, where=f"{path.name} entry {i + 1}", experiment=experiment)
        if claim.id in seen:
            raise AttnlabError(f"claim {claim.id}: duplicate id in {path}")
        seen.add(claim.id)
        claims.append(claim)
    return Registry(chapter=doc.get("chapter", ""), reference=doc.get("reference") or {}, claims=claims)


def parse_claim(entry, where: str = "registry", experiment: str = "") -> Claim:
    if not isinstance(entry, dict) or not entry.get("id"):
        raise AttnlabError(f"{where}: every claim needs an 'id'")
    cid = str(entry["id"])

    def bad(msg):
        return AttnlabError(f"claim {cid}: {msg}")

    for key in ("claim", "chapter_value", "value", "check", "tolerance_note"):
        if key not in entry:
            raise bad(f"missing '{key}'")
    unknown = set(entry) - {"id", "claim", "chapter_value", "value", "check", "tolerance_note", "se"}
    if unknown:
        raise bad(f"unknown keys {sorted(unknown)}")
    value, check = entry["value"], entry["check"]
    if isinstance(value, dict):  # several named parts, each with its own check
        if not isinstance(check, dict) or set(check) != set(value):
            raise bad("'value' has parts " f"{sorted(value)}; 'check' must be a mapping with the same parts")
        values, checks = {str(k): v for k, v in value.items()}, {str(k): check[k] for k in value}
    else:
        values, checks = {"": value}, {"": check}
    chapter = entry["chapter_value"]
    if list(values) != [""] and not (isinstance(chapter, dict) and set(map(str, chapter)) <= set(values)):
        raise bad(f"'value' has parts {sorted(values)}; 'chapter_value' must name what the chapter says for "
                  "each part it covers, with the same part names")
    if list(values) == [""] and isinstance(chapter, dict):
        raise bad("'chapter_value' has parts but 'value' is one expression: give 'value' the same parts")
    claim = Claim(id=cid, claim=str(entry["claim"]), chapter_value=entry["chapter_value"],
                  values={}, checks={}, tolerance_note=str(entry["tolerance_note"]), experiment=experiment)
    for part, expr in values.items():
        label = f"value{'.' + part if part else ''}"
        if not isinstance(expr, str) or not expr.strip():
            raise bad(f"{label} must be an expression string")
        claim.values[part] = expr
        claim.code[part] = _compile(expr, claim, label)
        claim.checks[part] = _parse_check(checks[part], cid, part)
    se = entry.get("se")
    if se is not None:  # the sampling error a result file states for a value (e.g. a held-out accuracy's)
        se = {"": se} if list(values) == [""] and not isinstance(se, dict) else se
        if not isinstance(se, dict) or not set(map(str, se)) <= set(values):
            raise bad(f"'se' must name parts of 'value' ({sorted(values)}), one expression each")
        for part, expr in se.items():
            label = f"se{'.' + str(part) if part else ''}"
            if not isinstance(expr, str) or not expr.strip():
                raise bad(f"{label} must be an expression string")
            claim.se_code[str(part)] = _compile(expr, claim, label)
    return claim


def _compile(expr: str, claim: Claim, label: str):
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as err:
        raise AttnlabError(f"claim {claim.id}: {label} is not a valid expression: {err.msg}") from None
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    files = {e.name for e in experiments.load() if not e.trains}
    known = files | set(ROW_VIEWS) | set(SAFE_BUILTINS) | local
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise AttnlabError(f"claim {claim.id}: {label} uses {type(node).__name__}, which is not allowed")
        if isinstance(node, ast.Name) and node.id not in known:
            raise AttnlabError(f"claim {claim.id}: {label} uses unknown name '{node.id}'")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in SAFE_BUILTINS):
            raise AttnlabError(f"claim {claim.id}: {label} may only call {sorted(SAFE_BUILTINS)}")
        if isinstance(node, ast.Name) and node.id in files:
            claim.files.add(node.id)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in ROW_VIEWS:
            if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                raise AttnlabError(f"claim {claim.id}: {label}: write runs as literal strings, "
                                   f"e.g. {node.value.id}['L2']")
            claim.rows.add(node.slice.value)
            if node.value.id in NEEDS_TRAINED:
                claim.trained_rows.add(node.slice.value)
    for node in ast.walk(tree):  # a bare row view (e.g. `ppl`) would hide which rows are needed
        if isinstance(node, ast.Name) and node.id in ROW_VIEWS and not _is_subscripted(tree, node):
            raise AttnlabError(f"claim {claim.id}: {label}: '{node.id}' must be indexed by a row")
    return compile(tree, f"<claim {claim.id} {label}>", "eval")


def _is_subscripted(tree, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Subscript) and n.value is name for n in ast.walk(tree))


def _parse_check(check, cid: str, part: str) -> dict:
    label = f"check{'.' + part if part else ''}"
    if check == "is_true":
        check = {"is_true": None}
    if not isinstance(check, dict) or not check:
        raise AttnlabError(f"claim {cid}: {label} must be a mapping such as {{between: [3, 5]}}")
    kinds = set(check) & CHECKS
    if len(kinds) != 1:
        raise AttnlabError(f"claim {cid}: {label} needs exactly one of {sorted(CHECKS)}, got {sorted(check)}")
    kind = kinds.pop()
    extra = set(check) - {kind} - ({"rel_tol", "abs_tol"} if kind == "target" else set())
    if extra:
        raise AttnlabError(f"claim {cid}: {label}: unexpected keys {sorted(extra)} with '{kind}'")
    if kind == "between":
        band = check["between"]
        if not (isinstance(band, list) and len(band) == 2 and all(b is None or _is_num(b) for b in band)):
            raise AttnlabError(f"claim {cid}: {label}: 'between' needs [low, high] (null for an open end)")
    if kind == "target":
        tols = [k for k in ("rel_tol", "abs_tol") if k in check]
        if len(tols) != 1 or not _is_num(check["target"]) or not _is_num(check[tols[0]]) or check[tols[0]] < 0:
            raise AttnlabError(f"claim {cid}: {label}: 'target' needs a number and one of rel_tol/abs_tol >= 0")
    if kind in ("abs_le", *DIRECTIONS) and not _is_num(check[kind]):
        raise AttnlabError(f"claim {cid}: {label}: '{kind}' needs a number")
    return check


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def apply_check(check: dict, value, cid: str = "?", part: str = "", se: float | None = None) -> tuple[bool, str]:
    """Return (passed, a short human-readable reason). `se` is the value's standard error from the evaluation's
    sampling (0 for an exact count); a direction check needs it and passes only beyond MARGIN_SE of it."""
    kind = (set(check) & CHECKS).pop()
    if kind == "equals":
        want = check["equals"]
        same = _plain(value) == _plain(want)
        return same, f"{'equals' if same else 'differs from'} {fmt(want)}"
    if kind == "is_true":
        return value is True, "true" if value is True else f"expected true, got {fmt(value)}"
    if not _is_num(value) or not math.isfinite(value):
        label = f"value{'.' + part if part else ''}"
        raise AttnlabError(f"claim {cid}: {label} must be a finite number for a '{kind}' check, got {value!r}")
    if kind == "between":
        lo, hi = check["between"]
        passed = (lo is None or value >= lo) and (hi is None or value <= hi)
        band = f"[{'-∞' if lo is None else fmt(lo)}, {'∞' if hi is None else fmt(hi)}]"
        return passed, f"{fmt(value)} {'in' if passed else 'outside'} {band}"
    if kind in DIRECTIONS:
        if se is None:
            raise AttnlabError(f"claim {cid}: a '{kind}' check needs the value's standard error")
        bound, margin = check[kind], MARGIN_SE * se
        gap = value - bound if kind == "above" else bound - value
        passed = gap > margin
        sign = ">" if kind == "above" else "<"
        return passed, (f"{fmt(value)} {sign if passed else 'not clearly ' + sign} {fmt(bound)}: "
                        f"{'clears' if passed else 'within'} {MARGIN_SE} × SE = {fmt(margin)}")
    if kind == "abs_le":
        passed = abs(value) <= check["abs_le"]
        return passed, f"|{fmt(value)}| {'≤' if passed else '>'} {fmt(check['abs_le'])}"
    target = check["target"]
    tol = check["abs_tol"] if "abs_tol" in check else check["rel_tol"] * abs(target)
    passed = abs(value - target) <= tol
    lo, hi = target - tol, target + tol
    return passed, f"{fmt(value)} {'in' if passed else 'outside'} [{fmt(lo)}, {fmt(hi)}] ({fmt(target)} ± {fmt(tol)})"


def _plain(x):
    """Compare tuples and lists alike (JSON has only lists)."""
    return [_plain(v) for v in x] if isinstance(x, (list, tuple)) else x
