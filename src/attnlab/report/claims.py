"""The claims registry: load it, gather run files, compute a verdict for every claim.

A claim's reproduced value is a small Python expression over the run files
(see claims/*.yaml). Expressions are checked when the registry loads:
only a whitelist of syntax, only the names below, and ladder rows written as
literal strings, so that the inputs a claim needs are known before anything
is evaluated. That is what lets a missing run become "not run" (naming the
file) and a diverged run become "diverged", instead of a crash or a guess.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from attnlab.config import read_yaml
from attnlab.errors import AttnlabError
from attnlab.provenance import read_json

COLUMNS = ["claim_id", "chapter_value", "reproduced_value", "verdict", "note"]
VERDICTS = ("reproduced", "not reproduced", "not run", "diverged")
PAGES = {"C0": "data", "C1": "averaging", "C2": "ladder", "C3": "scaling", "C7": "params", "C9": "equivalence",
         "S3": "equivalence", "S4": "multihead"}

SAFE_BUILTINS = {f.__name__: f for f in (abs, min, max, round, len, all, any, sum, range, enumerate)}
ROW_VIEWS = {  # name in expressions -> field of <experiment>/<run>/metrics.json (runs are named uniquely)
    "ppl": "val_ppl",
    "train_ppl": "train_ppl",
    "params": "n_params",
    "breakdown": "param_breakdown",
    "probe_start": "probes_first",  # attention probes at step 0 (runs with probe_every)
    "probe_end": "probes_last",     # ... and at the last probed step
    "ppl_at": "val_ppl_at",         # {"64": ppl, ...}: the trained model read through other windows (E5)
}
NEEDS_TRAINED = {"ppl", "train_ppl", "probe_end", "ppl_at"}  # these are meaningless for a diverged run
FILES = {  # name in expressions -> analysis file (no training) under results/<profile>/
    "stats": "data/stats.json",
    "e1": "e1/averaging.json",
    "bench": "bench/throughput.json",
    "e3": "e3/scores.json",
    "e7": "e7/params.json",
    "e9": "e9/equivalence.json",
    "s4": "s4/multihead.json",
}
CHECKS = {"equals", "between", "target", "abs_le", "is_true"}

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
    page: str | None
    files: set[str] = field(default_factory=set)      # FILES keys it reads
    rows: set[str] = field(default_factory=set)       # ladder rows it reads
    trained_rows: set[str] = field(default_factory=set)  # rows whose ppl it reads
    code: dict = field(default_factory=dict, repr=False)


@dataclass
class Registry:
    chapter: str
    reference: dict
    claims: list[Claim]

    def by_id(self, claim_id: str) -> Claim:
        return next(c for c in self.claims if c.id == claim_id)


def load_registry(path: str | Path) -> Registry:
    """One registry file, or a folder of them (claims/*.yaml, merged in name order)."""
    path = Path(path)
    if path.is_dir():
        parts = [load_registry(p) for p in sorted(path.glob("*.yaml"))]
        if not parts:
            raise AttnlabError(f"claims folder {path} holds no *.yaml registry")
        claims = [c for part in parts for c in part.claims]
        dup = sorted({c.id for c in claims if sum(d.id == c.id for d in claims) > 1})
        if dup:
            raise AttnlabError(f"claim {dup[0]}: duplicate id across {path}/*.yaml")
        reference = {}
        for part in parts:
            for key, value in part.reference.items():
                reference.setdefault(key, {}).update(value)
        return Registry(chapter=parts[0].chapter, reference=reference, claims=claims)
    doc = read_yaml(path, "claims registry")
    if not isinstance(doc.get("claims"), list):
        raise AttnlabError(f"claims registry {path} must be a mapping with a 'claims' list")
    claims, seen = [], set()
    for i, entry in enumerate(doc["claims"]):
        claim = parse_claim(entry, where=f"{path.name} entry {i + 1}")
        if claim.id in seen:
            raise AttnlabError(f"claim {claim.id}: duplicate id in {path}")
        seen.add(claim.id)
        claims.append(claim)
    return Registry(chapter=doc.get("chapter", ""), reference=doc.get("reference") or {}, claims=claims)


def parse_claim(entry, where: str = "registry") -> Claim:
    if not isinstance(entry, dict) or not entry.get("id"):
        raise AttnlabError(f"{where}: every claim needs an 'id'")
    cid = str(entry["id"])

    def bad(msg):
        return AttnlabError(f"claim {cid}: {msg}")

    for key in ("claim", "chapter_value", "value", "check", "tolerance_note"):
        if key not in entry:
            raise bad(f"missing '{key}'")
    unknown = set(entry) - {"id", "page", "claim", "chapter_value", "value", "check", "tolerance_note"}
    if unknown:
        raise bad(f"unknown keys {sorted(unknown)}")
    value, check = entry["value"], entry["check"]
    if isinstance(value, dict):  # several named parts, each with its own check
        if not isinstance(check, dict) or set(check) != set(value):
            raise bad("'value' has parts " f"{sorted(value)}; 'check' must be a mapping with the same parts")
        values, checks = {str(k): v for k, v in value.items()}, {str(k): check[k] for k in value}
    else:
        values, checks = {"": value}, {"": check}
    claim = Claim(id=cid, claim=str(entry["claim"]), chapter_value=entry["chapter_value"],
                  values={}, checks={}, tolerance_note=str(entry["tolerance_note"]),
                  page=entry.get("page") or PAGES.get(cid.split(".")[0]))
    for part, expr in values.items():
        label = f"value{'.' + part if part else ''}"
        if not isinstance(expr, str) or not expr.strip():
            raise bad(f"{label} must be an expression string")
        claim.values[part] = expr
        claim.code[part] = _compile(expr, claim, label)
        claim.checks[part] = _parse_check(checks[part], cid, part)
    return claim


def _compile(expr: str, claim: Claim, label: str):
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as err:
        raise AttnlabError(f"claim {claim.id}: {label} is not a valid expression: {err.msg}") from None
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    known = set(FILES) | set(ROW_VIEWS) | set(SAFE_BUILTINS) | local
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise AttnlabError(f"claim {claim.id}: {label} uses {type(node).__name__}, which is not allowed")
        if isinstance(node, ast.Name) and node.id not in known:
            raise AttnlabError(f"claim {claim.id}: {label} uses unknown name '{node.id}'")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in SAFE_BUILTINS):
            raise AttnlabError(f"claim {claim.id}: {label} may only call {sorted(SAFE_BUILTINS)}")
        if isinstance(node, ast.Name) and node.id in FILES:
            claim.files.add(node.id)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in ROW_VIEWS:
            if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                raise AttnlabError(f"claim {claim.id}: {label}: write ladder rows as literal strings, "
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
    if kind == "abs_le" and not _is_num(check["abs_le"]):
        raise AttnlabError(f"claim {cid}: {label}: 'abs_le' needs a number")
    return check


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# ------------------------------------------------------------------ results

@dataclass
class Results:
    """Everything the report reads from results/<profile>/, with missing files simply absent."""

    root: Path
    files: dict[str, dict] = field(default_factory=dict)      # FILES key -> parsed JSON
    runs: dict[str, dict] = field(default_factory=dict)       # run name -> metrics.json
    run_paths: dict[str, str] = field(default_factory=dict)   # run name -> path relative to root

    def __getattr__(self, name):  # res.stats, res.e1, ... -> the parsed file or None
        if name in FILES:
            return self.files.get(name)
        raise AttributeError(name)

    @property
    def ladder(self) -> dict[str, dict]:
        return {name: m for name, m in self.runs.items() if self.run_paths[name].startswith("ladder/")}

    def experiment(self, folder: str) -> dict[str, dict]:
        """The runs under results/<profile>/<folder>/, by name."""
        return {n: m for n, m in self.runs.items() if self.run_paths[n].startswith(folder + "/")}

    def path(self, what: str, row: str | None = None) -> str:
        """Path of a run file relative to the results root, as shown in notes."""
        if what == "ladder":
            from attnlab.report.tables import ROWS

            return self.run_paths.get(row, f"{'ladder' if row in ROWS else '*'}/{row}/metrics.json")
        return FILES[what]

    def data(self, what: str) -> dict | None:
        return self.files.get(what)

    def provenance(self) -> dict[str, dict]:
        """Run file (relative path) -> its provenance, for every file present."""
        out = {FILES[what]: (d.get("provenance") or {}) for what, d in self.files.items()}
        for name, m in self.runs.items():
            out[self.run_paths[name]] = m.get("provenance") or {}
        return out


def gather(results_dir: str | Path) -> Results:
    root = Path(results_dir)
    res = Results(root=root)
    for what, rel in FILES.items():
        if (root / rel).is_file():
            res.files[what] = _read(root / rel)
    for path in sorted(root.glob("*/*/metrics.json")):
        name = path.parent.name
        if name in res.runs:
            raise AttnlabError(f"two runs are named '{name}': {res.run_paths[name]} and "
                               f"{path.relative_to(root)}; run names must be unique across experiments")
        res.runs[name] = _read(path)
        res.run_paths[name] = str(path.relative_to(root))
    return res


def _read(path: Path) -> dict:
    try:
        return read_json(path)
    except ValueError as err:
        raise AttnlabError(f"run file {path} is not valid JSON: {err}") from None


def diverged(metrics: dict) -> bool:
    if metrics.get("status") == "diverged":
        return True
    val = metrics.get("val_ppl")
    return isinstance(val, float) and not math.isfinite(val)


# ----------------------------------------------------------------- verdicts

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
    missing = [res.path(w) for w in sorted(claim.files) if res.data(w) is None]
    missing += [res.path("ladder", r) for r in sorted(claim.rows) if r not in res.runs]
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


def apply_check(check: dict, value, cid: str = "?", part: str = "") -> tuple[bool, str]:
    """Return (passed, a short human-readable reason)."""
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


def fmt(x, max_str: int | None = None) -> str:
    """A compact, stable rendering of a value for tables and CSV (long strings cut to max_str for pages)."""
    if isinstance(x, dict):
        return "; ".join(f"{k}={fmt(v, max_str)}" for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(repr(v) if isinstance(v, str) else fmt(v, max_str) for v in x) + "]"
    if isinstance(x, str) and max_str and len(x) > max_str:
        return x[:max_str] + "…"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        if x == int(x) and abs(x) < 1e9:
            return str(int(x))
        if 1e3 <= abs(x) < 1e9:  # large counts: keep every digit, one decimal at most
            return f"{x:.1f}".rstrip("0").rstrip(".")
        return f"{x:.4g}" if 1e-3 <= abs(x) < 1e3 else f"{x:.3g}"
    return "" if x is None else str(x)


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
