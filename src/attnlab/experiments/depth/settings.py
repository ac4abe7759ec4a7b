"""E4 · Pre- vs post-norm: what a profile sets for `depth` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml


SCHEMA = {"$ref": "#/$defs/runs",
          "description": "E4 (C4.1, C4.2): twelve blocks, pre- vs post-norm, with and without warmup, name -> run"}

# E4 (C4.1, C4.2): a deep stack at lr 3e-3, pre- vs post-norm, with and without warmup
DEFAULTS = yaml.safe_load("""
base: {mixer: multihead, position: learned, mlp: true, n_blocks: 12, train: {lr: 3.0e-3}}
E4-pre: {norm: pre}
E4-pre-warm: {norm: pre, train: {warmup_steps: 200}}
E4-post: {norm: post}
E4-post-warm: {norm: post, train: {warmup_steps: 200}}
""")

# What "a block's gradient" is at step 0 (C4.1): the gradient probe (probes.py) records each block's
# gradient norm under every one of these key prefixes. The chapter's numbers come out of one attention matrix
# (tools/grad-definitions.py tries the others): the claim reads CHAPTER_DEFINITION, the page shows them all.
GRAD_DEFINITIONS = {
    "grad_block_": "every parameter of the block",
    "grad_qkv_": "the attention's input projections W_q, W_k, W_v (weights, as one matrix)",
    "grad_wo_": "the attention's output projection W_o (weight)",
}
OUR_DEFINITION, CHAPTER_DEFINITION = "grad_block_", "grad_qkv_"
# C4.1 as the chapter prints it: block 1, block 12 and last/first at step 0
CHAPTER_GRADS = {"pre": (0.0498, 0.0657, 1.32), "post": (0.0977, 0.1613, 1.65)}
