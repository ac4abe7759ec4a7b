"""S4 · Multi-head cost: what a profile sets for `multihead` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml

from attnlab.errors import AttnlabError


SCHEMA = yaml.safe_load(r"""
description: "S4: one attention layer, one head of width d against h heads of d/h"
type: object
additionalProperties: false
default: {}
properties:
  d_model: {type: integer, minimum: 1, default: 256}
  context: {type: integer, minimum: 1, default: 256}
  batch_size: {type: integer, minimum: 1, default: 8}
  heads: {type: array, items: {type: integer, minimum: 1}, minItems: 1, default: [1, 2, 4, 8, 16]}
  repeats: {type: integer, minimum: 1, default: 20}
  warmup: {type: integer, minimum: 0, default: 2}
  inner: {type: integer, minimum: 1, default: 1, description: back-to-back forwards averaged per timing}
""")
DEFAULTS = {}


def check(cfg: dict) -> None:
    """Every head count divides the layer's width."""
    s = cfg["multihead"]
    for h in s["heads"]:
        if s["d_model"] % h:
            raise AttnlabError(f"config error at 'multihead.heads': {h} heads do not divide "
                               f"multihead.d_model={s['d_model']} (each head would be {s['d_model'] / h:g} wide)")
