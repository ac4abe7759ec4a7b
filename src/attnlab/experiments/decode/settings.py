"""S5 · The KV cache: what a profile sets for `decode` (no torch: every check of a profile reads it)."""
from __future__ import annotations

from attnlab.errors import AttnlabError
from attnlab.nn.spec import ModelSpec

import yaml


SCHEMA = yaml.safe_load(r"""
description: "S5 and S6: greedy decoding with and without a KV cache; grouped and shared key/value heads"
type: object
additionalProperties: false
default: {}
properties:
  vocab_size: {type: integer, minimum: 2, default: 1024}
  prompt: {type: integer, minimum: 1, default: 16, description: tokens before the first generated one}
  lengths: {type: array, items: {type: integer, minimum: 1}, minItems: 1, default: [32, 64, 128]}
  batch_size: {type: integer, minimum: 1, default: 1}
  models:
    description: model specs by name (RoPE positions, so any length decodes); the chapter's width and a wide one
    type: object
    minProperties: 1
    additionalProperties: {type: object}
    default: {chapter: {d_model: 128, n_heads: 4, n_blocks: 1}, wide: {d_model: 512, n_heads: 8, n_blocks: 4}}
  kv_heads:
    description: key/value head counts to decode a model with (its n_heads is MHA, 1 is MQA)
    type: object
    additionalProperties: {type: array, items: {type: integer, minimum: 1}, minItems: 1}
    default: {wide: [8, 2, 1]}
  warmup: {type: integer, minimum: 0, default: 1}
  min_samples: {type: integer, minimum: 1, default: 2}
  max_samples: {type: integer, minimum: 1, default: 5}
  target_rsd: {type: number, minimum: 0, default: 0.05}
  max_seconds: {type: number, exclusiveMinimum: 0, default: 3.0}
""")
DEFAULTS = {}


def check(cfg: dict) -> None:
    check_section(cfg["decode"])


def check_section(s: dict) -> None:
    """S5/S6's decoding (the `decode` section, defaults filled): increasing lengths, and every model and
    key/value head count a valid spec."""
    if any(b <= a for a, b in zip(s["lengths"], s["lengths"][1:])):
        raise AttnlabError(f"config error at 'decode.lengths': lengths must increase, got {s['lengths']}")
    for name in s["kv_heads"]:
        if name not in s["models"]:
            raise AttnlabError(f"config error at 'decode.kv_heads.{name}': no model '{name}' in decode.models")
    for name, model in s["models"].items():
        for kv in s["kv_heads"].get(name) or [None]:
            try:
                ModelSpec(**{"position": "rope", **model, "n_kv_heads": kv})
            except (AttnlabError, TypeError) as err:
                raise AttnlabError(f"config error at 'decode.models.{name}': {err}") from None
