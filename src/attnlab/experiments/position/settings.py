"""E5 · Position and length: what a profile sets for `position` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml


SCHEMA = {"$ref": "#/$defs/runs",
          "description": "E5 (C5.1-C5.4): position encodings trained on short windows, read through longer ones"}

# E5 (C5.1-C5.4): one full block trained on windows of 64, read through 64, 128 and 256
DEFAULTS = yaml.safe_load("""
base: {mixer: multihead, mlp: true, norm: pre, context: 64, train: {eval_contexts: [64, 128, 256]}}
E5-learned: {position: learned, max_positions: 256}
E5-sinusoidal: {position: sinusoidal}
E5-rope: {position: rope}
E5-alibi: {position: alibi}
E5-none: {position: none}
""")
