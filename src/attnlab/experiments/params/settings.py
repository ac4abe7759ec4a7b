"""E7 · Parameter accounting: what a profile sets for `params` (no torch: every check of a profile reads it)."""
from __future__ import annotations

SCHEMA = None  # no settings of its own
DEFAULTS = {}
