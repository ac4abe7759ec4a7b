"""How a value reads in claims.csv, in a verdict's note and on the site: one compact, stable rendering."""
from __future__ import annotations

import json
import math


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


def as_text(value) -> str:
    """A value that is not a number, as text: a string as it is, anything else as JSON (true, ["a", "b"])."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def is_number(x) -> bool:
    """A number a check can take (an int or a float, not a bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)
