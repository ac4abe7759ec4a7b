"""S9 · Attention as explanation: what a profile sets for `explanation` (no torch)."""
from __future__ import annotations

import yaml


SCHEMA = yaml.safe_load(r"""
description: "S9: Jain and Wallace's tests of attention as explanation, and Wiegreffe and Pinter's rebuttal, on E8's block"
type: object
additionalProperties: false
default: {}
properties:
  model: {type: string, enum: [one_block, two_blocks], default: one_block, description: E8's closed-version model studied}
  examples: {type: integer, minimum: 1, default: 64, description: held-out sentences studied}
  permutations: {type: integer, minimum: 1, default: 16, description: random permutations of the attention row per sentence}
  adversaries: {type: integer, minimum: 1, default: 4, description: adversarial attention rows searched per sentence}
  eps: {type: number, exclusiveMinimum: 0, default: 0.01, description: the largest change of the output (total variation) an adversary may cause}
  steps: {type: integer, minimum: 1, default: 300, description: optimisation steps of the adversarial search}
  neutral: {type: string, default: the, description: "the word that replaces a word for leave-one-out importance"}
  show: {type: integer, minimum: 0, default: 8, description: sentences whose learned and adversarial rows are kept for the viewer}
""")
DEFAULTS = {}
