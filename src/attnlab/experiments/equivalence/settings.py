"""E9 · Equal to PyTorch: what a profile sets for `equivalence` (no torch: every check of a profile reads it)."""
from __future__ import annotations

SCHEMA = None  # no settings of its own
DEFAULTS = {}
