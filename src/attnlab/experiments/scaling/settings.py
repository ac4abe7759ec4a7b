"""E3 · √d_k, trained: what a profile sets for `scaling` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml


SCHEMA = {"$ref": "#/$defs/runs",
          "description": "E3 (C3.4, C3.5): heads trained with and without dividing scores by sqrt(d_k), name -> run"}

# E3 (C3.4, C3.5): the same models with and without dividing scores by sqrt(d_k)
DEFAULTS = yaml.safe_load("""
base: {mixer: head, position: learned, mlp: true}  # the shorter setup: one head, no normalisation
# d_k = 32 in the chapter setup: the full block (ladder row L9 is its divided twin, and trains like it)
E3-block-raw: {mixer: multihead, norm: pre, scale: false, probe_every: null}
E3-h32-div: {d_k: 32}
E3-h32-raw: {d_k: 32, scale: false}
E3-h256-div: {d_k: 256}
E3-h256-raw: {d_k: 256, scale: false}
E3-h1024-div: {d_k: 1024}
E3-h1024-raw: {d_k: 1024, scale: false}
""")
