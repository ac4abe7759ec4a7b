"""A claim's checks: parsed from claims/*.yaml, said in words, and passed or failed by a value or an interval."""
from __future__ import annotations

import math

from attnlab.claims.text import fmt, is_number
from attnlab.errors import AttnlabError

CHECKS = {"equals", "between", "target", "abs_le", "is_true", "above", "below"}
DIRECTIONS = {"above", "below"}  # checks of a direction: a tie passes nothing
EXACT = {"equals", "is_true"}  # tests of an exact value: judged on the value itself, never on an interval


def parse_check(check, cid: str, part: str) -> dict:
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
        if not (isinstance(band, list) and len(band) == 2 and all(b is None or is_number(b) for b in band)):
            raise AttnlabError(f"claim {cid}: {label}: 'between' needs [low, high] (null for an open end)")
    if kind == "target":
        tols = [k for k in ("rel_tol", "abs_tol") if k in check]
        if len(tols) != 1 or not is_number(check["target"]) or not is_number(check[tols[0]]) or check[tols[0]] < 0:
            raise AttnlabError(f"claim {cid}: {label}: 'target' needs a number and one of rel_tol/abs_tol >= 0")
    if kind in ("abs_le", *DIRECTIONS) and not is_number(check[kind]):
        raise AttnlabError(f"claim {cid}: {label}: '{kind}' needs a number")
    return check


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
    if not is_number(value) or not math.isfinite(value):
        label = f"value{'.' + part if part else ''}"
        kind = (set(check) & CHECKS).pop()
        raise AttnlabError(f"claim {cid}: {label} must be a finite number for a '{kind}' check, got {value!r}")


def _plain(x):
    """Compare tuples and lists alike (JSON has only lists)."""
    return [_plain(v) for v in x] if isinstance(x, (list, tuple)) else x
