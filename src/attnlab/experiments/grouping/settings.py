"""S6 · Sharing keys and values: what a profile sets for `grouping` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml


SCHEMA = {"$ref": "#/$defs/runs",
          "description": "S6: multi-head, grouped-query and multi-query attention, from scratch and up-trained"}

# S6: one full block with 4 query heads and 4, 2 or 1 key/value heads; up-trained from multi-head
DEFAULTS = yaml.safe_load("""
  base: {mixer: multihead, position: learned, mlp: true, norm: pre}
  S6-mha: {}
  S6-gqa: {n_kv_heads: 2}
  S6-mqa: {n_kv_heads: 1}
  S6-gqa-up: {n_kv_heads: 2, init_from: S6-mha, train: {steps: 150}}  # 5 % of the chapter's 3000 steps
  S6-mqa-up: {n_kv_heads: 1, init_from: S6-mha, train: {steps: 150}}
""")
