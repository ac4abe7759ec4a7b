"""Data and tokenizer: what a profile sets for `data` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml


REQUIRED = True  # every profile reads a corpus; its values are in config/base.yaml
SCHEMA = yaml.safe_load(r"""
type: object
additionalProperties: false
required: [url, sha256]
properties:
  url: {type: string}
  sha256: {type: string, pattern: "^[0-9a-f]{64}$"}
  path: {type: [string, "null"], default: null}
  vocab_size: {type: integer, minimum: 257, maximum: 65536, default: 1024}
  pattern: {type: string, enum: [gpt2, gpt4, none], default: gpt2}
  val_fraction: {type: number, exclusiveMinimum: 0, exclusiveMaximum: 1, default: 0.1}
""")
DEFAULTS = {}
