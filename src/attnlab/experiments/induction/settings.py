"""S10 · Induction heads: what a profile sets for `induction` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml

from attnlab.errors import AttnlabError


SCHEMA = yaml.safe_load(r"""
description: "S10: attention-only models on repeated random spans (induction heads), then the chapter's models"
type: object
additionalProperties: false
default: {}
properties:
  vocab_size: {type: integer, minimum: 2, default: 64}
  length: {type: integer, minimum: 2, default: 48, description: tokens a model reads (its context)}
  span: {type: integer, minimum: 1, default: 8, description: the random span that recurs in every sequence}
  sequences: {type: integer, minimum: 1, default: 1000, description: training sequences}
  probe_sequences: {type: integer, minimum: 1, default: 32, description: the fixed batch the scores are read on}
  probe_every: {type: integer, minimum: 1, default: 25, description: steps between two readings of the scores}
  layers: {type: array, items: {type: integer, minimum: 1}, minItems: 1, default: [1, 2]}
  model:
    description: the attention-only models' spec (a ModelSpec's fields; n_blocks comes from `layers`)
    type: object
    default: {mixer: multihead, d_model: 64, n_heads: 4, mlp: false, norm: pre, position: learned}
  train:
    description: overrides of the profile's `train` section for these models
    type: object
    default: {steps: 400, batch_size: 32, lr: 3.0e-3, warmup_steps: 0, eval_every: 400, eval_windows: 32,
              ckpt_every: 100, train_eval_tokens: null}
  text_windows: {type: integer, minimum: 1, default: 32, description: windows of Shakespeare the chapter's models are read on}
""")
DEFAULTS = {}

# where the in-context-learning score reads a sequence, as fractions of its length (Olsson et al. read tokens 50
# and 500); here, without torch, so that the site can say which positions
EARLY, LATE = 0.1, 0.9


def window(T: int, at: float) -> slice:
    """Positions around at * T: the nearest one with T // 40 neighbours each side (one position up to T = 39)."""
    k, centre = T // 40, min(T - 1, round(at * T))
    return slice(max(0, centre - k), min(T, centre + k + 1))


def check(cfg: dict) -> None:
    """S10's repeated spans: the span must recur at least once in a sequence of the model's length."""
    s = cfg["induction"]
    if s["span"] > s["length"] + 1:
        raise AttnlabError(f"config error at 'induction.span': a span of {s['span']} tokens is longer than the "
                           f"sequence ({s['length'] + 1} tokens: induction.length + 1)")
    if 2 * s["span"] > s["length"] + 1:
        raise AttnlabError(f"config error at 'induction.span': a span of {s['span']} cannot recur in "
                           f"{s['length'] + 1} tokens (it needs at least twice its length)")
