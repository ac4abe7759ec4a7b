"""E4 · Pre- vs post-norm: what a profile sets for `depth` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml


SCHEMA = {"$ref": "#/$defs/runs",
          "description": "E4 (C4.1, C4.2): twelve blocks, pre- vs post-norm, with and without warmup, name -> run"}

# E4 (C4.1, C4.2): a deep stack at lr 3e-3, pre- vs post-norm, with and without warmup
DEFAULTS = yaml.safe_load("""
base: {mixer: multihead, position: learned, mlp: true, n_blocks: 12, train: {lr: 3.0e-3}}
E4-pre: {norm: pre}
E4-pre-warm: {norm: pre, train: {warmup_steps: 200}}
E4-post: {norm: post}
E4-post-warm: {norm: post, train: {warmup_steps: 200}}
""")
