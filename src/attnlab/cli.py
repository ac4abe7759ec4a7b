"""`python -m attnlab VERB ...`: the thin entry points the Snakemake rules call."""
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


def cmd_check(a):
    from attnlab.check import check
    from attnlab.config import chosen, runs_of
    from attnlab.registry import training

    if a.slurm_profile:  # first: it is what a cluster run submits with
        from attnlab.cluster import check_profile

        check_profile(a.slurm_profile)
        print(f"{a.slurm_profile}: valid SLURM profile")
    cfg = check(chosen({"profile": a.config}, []))  # what the Snakefile checks: schema, specs, device, corpus
    runs = "; ".join(f"{e}: {', '.join(runs_of(cfg, e))}" for e in training() if runs_of(cfg, e))
    print(f"{a.config}: valid {cfg['profile']} profile ({runs})")


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


def cmd_claims(a):
    from attnlab.claims.table import write_claims_csv
    from attnlab.versions import first_look_of

    counts = write_claims_csv(Path(a.results), claims_folder(a), Path(a.out),
                              first_look_of(Path(a.results)))["verdict"].value_counts()
    print(f"{a.out}: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


def cmd_second_look(a):
    from attnlab.config import seeds as profile_seeds
    from attnlab.claims.second_look import as_yaml, runs_needing, second_look
    from attnlab.config import runs_of
    from attnlab.sitedata import SiteData

    found = SiteData.load(Path(a.results), claims_folder(a))
    pooled = found.pool.seeds if found.pool else (lambda e: [])  # a version's first look: every seed it pooled
    seeds, not_taken = second_look(found.verdicts, lambda e: pooled(e) or profile_seeds(found.config, e))
    narrow = runs_needing(found.verdicts, seeds, lambda e: list(runs_of(found.config, e)))
    print(f"# the second look of {a.results}'s first-look verdicts: add to config/{found.profile}.yaml")
    print(as_yaml(seeds, narrow) or "# no claim is inconclusive with a settle count seeds could reach", end="")
    for cid, why in not_taken.items():
        print(f"# {cid}: no second look: {why}")


def cmd_site(a):
    from attnlab.report.build import build_site
    from attnlab.versions import own_settings

    build_site(Path(a.results), claims_folder(a), own_settings(Path(a.config)) or settings(a), Path(a.site))
    print(f"site built into {a.site}")


def cmd_charts(a):
    from attnlab.report.build import context
    from attnlab.report.figures import write_figures
    from attnlab.versions import own_settings

    site = context(Path(a.results), claims_folder(a), own_settings(Path(a.config)) or settings(a))
    written = write_figures(site, Path(a.out))
    print(f"charts written into {a.out}: " + ", ".join(f"{name} {len(files)}" for name, files in written.items()))


def cmd_benchmarks(a):
    """Every benchmark that needs neither data nor training, without Snakemake (a GPU machine has torch but not
    it). A result already there from this commit with these settings is kept: results brought back from a GPU
    machine are published, not measured again here."""
    import importlib

    from attnlab.check import check
    from attnlab.config import chosen, digest, load_settings
    from attnlab.plan import plan
    from attnlab.provenance import git_commit, read_json
    from attnlab.registry import get, standalone

    cfg = check(chosen({"profile": a.config}, []), corpus=False)  # every setting, before anything runs
    commit = git_commit()
    for planned in plan(cfg, only=[e.name for e in standalone()]):
        e = get(planned.experiment)
        job, out = load_settings(planned.settings), Path(a.results) / planned.output  # what the DAG passes
        prov = (read_json(out).get("provenance") or {}) if out.is_file() else {}
        if (prov.get("commit"), prov.get("config_hash")) == (commit, digest(job)) and commit.isalnum():
            print(f"== {e.name}: kept {out} (commit {commit}, the same settings)", flush=True)
            continue
        print(f"== {e.name} ({e.title}) -> {out}", flush=True)
        with runlock.held(out.parent):
            importlib.import_module(e.producer).main(job, out)


def cmd_publish(a):
    from attnlab.config import chosen, command_line, validate
    from attnlab.registry import named
    from attnlab.versions import publish

    cfg = validate(chosen({"profile": a.config, **command_line(a.set)}, []))  # as the runner was given it
    dest = publish(Path(a.results), cfg, only=named(a.only), record=a.latest)
    record = ", the version of record (results/LATEST)" if a.latest else ""
    print(f"published {a.results} as version {dest.name} ({dest}){record}; commit it, then `attnlab versions` "
          "builds its site")


def cmd_new_experiment(a):
    from attnlab.registry import relative
    from attnlab.scaffold import new_experiment

    folder = new_experiment(a.name, a.kind, a.title)
    print(f"wrote {relative(folder)}/ and its line in src/attnlab/experiments.yaml; "
          f"`snakemake -n --configfile config/smoke.yaml` lists its jobs")


def cmd_history(a):
    from attnlab.history import compared, lines, unmeasured

    if a.bisect:
        from attnlab.bisect import bisect

        print(bisect(a.claim, at=a.at, seed=a.seed))
        return
    rows = compared(a.claim)
    print(f"{a.claim}: {len(rows)} versions measured it, oldest commit first; ◆ a step since the previous version "
          "of its budget (its value moved beyond the noise, or its verdict changed)")
    print("\n".join(lines(rows)))
    if others := unmeasured(rows):
        print(f"{len(others)} other versions did not measure {a.claim} (their run files cannot answer it): "
              f"{', '.join(others)}")


def cmd_versions(a):
    from attnlab.report.build import build_versions

    built = build_versions(claims_folder(a), Path(a.site))
    print(f"built {len(built)} versions into {a.site} ({', '.join(built)}); open {a.site}/index.html")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="attnlab", description=__doc__)
    p.add_argument("--log", help="write all output to this file; only a failure's one-line error reaches the terminal")
    sub = p.add_subparsers(dest="verb", required=True)

    def verb(name, fn, help, *args):
        s = sub.add_parser(name, help=help)
        if name not in ("claims", "versions", "second-look", "new-experiment", "history"):
            s.add_argument("--config", required=True,
                           help="a profile (config/*.yaml), or one job's settings as inline JSON (what the rules pass)")
        if name in ("train", "analyse"):
            s.add_argument("--threads", type=int, help="torch threads (the rule's `threads:`)")
        for arg in args:
            if arg == "claims":
                s.add_argument("--claims", help="a folder of claims files <experiment>.yaml to judge by instead of "
                               "each experiment's own claims.yaml")
            else:
                s.add_argument(f"--{arg}", required=True)
        s.set_defaults(fn=fn)
        return s

    verb("check", cmd_check, "validate a profile and exit").add_argument(
        "--slurm-profile", help="and a Snakemake profile for SLURM (profiles/slurm): every resource it names")
    verb("download", cmd_download, "fetch the corpus from data.url (checksum-checked) to --out", "out")
    verb("prepare", cmd_prepare, "corpus -> BPE -> token splits + stats.json", "out")
    analyse = verb("analyse", cmd_analyse, "an experiment that trains nothing (see experiments.yaml)", "out")
    analyse.add_argument("name", help="the experiment's name in the registry")
    analyse.add_argument("--data", help="the token files, for an experiment that reads them")
    verb("train", cmd_train, "train one run (a ladder row, an E3 head, ...)", "run", "data", "out").add_argument(
        "--quiet", action="store_true", help="no progress bar")
    verb("claims", cmd_claims, "compute verdicts into claims.csv", "results", "claims", "out")
    verb("second-look", cmd_second_look, "the experiments' own seeds for the design's second look, from a version's "
         "first-look verdicts", "results", "claims")
    verb("site", cmd_site, "render pages and build the site (mkdocs.yml at the root)", "results", "claims", "site")
    verb("charts", cmd_charts, "every experiment's charts as files (SVG; a viewer as HTML) for the Snakemake report",
         "results", "claims", "out")
    verb("benchmarks", cmd_benchmarks, "run the benchmarks that need no data or training, without Snakemake",
         "results")
    publish = verb("publish", cmd_publish, "freeze a complete run as a version under results/<version>/ (clean "
                   "commit only)", "results")
    publish.add_argument("--only", nargs="+", metavar="EXPERIMENT",
                         help="experiments to publish alone (e.g. --only ladder position, or cost,decode), or runs of "
                              "one (--only depth.E4-pre depth.E4-post)")
    publish.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                         help="settings laid over the profile, as the runner's --set took them (e.g. seeds=[1337])")
    publish.add_argument("--latest", action="store_true",
                         help="make it the version of record: results/LATEST names it (the site's `latest`)")
    new = verb("new-experiment", cmd_new_experiment, "write a new experiment's folder, as stubs that run, and its "
               "registry line")
    new.add_argument("name", help="its name: the folder, the results folder, the page and the claims' variable")
    new.add_argument("--kind", required=True, choices=["analysis", "training", "benchmark"])
    new.add_argument("--title", help="its page's title (default: the name)")
    verb("versions", cmd_versions, "build the site of every published version, with a version selector",
         "claims", "site")
    h = sub.add_parser("history", help="one claim across every published version, oldest commit first, and the "
                                       "steps where it moved")
    h.add_argument("claim", help="a claim's id, e.g. C2.3")
    h.add_argument("--bisect", action="store_true", help="rerun the claim at one seed over the commits of its newest "
                                                         "step (or --at VERSION's) and name the first that moved it")
    h.add_argument("--at", metavar="VERSION", help="with --bisect: the step at this version")
    h.add_argument("--seed", type=int, help="with --bisect: the seed to rerun at (default: the version's first)")
    h.set_defaults(fn=cmd_history)
    return p


def claims_folder(a) -> Path | None:
    return Path(a.claims) if a.claims else None


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


def main(argv=None) -> int:
    args = parser().parse_args(argv)
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
