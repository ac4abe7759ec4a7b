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
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

from attnlab import registry
from attnlab import stats
from attnlab.config import read_yaml
from attnlab.errors import AttnlabError
from attnlab.report.format import fmt
from attnlab.stats import binomial_se, t_quantile

# binomial_se: a stated fraction's error from the fraction and its count, for run files that record only those
SAFE_BUILTINS = {f.__name__: f for f in (abs, min, max, round, len, all, any, sum, range, enumerate, binomial_se)}


# ----------------------------------------------------------------- errors the stored rows allow
# Names expressions may call besides the builtins: a mean over draws (seeds, initialisations) and the error of a
# power law's log-log slope, each error as [se, degrees of freedom] for an `se:` expression (k is then Student's t).

def _mean(xs) -> float:
    return stats.mean_se(list(xs))[0]


def _sem(xs) -> list | None:
    """The standard error of the mean of n independent draws (seeds, initialisations): [sd / √n, n − 1]; None
    from one draw, which has no spread."""
    xs = list(xs)
    return [stats.mean_se(xs)[1], len(xs) - 1] if len(xs) > 1 else None


def _slope_se(xs, ys, last: int | None = None) -> list | None:
    """The residual standard error of the log-log slope stats.log_fit fits (the points with y > 0, the last `last`
    of them): [se, n − 2]; None from fewer than three points, whose residuals say nothing."""
    fit = stats.log_fit(list(xs), list(ys), last)
    return [fit["se"], fit["n"] - 2] if fit and fit["se"] is not None else None


def _ratio_se(a: dict, b: dict) -> float:
    """The delta method's standard error of a / b for two estimates, each {"mean", "se"}, taken as independent:
    √(se_a² + (a/b)²·se_b²) / |b| (positively correlated ones vary less, so this errs wide)."""
    r = a["mean"] / b["mean"]
    return math.sqrt(a["se"] ** 2 + r ** 2 * b["se"] ** 2) / abs(b["mean"])


class SeedMean(list):
    """A stated error of a mean over `seeds` seeds, as [se, df]. `spread`: the error is the seeds' own spread
    (sd / √n, at n − 1 degrees of freedom), which more seeds shrink, so it is no sampling error and seeds settle
    it; else a held-out sampling error won (normal), which seeds do not shrink. Either way the mean is over
    `seeds` seeds (claims.csv's n_seeds)."""

    def __init__(self, se: float, df: float, seeds: int, spread: bool):
        super().__init__([se, df])
        self.seeds, self.spread = seeds, spread


def _seed_se(se: float | None, n: int, from_seeds: bool = True) -> SeedMean | None:
    """A producer's recorded error of a mean over n seeds (the profile's seeds, or a sweep's initialisations) as a
    stated one: [se, n − 1], so that k is Student's t there, a spread of the seeds; normal where `from_seeds` is
    false (a held-out sampling error won)."""
    return None if se is None else SeedMean(se, n - 1 if from_seeds else math.inf, n, from_seeds)


def _draws_se(se: float | None, n: int) -> list | None:
    """A producer's recorded error of a mean over n draws of its inputs (not seeds of a training): [se, n − 1]."""
    return None if se is None else [se, n - 1]


def _seeds_sem(xs) -> SeedMean | None:
    """sem(xs) for draws that are seeds (one value per seed or initialisation): the seeds' spread, which more seeds
    shrink."""
    xs = list(xs)
    return None if len(xs) < 2 else _seed_se(stats.mean_se(xs)[1], len(xs))


def _paired_se(d: dict) -> list | float | None:
    """A paired difference's record ({se, seeds, se_from}: attnlab.experiments.seq2seq.paired) as a stated error:
    at seeds − 1 degrees of freedom where the seeds' spread is the larger source, normal where the held-out
    sampling error is."""
    return _seed_se(d["se"], d["seeds"], d["se_from"] == "seeds")


def _fit_se(se: float | None, n: int, from_fit: bool = True) -> list | float | None:
    """A producer's recorded residual error of a line through n points as a stated one: [se, n − 2]."""
    return [se, n - 2] if se is not None and from_fit else se


def _gmean(xs) -> float:
    """The geometric mean of positive draws (ratios): 10 to the mean of their log10, the mean that decades add."""
    return 10 ** _mean(math.log10(x) for x in xs)


def _gsem(xs) -> list | None:
    """The delta method's standard error of _gmean over n independent draws: gmean · ln 10 · sem(log10), at n − 1
    degrees of freedom; None from one draw."""
    xs = list(xs)
    logs = _sem(math.log10(x) for x in xs)
    return None if logs is None else [_gmean(xs) * math.log(10) * logs[0], logs[1]]


def _seeds_gsem(xs) -> SeedMean | None:
    """gsem(xs) for draws that are seeds: the seeds' spread, which more seeds shrink."""
    xs = list(xs)
    out = _gsem(xs)
    return None if out is None else _seed_se(out[0], len(xs))


