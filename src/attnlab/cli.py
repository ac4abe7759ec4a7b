"""`python -m attnlab VERB ...`: the thin entry points the Snakemake rules call."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnlab.errors import AttnlabError


def cmd_check(a):
    from attnlab.config import load

    from attnlab.config import TRAINING

    cfg = load(a.config)
    runs = "; ".join(f"{e}: {', '.join(cfg[e])}" for e in TRAINING if cfg.get(e))
    print(f"{a.config}: valid {cfg['profile']} profile ({runs})")


def cmd_prepare(a):
    from attnlab.config import load
    from attnlab.data.prepare import prepare

    stats = prepare(load(a.config), Path(a.out))
    print(f"{stats['n_tokens']:,} tokens ({stats['chars_per_token']} chars/token), "
          f"tokenizer trained in {stats['tokenizer_seconds']:.2f} s")


ANALYSES = {  # name -> module whose main(cfg, out_path) measures and writes one JSON file
    "averaging": "attnlab.experiments.averaging",
    "scores": "attnlab.experiments.scores",
    "params": "attnlab.experiments.params",
    "equivalence": "attnlab.experiments.equivalence",
    "multihead": "attnlab.bench.multihead",
}


def cmd_analyse(a):
    import importlib

    from attnlab.config import load

    cfg = load(a.config)
    importlib.import_module(ANALYSES[a.name]).main(cfg, Path(a.out))


def cmd_train(a):
    from attnlab.config import find_run, load, train_settings
    from attnlab.data.prepare import load_tokens
    from attnlab.experiments.probes import AttentionProbe, GradNormProbe
    from attnlab.nn.spec import spec_from_config
    from attnlab.train import train

    cfg = load(a.config)
    spec = spec_from_config(cfg, a.run)  # fails on a bad spec before any data is read
    experiment, run = find_run(cfg, a.run)
    run_cfg = {**cfg, "train": train_settings(cfg, a.run)}
    train_tokens, val_tokens = load_tokens(Path(a.data), "train"), load_tokens(Path(a.data), "val")
    probes = [AttentionProbe(val_tokens, spec.context, run["probe_every"])] if run.get("probe_every") else []
    if run.get("grad_probe_steps") is not None:
        probes.append(GradNormProbe(train_tokens, spec.context, run["grad_probe_steps"]))
    m = train(spec, run_cfg, train_tokens, val_tokens, Path(a.out), name=a.run, experiment=experiment,
              probes=probes, progress=not a.quiet)
    print(f"{a.run}: {m['status']}, val ppl {m['val_ppl']}, train ppl {m['train_ppl']}")


def cmd_claims(a):
    from attnlab.report.cli_report import main_claims

    main_claims(Path(a.results), Path(a.claims), Path(a.out))


def cmd_site(a):
    from attnlab.report.cli_report import main_site

    main_site(Path(a.results), Path(a.claims), Path(a.config), Path(a.docs), Path(a.site))


def cmd_publish(a):
    from attnlab.report.publish import publish

    n = publish(Path(a.results), Path(a.out))
    print(f"published {n} summary files to {a.out}")


def cmd_bench(a):
    from attnlab.bench.throughput import main as bench_main
    from attnlab.config import load

    bench_main(load(a.config), Path(a.data), Path(a.out))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="attnlab", description=__doc__)
    sub = p.add_subparsers(dest="verb", required=True)

    def verb(name, fn, help, *args):
        s = sub.add_parser(name, help=help)
        s.add_argument("--config", required=name not in ("publish",), help="experiment profile (config/*.yaml)")
        for arg in args:
            s.add_argument(f"--{arg}", required=True)
        s.set_defaults(fn=fn)
        return s

    verb("check", cmd_check, "validate a profile and exit")
    verb("prepare", cmd_prepare, "corpus -> BPE -> token splits + stats.json", "out")
    verb("analyse", cmd_analyse, "a measurement that trains nothing (E1, E3 scores, E7, E9, S4)", "out") \
        .add_argument("name", choices=sorted(ANALYSES))
    verb("train", cmd_train, "train one run (a ladder row, an E3 head, ...)", "run", "data", "out").add_argument(
        "--quiet", action="store_true", help="no progress bar")
    verb("claims", cmd_claims, "compute verdicts into claims.csv", "results", "claims", "out")
    verb("site", cmd_site, "render pages and build the site", "results", "claims", "docs", "site")
    verb("publish", cmd_publish, "copy run summaries (no checkpoints) to a folder to commit", "results", "out")
    verb("bench", cmd_bench, "training throughput and tokenizer timings", "data", "out")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        args.fn(args)
    except AttnlabError as err:
        print(f"attnlab: error: {err}", file=sys.stderr)
        return 2
    return 0
