"""E3 · Why divide by √d_k: what a profile sets for `scores` (no torch: every check of a profile reads it)."""
from __future__ import annotations

SCHEMA = None  # no settings of its own
DEFAULTS = {}
