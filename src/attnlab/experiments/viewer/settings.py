"""S11 · Attention viewer: what a profile sets for `viewer` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml

from attnlab import registry
from attnlab.errors import AttnlabError
from attnlab.runs import spec_from_config


SCHEMA = yaml.safe_load(r"""
description: "S11: the sentences the interactive viewer shows, with trained models' attention"
type: object
additionalProperties: false
default: {}
properties:
  adjectives: {type: array, items: {type: string}, default: [tired, wet, scared, busy],
               description: "E8's map sentence with each of these adjectives"}
  lines: {type: integer, minimum: 0, default: 4, description: lines of Shakespeare's validation split}
  tokens: {type: integer, minimum: 2, default: 24, description: tokens shown of each line (at most the models' context)}
""")
DEFAULTS = {}


def check(cfg: dict) -> None:
    """The viewer shows `viewer.tokens` tokens of each line through trained models: no more than their context."""
    tokens = cfg["viewer"]["tokens"]
    for name in registry.get("viewer").needed_run_names:
        context = spec_from_config(cfg, name).context
        if tokens > context:
            raise AttnlabError(f"config error at 'viewer.tokens': {tokens} tokens are more than the context of run "
                               f"'{name}' ({context}), which the viewer reads them through; set {context} or fewer")
