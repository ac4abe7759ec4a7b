"""E1 · Averaging: what a profile sets for `averaging` (no torch: every check of a profile reads it)."""
from __future__ import annotations

SCHEMA = None  # no settings of its own
DEFAULTS = {}
