"""E1 · Averaging: what a profile sets for `averaging` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml

SCHEMA = yaml.safe_load(r"""
description: "E1: the sizes of the prefix average's exact checks (random vectors; no training)"
type: object
additionalProperties: false
default: {}
properties:
  n_shuffle: {type: integer, minimum: 2, default: 128,
              description: "vectors averaged, then averaged again shuffled: the average cannot tell the order"}
  T: {type: integer, minimum: 1, default: 6,
      description: "positions of the sequence the loop, the matrix and the softmax average"}
  d: {type: integer, minimum: 1, default: 32, description: width of every vector}
""")
DEFAULTS = {}
