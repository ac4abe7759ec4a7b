"""S8 · Trained with approximate attention: what a profile sets for `approximate_training` (no torch: every check
of a profile reads it). Ladder row L9's model trained with its attention replaced by a causal sliding window
(two widths: alone, with 4 global tokens at the start, and with a global token every 16 that sees its whole
prefix) or by FAVOR+ (two feature counts); L9 itself is the full attention it is set against, so every run here
must be L9 but for its attention."""
from __future__ import annotations

import yaml

from attnlab.errors import AttnlabError
from attnlab.runs import find_run, spec_from_config, train_settings

SCHEMA = {"$ref": "#/$defs/runs",
          "description": "S8 trained: L9 with a sliding window or FAVOR+ in place of full attention"}

FULL = "L9"  # the run with full attention every run here is compared with
ATTENTION = ("attention", "window", "n_global", "global_every", "features")  # what a run here may change of it

DEFAULTS = yaml.safe_load("""
base: {mixer: multihead, position: learned, mlp: true, norm: pre}  # ladder row L9: one full block
S8-w16: {attention: window, window: 16}                # each query sees itself and the 15 keys before it
S8-w16-g4: {attention: window, window: 16, n_global: 4}  # ... and the window's first 4 tokens
S8-w32: {attention: window, window: 32}
S8-w32-g4: {attention: window, window: 32, n_global: 4}
S8-w16-sym: {attention: window, window: 16, global_every: 16}  # positions 15, 31, ...: every later query sees
S8-w32-sym: {attention: window, window: 32, global_every: 16}  # them, and they see their whole prefix
S8-favor32: {attention: favor, features: 32}           # Performer's FAVOR+ with 32 random features per head
S8-favor128: {attention: favor, features: 128}
""")


def check(cfg: dict) -> None:
    """Every run is the full-attention run L9 but for its attention, and trains as it does, so that their
    perplexities compare the attention alone."""
    try:
        full = spec_from_config(cfg, FULL).to_dict()
    except AttnlabError:
        raise AttnlabError(f"config error at 'approximate_training': its runs are compared with run '{FULL}' "
                           "(full attention), which this profile does not declare") from None
    for name in cfg.get("approximate_training") or {}:
        spec = spec_from_config(cfg, name).to_dict()
        differ = sorted(k for k in set(spec) | set(full) if k not in ATTENTION and spec.get(k) != full.get(k))
        if differ:
            raise AttnlabError(f"config error at 'approximate_training.{name}.{differ[0]}': {spec.get(differ[0])!r} "
                               f"differs from run '{FULL}' ({full.get(differ[0])!r}, {find_run(cfg, FULL)[0]}); "
                               "a run here changes only the attention, so that it is compared with full attention")
        if train_settings(cfg, name) != train_settings(cfg, FULL):
            raise AttnlabError(f"config error at 'approximate_training.{name}.train': it trains otherwise than run "
                               f"'{FULL}', and the comparison with full attention needs the same training; set "
                               f"the same under approximate_training.base.train (or both in the profile's train)")
