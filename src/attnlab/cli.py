"""`python -m attnlab VERB ...`: the reader's verbs (check, claims, site, publish, versions, history, ...), thin entry
points, some of them the report's rules; and the jobs' verbs (download, prepare, train, analyse), which the DAG runs
as `python -m attnlab.jobs` (attnlab.jobs says why they are apart)."""
from __future__ import annotations

import argparse
from pathlib import Path

from attnlab import jobs, runlock
from attnlab.jobs import settings


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


def cmd_claims(a):
    from attnlab.claims.table import write_claims_csv
    from attnlab.versions import first_look_of

    counts = write_claims_csv(Path(a.results), claims_folder(a), Path(a.out),
                              first_look_of(Path(a.results)))["verdict"].value_counts()
    print(f"{a.out}: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


def cmd_second_look(a):
    from attnlab.config import seeds as profile_seeds
    from attnlab.claims.second_look import as_yaml, runs_needing, second_look
    from attnlab.claims.design import first_look
    from attnlab.config import runs_of
    from attnlab.sitedata import SiteData

    found = SiteData.load(Path(a.results), claims_folder(a))
    pooled = found.pool.seeds if found.pool else (lambda e: [])  # a version's first look: every seed it pooled
    first = first_look(found.config, found.manifest)
    seeds, not_taken = second_look(found.verdicts, lambda e: pooled(e) or profile_seeds(found.config, e),
                                   lambda e: bool(found.pool) and found.pool.past_first_look(e, first))
    narrow = runs_needing(found.verdicts, seeds, lambda e: list(runs_of(found.config, e)))
    print(f"# the second look of {a.results}'s first-look verdicts: add to config/{found.profile}.yaml")
    print(as_yaml(seeds, narrow) or "# no claim is inconclusive with a settle count seeds could reach\n", end="")
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
    p, sub = jobs.parser(__doc__, prog="attnlab")

    def verb(name, fn, help, *args):
        s = sub.add_parser(name, help=help)
        if name not in ("claims", "versions", "second-look", "new-experiment", "history"):
            s.add_argument("--config", required=True, help="a profile (config/*.yaml), or a published version's "
                                                           "config.yaml")
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


def main(argv=None) -> int:
    return jobs.main(argv, parser().parse_args)
