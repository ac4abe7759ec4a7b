"""E2 · The ladder: what a profile sets for `ladder` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml


REQUIRED = True  # a profile must have it (the other experiments read its runs)
SCHEMA = {"$ref": "#/$defs/runs", "description": "E2: ladder rows, name -> run"}

# E2: each row adds one piece to the one above
DEFAULTS = yaml.safe_load("""
L1: {}                                                        # embedding -> linear: no context
L2: {mixer: average, residual: false}                         # the prefix average replaces the token
L3: {mixer: average, residual: false, position: learned}      # ... with learned positions
L4: {mixer: average, position: learned}                       # the average is added to the token
L5: {mixer: head, residual: false, position: learned}         # one learned head, replacing
L6: {mixer: head, position: learned}                          # one learned head, added
L7: {mixer: multihead, position: learned}                     # four heads + output projection
L8: {mixer: multihead, position: learned, mlp: true}          # + position-wise MLP
L9: {mixer: multihead, position: learned, mlp: true, norm: pre}               # + pre-norm: one full block
B2: {mixer: multihead, position: learned, mlp: true, norm: pre, n_blocks: 2}  # two full blocks
""")
