"""A claim's expression language: a small Python expression over the run files (see src/attnlab/claims/README.md).

Expressions are checked when the registry loads: only a whitelist of syntax, only the names below, and runs
written as literal strings, so that the inputs a claim needs are known before anything is evaluated. That is what
lets a missing run become "not run" (naming the file) and a diverged run become "diverged", instead of a crash or a
guess. Evaluated on a scope of the run files (`scope`), with nothing else in reach.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from attnlab import registry
from attnlab.claims.functions import SAFE_BUILTINS
from attnlab.errors import AttnlabError
from attnlab.results import Results
from attnlab.stats import ppl_without

if TYPE_CHECKING:
    from attnlab.claims.registry import Claim

ROW_VIEWS = {  # name in expressions -> field of a training run's run file (runs are named uniquely)
    "ppl": "val_ppl",
    "train_ppl": "train_ppl",
    "n_params": "n_params",
    "breakdown": "param_breakdown",
    "probe_start": "probes_first",  # attention probes at step 0 (runs with probe_every)
    "probe_end": "probes_last",     # ... and at the last probed step
    "ppl_at": "val_ppl_at",         # {"64": ppl, ...}: the trained model read through other windows (E5)
}
NEEDS_TRAINED = {"ppl", "train_ppl", "probe_end", "ppl_at"}  # these are meaningless for a diverged run
SAMPLED_VIEWS = {"ppl", "train_ppl", "ppl_at"}  # the views the evaluation's jackknife re-reads

_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Store, ast.Subscript, ast.Slice,
    ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
    ast.keyword, ast.GeneratorExp, ast.ListComp, ast.comprehension,
    ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)


def compile_expression(expr: str, claim: Claim, label: str):
    """`expr` checked and compiled; what it reads (result files, their keys, runs) recorded on `claim`."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as err:
        raise AttnlabError(f"claim {claim.id}: {label} is not a valid expression: {err.msg}") from None
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    files = {e.name for e in registry.load() if not e.trains}
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
    for name, keys in read_keys(tree, files).items():
        claim.keys[name] = None if keys is None or claim.keys.get(name, set()) is None \
            else claim.keys.get(name, set()) | keys
    for node in ast.walk(tree):  # a bare row view (e.g. `ppl`) would hide which rows are needed
        if isinstance(node, ast.Name) and node.id in ROW_VIEWS and not _is_subscripted(tree, node):
            raise AttnlabError(f"claim {claim.id}: {label}: '{node.id}' must be indexed by a row")
    return compile(tree, f"<claim {claim.id} {label}>", "eval")


def read_keys(tree, files: set[str]) -> dict[str, set | None]:
    """Result file -> the top-level keys an expression reads from it (`f['key']...`, `'key' in f`), None where it
    uses the file otherwise. A result file that holds some keys per seed (`by_seed`) makes a claim seeded only
    when the claim reads one of those (attnlab.results.Results.common_seeds)."""
    parent = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in files:
            key, up = None, parent.get(id(node))
            if isinstance(up, ast.Subscript) and up.value is node and _is_str(up.slice):
                key = up.slice.value
            elif isinstance(up, ast.Compare) and up.comparators == [node] and _is_str(up.left) \
                    and isinstance(up.ops[0], (ast.In, ast.NotIn)):
                key = up.left.value
            out[node.id] = None if key is None or out.get(node.id, set()) is None else out.get(node.id, set()) | {key}
    return out


def _is_str(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_subscripted(tree, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Subscript) and n.value is name for n in ast.walk(tree))


def lacking_fields(expressions: list[str], scope: dict) -> tuple:
    """The fields these claim expressions test for (`'field' in ...`) that occur nowhere in what they read: a run
    file written before its producer recorded them. () where every field tested for is there."""
    tested, names = [], set()
    for tree in map(ast.parse, expressions):
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
                    and isinstance(node.left.value, str) and isinstance(node.ops[0], ast.In)):
                tested.append(node.left.value)
    present = set().union(*(keys_in(scope[n]) for n in names if n in scope and n != "__builtins__"))
    return tuple(dict.fromkeys(f for f in tested if f not in present))


def keys_in(value) -> set:
    """Every mapping key anywhere inside a run file's value."""
    if isinstance(value, dict):
        return set(value).union(*(keys_in(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_in(v) for v in value))
    return set()


def scope_of(res: Results, drop: int | None = None) -> dict:
    """What expressions see; with `drop`, every evaluation is re-read without its block number `drop`."""
    scope = {"__builtins__": SAFE_BUILTINS, **res.files}
    for name, key in ROW_VIEWS.items():
        scope[name] = {row: m.get(key) for row, m in res.runs.items()}
    if drop is None:
        return scope
    for row, m in res.runs.items():
        ev = m.get("eval") or {}
        if ev.get("val_blocks"):
            scope["ppl"][row] = without(ev["val_blocks"], drop)
            scope["train_ppl"][row] = without(ev["train_blocks"], drop)
        if ev.get("val_blocks_at"):
            scope["ppl_at"][row] = {w: without(b, drop) for w, b in ev["val_blocks_at"].items()}
    return scope


_LEAVE_ONE_OUT: dict[int, tuple[list, list[float]]] = {}


def without(blocks: list, drop: int) -> float:
    """ppl_without(blocks, drop), each evaluation's replicates worked out once: a jackknife asks for the same
    ones for every claim, part and seed that reads the run (most of a site's build time, before)."""
    hit = _LEAVE_ONE_OUT.get(id(blocks))
    if hit is None or hit[0] is not blocks:  # held with its list, so that no other list takes its id meanwhile
        if len(_LEAVE_ONE_OUT) > 50_000:
            _LEAVE_ONE_OUT.clear()
        hit = _LEAVE_ONE_OUT[id(blocks)] = (blocks, [ppl_without(blocks, i) for i in range(len(blocks) + 1)])
    return hit[1][min(drop, len(blocks))]  # past the last block nothing is left out (as ppl_without reads it)


def reason_of(claim: Claim, scope: dict) -> str | None:
    """Why the claim's null value was not measured, from its `not_run_reason` expression (None: it says nothing,
    or the claim has none)."""
    if claim.reason_code is None:
        return None
    try:
        reason = eval(claim.reason_code, scope, {})  # noqa: S307 - whitelisted syntax and names
    except (KeyError, IndexError, TypeError) as err:
        raise AttnlabError(f"claim {claim.id}: not_run_reason failed on the run files ({type(err).__name__}: "
                           f"{err}); does a producer write that field?") from None
    return reason if isinstance(reason, str) and reason else None


def value_of(claim: Claim, part: str, code, scope: dict, what: str = "value"):
    """A part's value (or, `what`="se", its stated error) on a scope; one line naming the claim where it fails."""
    try:
        return eval(code, scope, {})  # noqa: S307 - whitelisted syntax and names
    except (KeyError, IndexError, TypeError, ZeroDivisionError, ValueError) as err:
        label = f"{what}{'.' + part if part else ''}"
        raise AttnlabError(f"claim {claim.id}: {label} (for {claim.values[part]!r}) failed on the run files "
                           f"({type(err).__name__}: {err}); does a producer write that field?") from None
