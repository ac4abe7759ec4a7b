"""Performance: what a profile sets for `throughput` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml


SCHEMA = yaml.safe_load(r"""
description: the throughput benchmark (ladder row L9 beside a plain PyTorch reference)
type: object
additionalProperties: false
default: {}
properties:
  steps: {type: integer, minimum: 1, default: 5}
  warmup: {type: integer, minimum: 0, default: 2}
  batch_size: {type: integer, minimum: 1, default: 8}
  compile: {type: boolean, default: true, description: "time the compiled settings too (on a CPU each compiles for a minute or more)"}
""")
DEFAULTS = {}

MANIFEST = {"throughput_ratio": "ratio_paired_median"}  # a version's manifest copies: attnlab / the fastest reference
