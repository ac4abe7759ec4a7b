#!/usr/bin/env python3
"""C4.1's definition hunt: each block's step-0 gradient norm under every candidate definition of "a block's
gradient" (attnlab.probes.CANDIDATES), for E4's pre- and post-norm stacks at several seeds, printed
beside the chapter's numbers. CPU, seconds per seed.

    tools/grad-definitions.py --data results/quick/data --seeds 1 2 3 4 5 6 7 8 9 10 [--windows 64] [--blocks 12]
"""
from __future__ import annotations

import argparse
import statistics

from attnlab.data.prepare import load_tokens
from attnlab.probes import CANDIDATES, STEP0_WINDOWS, init_grad_norms
from attnlab.nn.spec import ModelSpec
from attnlab.experiments.depth import settings as depth

CHAPTER = depth.CHAPTER_GRADS  # block 1, block 12, last/first


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--data", required=True, help="a prepared data folder (train.bin)")
    a.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    a.add_argument("--windows", type=int, default=STEP0_WINDOWS, help="windows in the step-0 batch")
    a.add_argument("--blocks", type=int, default=depth.DEFAULTS["base"]["n_blocks"])
    args = a.parse_args()
    tokens = load_tokens(args.data, "train")
    base = {k: v for k, v in depth.DEFAULTS["base"].items() if k != "train"}
    print(f"{'definition':60s} " + " | ".join(f"{n}: block 1, block {args.blocks}, last/first (mean ± sd; chapter "
                                               f"{c[0]}, {c[1]}, {c[2]})" for n, c in CHAPTER.items()))
    rows = {norm: [init_grad_norms(ModelSpec(**{**base, "n_blocks": args.blocks, "norm": norm}), tokens, seed,
                                   args.windows) for seed in args.seeds] for norm in CHAPTER}
    for prefix, (what, _) in CANDIDATES.items():
        cells = []
        for norm, found in rows.items():
            first = [r[f"{prefix}1"] for r in found]
            last = [r[f"{prefix}{args.blocks}"] for r in found]
            ratio = [b / a for a, b in zip(first, last)]
            cells.append(", ".join(f"{statistics.mean(v):.4f} ± {statistics.stdev(v) if len(v) > 1 else 0:.4f}"
                                   for v in (first, last, ratio)))
        print(f"{what[:60]:60s} " + " | ".join(cells))


if __name__ == "__main__":
    main()
