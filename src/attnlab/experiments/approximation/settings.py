"""S8 · Approximations on a trained layer: what a profile sets for `approximation` (no torch)."""
from __future__ import annotations

import yaml

from attnlab import registry
from attnlab.errors import AttnlabError
from attnlab.runs import find_run, spec_from_config


SCHEMA = yaml.safe_load(r"""
description: "S8 on a trained layer: the window's and FAVOR+'s error on ladder run L9's queries, keys and values"
type: object
additionalProperties: false
default: {}
properties:
  windows:
    type: array
    items: {type: integer, minimum: 1}
    minItems: 2
    default: [8, 16, 32, 64]
    description: keys a query sees in the sliding window (itself included), increasing; with n_global, fewer than L9's context
  features:
    type: array
    items: {type: integer, minimum: 1}
    minItems: 2
    default: [8, 16, 32, 64, 128, 256]
    description: FAVOR+'s random features, increasing
  n_global: {type: integer, minimum: 0, default: 4, description: global tokens every query of the window sees}
  batches: {type: integer, minimum: 2, default: 8, description: "batches of the validation split measured per seed; their spread gives each error's standard error"}
  batch_size: {type: integer, minimum: 1, default: 8, description: windows of L9's context per batch}
""")
DEFAULTS = {}


def check(cfg: dict) -> None:
    """S8 on a trained layer: increasing windows and feature counts, and a model whose attention the approximations
    stand for (learned, scaled by √d_k, no ALiBi: they approximate softmax(q kᵀ / √d) v), every window with its
    global tokens shorter than its context (a window that sees every key is exact attention)."""
    a = cfg["approximation"]
    for key in ("windows", "features"):
        if any(b <= x for x, b in zip(a[key], a[key][1:])):
            raise AttnlabError(f"config error at 'approximation.{key}': {key} must increase, got {a[key]}")
    for name in registry.get("approximation").needed_run_names:
        spec, where = spec_from_config(cfg, name), f"config error at '{find_run(cfg, name)[0]}.{name}'"
        if spec.mixer not in ("head", "multihead"):
            raise AttnlabError(f"{where}: S8 (approximation) measures its learned attention, and its mixer is "
                               f"'{spec.mixer}'")
        if not spec.scale or spec.position == "alibi":
            raise AttnlabError(f"{where}: {'ALiBi adds to its scores' if spec.scale else 'its scores are not scaled'}"
                               ", and S8 (approximation) approximates softmax(q kᵀ / √d_k) v alone")
        last = a["windows"][-1]
        if last + a["n_global"] >= spec.context:
            raise AttnlabError(f"config error at 'approximation.windows': a window of {last} with "
                               f"{a['n_global']} global tokens sees every one of the {spec.context} keys run "
                               f"'{name}' reads at once, so it is exact attention; take windows below "
                               f"{spec.context - a['n_global']}")


def check_split(cfg: dict, n_train: int, n_val: int, at_most: bool = False) -> None:
    """S8 on a trained layer reads approximation.batches x batch_size windows of each run's context from the
    validation split (`at_most`: n_val is an upper bound)."""
    a = cfg["approximation"]
    for name in registry.get("approximation").needed_run_names:
        context = spec_from_config(cfg, name).context
        need = a["batches"] * a["batch_size"] * context
        if n_val < need:
            raise AttnlabError(f"config error at 'approximation.batches': {a['batches']} batches of "
                               f"{a['batch_size']} windows of {context} tokens (the context of run '{name}') need "
                               f"{need:,} validation tokens, and the corpus leaves {'at most ' if at_most else ''}"
                               f"{n_val:,}")
