"""`python -m attnlab.jobs [--log LOG] VERB ...`: what the DAG's jobs run (download, prepare, train, analyse), each
writing one run folder, held locked while it runs; and how every verb runs, theirs and attnlab.cli's (its output to
the log, a failure's one line to the terminal).

They are apart from attnlab.cli (the reader's verbs: publish, site, versions, ...) because a rule's code inputs
are the modules its verb imports (attnlab.imports.verb): editing a reader's verb must rerun no training job.
`python -m attnlab VERB` offers these verbs too.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from attnlab import layout, progress, runlock
from attnlab.errors import AttnlabError, Diverged, refused


def settings(a) -> dict:
    """The validated settings named by --config (a profile file, or a job's inline JSON), with --threads."""
    from attnlab.config import load_settings

    cfg = load_settings(a.config)
    if getattr(a, "threads", None):
        cfg["threads"] = a.threads
    return cfg


def cmd_download(a):
    from attnlab.data.corpus import download, read_text

    data = settings(a)["data"]
    download(data["url"], Path(a.out), data["sha256"])
    print(f"{a.out}: {len(read_text(Path(a.out), data['sha256'], key='data.url')):,} characters from {data['url']}")


def cmd_prepare(a):
    from attnlab.data.prepare import prepare

    stats = prepare(settings(a), Path(a.out))
    print(f"{stats['n_tokens']:,} tokens ({stats['chars_per_token']} chars/token), "
          f"tokenizer trained in {stats['tokenizer_seconds']:.2f} s")


def cmd_analyse(a):
    """An experiment that trains nothing (an analysis or a benchmark): its producer writes its result file."""
    import importlib

    from attnlab.registry import get

    experiment = get(a.name)
    if experiment.trains or experiment.kind == "data":
        raise AttnlabError(f"'{a.name}' is a {experiment.kind} experiment; `analyse` runs analyses and benchmarks")
    if experiment.data and not a.data:
        raise AttnlabError(f"'{a.name}' reads the token files: give --data DIR")
    produce = importlib.import_module(experiment.producer).main
    produce(settings(a), Path(a.out), *([Path(a.data)] if experiment.data else []))


def cmd_train(a):
    from attnlab.runs import check_splits, find_run, train_settings
    from attnlab.data.prepare import load_tokens
    from attnlab.probes import AttentionProbe, GradNormProbe
    from attnlab.runs import spec_from_config
    from attnlab.train import initial_weights, not_started, train
    from attnlab.progress import Progress

    cfg = settings(a)  # the job's settings, checked once (config.validate), before any data is read
    spec = spec_from_config(cfg, a.run)
    experiment, run = find_run(cfg, a.run)
    run_cfg = {**cfg, "train": train_settings(cfg, a.run)}
    train_tokens, val_tokens = load_tokens(Path(a.data), "train"), load_tokens(Path(a.data), "val")
    check_splits(cfg, len(train_tokens), len(val_tokens), names=[a.run], source=("data", f"the token files in {a.data}"))
    probes = [AttentionProbe(val_tokens, spec.context, run["probe_every"])] if run.get("probe_every") else []
    if run.get("grad_probe_steps") is not None:
        probes.append(GradNormProbe(train_tokens, spec.context, run["grad_probe_steps"]))
    if not a.quiet:  # a line to the terminal every so often; it adds no row and changes no run
        probes.append(Progress(layout.run_dir(experiment, a.run, cfg["seed"]), run_cfg["train"]["steps"],
                               run_cfg["train"]["batch_size"] * spec.context))
    try:
        init = initial_weights(cfg, run, spec, Path(a.out)) if run.get("init_from") else None
    except Diverged as source:  # nothing to start from: recorded as a result, not a failure
        m = not_started(spec, run_cfg, Path(a.out), name=a.run, experiment=experiment, source=source)
    else:
        m = train(spec, run_cfg, train_tokens, val_tokens, Path(a.out), name=a.run, experiment=experiment,
                  probes=probes, progress=not a.quiet, init=init)
    print(f"{a.run}: {m['status']}, val ppl {m['val_ppl']}, train ppl {m['train_ppl']}")


def add_verbs(sub) -> None:
    """The job verbs, as subcommands of `sub` (this module's parser's, or attnlab.cli's)."""
    def verb(name, fn, help, *args):
        s = sub.add_parser(name, help=help)
        s.add_argument("--config", required=True,
                       help="a profile (config/*.yaml), or one job's settings as inline JSON (what the rules pass)")
        if name in ("train", "analyse"):
            s.add_argument("--threads", type=int, help="torch threads (the rule's `threads:`)")
        for arg in args:
            s.add_argument(f"--{arg}", required=True)
        s.set_defaults(fn=fn)
        return s

    verb("download", cmd_download, "fetch the corpus from data.url (checksum-checked) to --out", "out")
    verb("prepare", cmd_prepare, "corpus -> BPE -> token splits + stats.json", "out")
    analyse = verb("analyse", cmd_analyse, "an experiment that trains nothing (see experiments.yaml)", "out")
    analyse.add_argument("name", help="the experiment's name in the registry")
    analyse.add_argument("--data", help="the token files, for an experiment that reads them")
    verb("train", cmd_train, "train one run (a ladder row, an E3 head, ...)", "run", "data", "out").add_argument(
        "--quiet", action="store_true", help="no progress bar")


def parser(description: str = __doc__, prog: str = "python -m attnlab.jobs"
           ) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """A parser with --log and the job verbs; attnlab.cli adds its own verbs to the subcommands it returns."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--log", help="write all output to this file; only a failure's one-line error reaches the terminal")
    sub = p.add_subparsers(dest="verb", required=True)
    add_verbs(sub)
    return p, sub


def log_to(path: str):
    """Send this process's stdout and stderr (and its children's) to `path`; return a stream to the terminal."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    terminal = os.fdopen(os.dup(2), "w", buffering=1)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return terminal


WRITES = {  # the run folder each job verb writes, which it holds locked while it runs
    "prepare": lambda a: Path(a.out),
    "train": lambda a: Path(a.out),
    "analyse": lambda a: Path(a.out).parent,
}


def main(argv=None, parse=None) -> int:
    """Run one verb (`parse`: a parser's parse_args; this module's, with the job verbs alone, by default)."""
    args = (parse or parser()[0].parse_args)(argv)
    runlock.die_with_parent()
    folder = WRITES[args.verb](args) if args.verb in WRITES else None
    try:
        with runlock.held(folder):  # before --log truncates the log that the folder's other writer is writing
            return execute(args)
    except AttnlabError as err:
        print(f"attnlab: error: {err}", file=sys.stderr)
        return 2


def execute(args) -> int:
    terminal = None
    try:
        terminal = log_to(args.log) if args.log else None
        progress.to_terminal(terminal)
        args.fn(args)
    except Exception as err:
        if isinstance(err, AttnlabError):
            line, code = f"attnlab: error: {err}", 2
        elif refused(err) and getattr(err, "filename", None):  # a full disk or a read-only folder: not a bug
            line, code = f"attnlab: error: {refused(err)}: {err.filename}", 2
        else:  # a bug, not bad input: the traceback goes to the log
            traceback.print_exc()
            line, code = f"attnlab: error: {args.verb} failed with {type(err).__name__}: {err}", 1
        print(line, file=sys.stderr)
        if terminal:  # the first line, so that the terminal says what went wrong without opening the log
            print(f"{line.splitlines()[0]} (log: {args.log})", file=terminal)
        return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