SAFE_BUILTINS |= {"log10": math.log10, "zip": zip, "mean": _mean, "sem": _sem, "slope_se": _slope_se,
                  "ratio_se": _ratio_se, "seed_se": _seed_se, "paired_se": _paired_se,
                  "fit_se": _fit_se, "gmean": _gmean, "gsem": _gsem, "draws_se": _draws_se,
                  "seeds_sem": _seeds_sem, "seeds_gsem": _seeds_gsem}
# ----------------------------------------------------------------- (end of the errors the stored rows allow)

# ----------------------------------------------------------------- errors of per-example lists (S9)
# For `se:` on a result's per-example lists (None where an example has no value): the error of the gap between
# two accuracies on the same examples (paired, or the largest where the pairing was not recorded), a bootstrap of
# a ratio of medians.
SAFE_BUILTINS |= {f.__name__: f for f in (stats.paired_gap_se, stats.se_median_ratio)}
# ----------------------------------------------------------------- (end of the errors of per-example lists)

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
DIRECTIONS = {"above", "below"}  # checks of a direction: a tie passes nothing
KINDS = ("measured", "computed", "descriptive")  # computed: arithmetic on the settings or a fixed count, judged
# without noise; descriptive: shown beside the claim, tested by nothing (a number the source's statement does not fix)
ORIGINS = ("source", "ours")  # whose statement a claim tests: the chapter's or the survey's, or the project's own
SAMPLED_VIEWS = {"ppl", "train_ppl", "ppl_at"}  # the views the evaluation's jackknife re-reads

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
    keys: dict = field(default_factory=dict)          # result file -> the top-level keys it reads (None: all)
    rows: set[str] = field(default_factory=set)       # training runs it reads
    trained_rows: set[str] = field(default_factory=set)  # rows whose ppl it reads
    code: dict = field(default_factory=dict, repr=False)
    se_code: dict = field(default_factory=dict, repr=False)  # part -> expression of its standard error ('se:')
    kinds: dict = field(default_factory=dict)         # part -> "measured" or "computed"
    sampled: set[str] = field(default_factory=set)    # parts that read a perplexity (the jackknife's to vary)
    origin: str = "source"  # "ours": a statement the sources never make, the project's own finding
    reason_code: object = field(default=None, repr=False)  # 'not_run_reason': why a null value was not measured

    @property
    def kind(self) -> str:
        """"computed" when every tested part is (the claim is then judged holds / fails, apart from the measured
        ones); "descriptive" when no part is tested; else "measured"."""
        tested = [k for k in self.kinds.values() if k != "descriptive"]
        if not tested:
            return "descriptive"
        return "computed" if all(k == "computed" for k in tested) else "measured"

    @property
    def ours(self) -> bool:
        return self.origin == "ours"


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
    parts = [load_file(folder / f"{e.name}.yaml", e.name) for e in registry.load() if e.claims]
    stray = sorted(p.name for p in folder.glob("*.yaml") if p.stem not in {e.name for e in registry.load()})
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
    unknown = set(entry) - {"id", "claim", "chapter_value", "value", "check", "tolerance_note", "se", "kind", "origin",
                            "not_run_reason"}
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
    origin = entry.get("origin", "source")
    if origin not in ORIGINS:
        raise bad(f"'origin' must be one of {list(ORIGINS)} (ours: a statement the sources never make), got {origin!r}")
    claim = Claim(id=cid, claim=str(entry["claim"]), chapter_value=entry["chapter_value"],
                  values={}, checks={}, tolerance_note=str(entry["tolerance_note"]), experiment=experiment,
                  origin=origin)
    claim.kinds = _parse_kind(entry.get("kind", "measured"), list(values), bad)
    for part, expr in values.items():
        label = f"value{'.' + part if part else ''}"
        if not isinstance(expr, str) or not expr.strip():
            raise bad(f"{label} must be an expression string")
        claim.values[part] = expr
        claim.code[part] = _compile(expr, claim, label)
        claim.checks[part] = _descriptive_check(checks[part], part, bad) if claim.kinds[part] == "descriptive" \
            else _parse_check(checks[part], cid, part)
        if {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)} & SAMPLED_VIEWS:
            claim.sampled.add(part)
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
    reason = entry.get("not_run_reason")
    if reason is not None:  # why a value is null, where the run file says (e.g. sizes a CPU did not run)
        if not isinstance(reason, str) or not reason.strip():
            raise bad("not_run_reason must be an expression string")
        claim.reason_code = _compile(reason, claim, "not_run_reason")
    return claim


def _descriptive_check(check, part: str, bad) -> dict:
    """A descriptive part is tested by nothing: its check must be null, so that no test is shown that is not run."""
    if check is not None:
        raise bad(f"check{'.' + part if part else ''}: a descriptive part is tested by nothing; give it check null")
    return {}


