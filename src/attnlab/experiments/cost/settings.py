"""E6 · The quadratic cost: what a profile sets for `cost` (no torch: every check of a profile reads it)."""
from __future__ import annotations

from attnlab.device import cuda_usable
from attnlab.errors import AttnlabError

import yaml


SCHEMA = yaml.safe_load(r"""
description: "E6 and S7: one causal attention layer's time and memory as n doubles, three ways"
type: object
additionalProperties: false
default: {}
properties:
  d_model: {type: integer, minimum: 1, default: 512}
  heads: {type: integer, minimum: 1, default: 8}
  batch_size: {type: integer, minimum: 1, default: 1}
  dtype: {type: string, enum: [float32, float16, bfloat16], default: float32}
  sizes:
    type: array
    items: {type: integer, minimum: 1}
    minItems: 1
    default: [128, 256, 512, 1024, 2048, 4096]
    description: sequence lengths, increasing; on a GPU each method goes on until it runs out of memory
  methods: {type: array, items: {type: string}, minItems: 1, default: [naive, sdpa, tiled, window, favor]}
  block: {type: integer, minimum: 1, default: 128, description: the tile of the tiled and window methods}
  window: {type: integer, default: 128, description: "S8: keys a query sees in the sliding window (itself included)"}
  n_global: {type: integer, minimum: 0, default: 4, description: "S8: global tokens every query sees"}
  features: {type: integer, default: 128, description: "S8: FAVOR+ random features"}
  errors:
    description: "S8: relative error against exact attention as the window and the features grow"
    type: object
    additionalProperties: false
    default: {}
    properties:
      n: {type: integer, minimum: 1, default: 1024}
      windows: {type: array, items: {type: integer}, minItems: 1, default: [8, 16, 32, 64, 128, 256]}
      features: {type: array, items: {type: integer}, minItems: 1, default: [8, 16, 32, 64, 128, 256]}
      seeds: {type: integer, minimum: 1, default: 3, description: "draws of the inputs (and of FAVOR+'s features) averaged per size; their spread gives the errors' standard errors"}
  max_n_cpu:
    type: integer
    minimum: 1
    default: 4096
    description: the largest n a CPU is asked to run; larger sizes are recorded as rows not run here, with the reason
  warmup: {type: integer, minimum: 0, default: 1}
  min_samples: {type: integer, minimum: 1, default: 3}
  max_samples: {type: integer, minimum: 1, default: 30}
  target_rsd: {type: number, minimum: 0, default: 0.05, description: stop sampling once the spread is this small}
  max_seconds: {type: number, exclusiveMinimum: 0, default: 2.0, description: or once this much time is spent}
""")
DEFAULTS = {}

COST_METHODS = ("naive", "sdpa", "tiled", "window", "favor")  # exact, exact, exact; S8's two approximations


def check(cfg: dict) -> None:
    on_cpu = cfg["device"] == "cpu" or (cfg["device"] == "auto" and not cuda_usable()[0])
    check_section(cfg["cost"], on_cpu)


def check_section(s: dict, on_cpu: bool) -> None:
    """E6/S7's sweep (the `cost` section, defaults filled): one line naming the first bad value."""
    sizes = s["sizes"]
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise AttnlabError(f"config error at 'cost.sizes': sizes must increase, got {sizes}")
    if s["d_model"] % s["heads"]:
        raise AttnlabError(f"config error at 'cost.heads': {s['heads']} heads do not divide "
                           f"cost.d_model={s['d_model']}")
    unknown = [m for m in s["methods"] if m not in COST_METHODS]
    if unknown:
        raise AttnlabError(f"config error at 'cost.methods': unknown method '{unknown[0]}' "
                           f"(known: {', '.join(COST_METHODS)})")
    for key in ("window", "features"):
        values = [s[key]] + list(s["errors"][f"{key}s" if key == "window" else key])
        if min(values) < 1:
            raise AttnlabError(f"config error at 'cost.{key}': a {key} below 1 ({min(values)}) attends to nothing")
    if on_cpu and sizes[0] > s["max_n_cpu"]:  # above it a size is a row not run here; below none, nothing runs
        raise AttnlabError(f"config error at 'cost.max_n_cpu': every size in cost.sizes is above it "
                           f"({s['max_n_cpu']} < n={sizes[0]}), so a CPU would measure nothing")


SLOPE_ROWS = 4  # a method's log-log slopes are fit over its last sizes that ran, this many (its page re-fits them)


def ran(row: dict) -> bool:
    """Whether a row of the sweep holds a measurement: neither out of memory nor not run here."""
    return not row.get("oom") and not row.get("not_run")