def _parse_kind(kind, parts: list[str], bad) -> dict[str, str]:
    """`kind: computed` (the whole claim) or `kind: {part: computed, ...}` (those parts; the rest measured)."""
    if isinstance(kind, str):
        kind = {p: kind for p in parts}
    if not isinstance(kind, dict) or not set(map(str, kind)) <= set(parts):
        raise bad(f"'kind' must be one of {list(KINDS)} or a mapping part -> kind over the parts {sorted(parts)}")
    if set(kind.values()) - set(KINDS):
        raise bad(f"'kind' must be one of {list(KINDS)}, got {sorted(set(kind.values()) - set(KINDS))}")
    return {p: str(kind.get(p, "measured")) for p in parts}


def _compile(expr: str, claim: Claim, label: str):
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


# ------------------------------------------------------------------ the interval rule

# Student's t, two-sided 95 %, at 1..30 degrees of freedom (beyond 30, and for a stated binomial error, the normal
# 1.96). Three seeds give 2 degrees of freedom: their spread is itself so uncertain that 95 % needs 4.3 errors.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
COVERAGE = "95 %"
EXACT = {"equals", "is_true"}  # tests of an exact value: judged on the value itself, never on an interval


def t95(df: float) -> float:
    """The k of value ± k·SE: Student's t two-sided 95 % quantile at `df` degrees of freedom (inf: normal)."""
    if df < 1:
        raise AttnlabError(f"no interval at {df} degrees of freedom")
    return T95[int(df) - 1] if df <= len(T95) else 1.96


@functools.lru_cache(maxsize=65536)
def k_at(df: float, level: float) -> float:
    """The k of value ± k·SE at a two-sided `level` (0.05: 95 %): Student's t at `df` degrees of freedom, which
    may be fractional; inf: the normal."""
    if df < 1:
        raise AttnlabError(f"no interval at {df} degrees of freedom")
    return t_quantile(level, df)


def accepts(check: dict) -> tuple[float, float, bool]:
    """A numeric test as the values it accepts: (low, high, strict); strict: the ends themselves fail."""
    kind = (set(check) & CHECKS).pop()
    inf = math.inf
    if kind == "above":
        return check["above"], inf, True
    if kind == "below":
        return -inf, check["below"], True
    if kind == "between":
        lo, hi = check["between"]
        return (-inf if lo is None else lo), (inf if hi is None else hi), False
    if kind == "abs_le":
        return -check["abs_le"], check["abs_le"], False
    tol = check["abs_tol"] if "abs_tol" in check else check["rel_tol"] * abs(check["target"])
    return check["target"] - tol, check["target"] + tol, False


def describe(check: dict) -> str:
    """The test in words, e.g. 'v > 0', 'v in [3, 5]', '|v| ≤ 1e-05'."""
    kind = (set(check) & CHECKS).pop()
    if kind == "equals":
        return f"v = {fmt(check['equals'])}"
    if kind == "is_true":
        return "v = true"
    if kind in ("above", "below"):
        return f"v {'>' if kind == 'above' else '<'} {fmt(check[kind])}"
    if kind == "abs_le":
        return f"|v| ≤ {fmt(check['abs_le'])}"
    low, high, _ = accepts(check)
    band = f"[{'-∞' if low == -math.inf else fmt(low)}, {'∞' if high == math.inf else fmt(high)}]"
    tolerance = f" ({fmt(check['target'])}, tolerance ± {fmt(high - check['target'])})" if kind == "target" else ""
    return f"v in {band}{tolerance}"


def passes(check: dict, value) -> bool:
    """The test on one value, no noise (a computed value, a per-seed point, an exact test)."""
    kind = (set(check) & CHECKS).pop()
    if kind == "equals":
        return _plain(value) == _plain(check["equals"])
    if kind == "is_true":
        return value is True
    low, high, strict = accepts(check)
    return low < value < high if strict else low <= value <= high


def judge(check: dict, value, lo: float | None = None, hi: float | None = None) -> str:
    """'pass', 'fail' or 'straddle': the interval [lo, hi] around a value against a numeric test (the whole
    interval passes, the whole of it fails, or it holds a bound); without an interval, the value alone."""
    if lo is None or set(check) & EXACT:
        return "pass" if passes(check, value) else "fail"
    if passes(check, lo) and passes(check, hi):
        return "pass"
    low, high, strict = accepts(check)
    outside = (hi <= low or lo >= high) if strict else (hi < low or lo > high)
    return "fail" if outside else "straddle"


def distance(check: dict, value: float) -> float:
    """How far a value lies from the nearest bound of its numeric test: what k·SE must stay under to decide."""
    return min(abs(value - b) for b in accepts(check)[:2] if math.isfinite(b))


def check_value(check: dict, value, cid: str = "?", part: str = "") -> None:
    """A numeric test needs a finite number."""
    if set(check) & EXACT:
        return
    if not _is_num(value) or not math.isfinite(value):
        label = f"value{'.' + part if part else ''}"
        kind = (set(check) & CHECKS).pop()
        raise AttnlabError(f"claim {cid}: {label} must be a finite number for a '{kind}' check, got {value!r}")


def _plain(x):
    """Compare tuples and lists alike (JSON has only lists)."""
    return [_plain(v) for v in x] if isinstance(x, (list, tuple)) else x
