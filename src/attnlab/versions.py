"""Published versions: one complete run of a profile at one clean commit, frozen under results/<version>/.

A version is complete (every experiment of the profile) or holds only some experiments, named in its manifest
(`publish --only`: the benchmarks a GPU machine ran without the DAG). It holds the run summaries (never checkpoints or token files), the profile it ran (config.yaml), a
manifest: the commit, profile, hardware, GPU clocks, software versions, dates, the wall time of the whole DAG
and the throughput ratio; the Snakefile that ran, and an RO-Crate that describes it all and lists every file with
its checksum (crate). `publish` refuses, with one line and before copying anything, a dirty tree, an
incomplete run, run files from several commits (or from a dirty tree), runs whose code changed since, runs
trained with other settings than the profile's, a version that already exists, and a damaged file (runfiles).
Versions are never rewritten; the site is rebuilt from them without training, once every file of every
version is checked the same way.
"""
from __future__ import annotations

import copy
import datetime as dt
import functools
import importlib.metadata
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from attnlab import layout, registry
from attnlab.crate import CRATE, WORKFLOW, check_crate, write_crate
from attnlab.config import digest, read_yaml, resolve, run_settings, validate, without_planned_seeds
from attnlab.runs import spec_from_config, train_settings
from attnlab.errors import AttnlabError
from attnlab.plan import Job, picked_runs, plan
from attnlab.provenance import write_json
from attnlab.claims.registry import load_registry
from attnlab.runfiles import check_files, read_json

MANIFEST = "manifest.json"
LATEST = "LATEST"  # results/LATEST: the name of the version of record, one line, which the publisher chooses
ALIAS = "latest"  # the folder of the tree of sites that leads to the version of record (as `mike` names its alias)
MANIFEST_KEYS = ("version", "profile", "commit", "hardware", "published")  # what the site reads of one
NAME = re.compile(r"^\d{4}-\d{2}-\d{2}-[A-Za-z][\w.-]*$")  # date first: `ls results/` is chronological

RUN_RULES = ("workflow/rules/common.smk", "workflow/rules/data.smk", "workflow/rules/train.smk",
             "workflow/rules/analyses.smk")  # report.smk's claims and site read the runs; they shape none


def run_shaping(cfg: dict, only: list[str] | None = None) -> list[str]:
    """What shapes the run files of a version of `cfg` (its experiments `only`, and what they need): the code
    their jobs import (as the DAG's own code inputs count it), the plan (each job's settings), the registry, the
    shared settings and this profile's file, and the workflow. A change to one of these between the runs' commit
    and the one publishing them means a rerun; the report, the claims, the prose, another profile's file or
    another experiment's code only read or shape other files. Package versions are in each run's provenance."""
    from attnlab import imports
    from attnlab.plan import with_needs

    scope = {registry.get(job.experiment) for job in with_needs(cfg, only)}
    modules = set().union(*(imports.verb(v) for v in ("prepare", "train", "analyse")),  # settings: imported by name
                          imports.closure("attnlab.plan", *(e.producer for e in scope), *(e.settings for e in scope)))
    return [*imports.files(modules, root=registry.ROOT), "src/attnlab/experiments.yaml", "src/attnlab/schemas",
            "config/base.yaml", f"config/{cfg['profile']}.yaml", *RUN_RULES, "Snakefile"]


SOFTWARE = ("torch", "numpy", "pandas", "altair", "snakemake", "mkdocs", "mkdocs-material")


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise AttnlabError(f"git {' '.join(args)} failed in {root}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.rstrip()


def head(root: Path) -> str:
    """HEAD's short commit, with '+dirty' when tracked or untracked files differ from it ('unknown' outside git)."""
    try:
        commit = git(root, "rev-parse", "--short=12", "HEAD")
        return commit + ("+dirty" if git(root, "status", "--porcelain") else "")
    except (AttnlabError, OSError):
        return "unknown"


def scope(only: list[str] | None) -> list[str]:
    """The experiments a version holds: those `only` names (itself or by one of its runs, `depth.E4-pre`), checked
    against the registry, or all of them."""
    return list(picked_runs(only)) if only else [e.name for e in registry.load()]


def settings_of(config_yaml: Path) -> dict:
    """A published version's profile (its config.yaml), validated. A version from before the profile's seeds
    list gave an experiment a count of its own (a number under its section's `seeds`), which today's schema no
    longer has: the experiment reads the list.
    Validated once per state of the file (every page that compares versions reads every version's)."""
    path = Path(config_yaml)
    stat = path.stat() if path.is_file() else None
    return copy.deepcopy(_validated(str(path), stat and (stat.st_mtime_ns, stat.st_size)))


def own_settings(config: Path) -> dict | None:
    """`config` read as a published version wrote it, when it is one's config.yaml (a manifest.json beside it):
    `attnlab site --config results/V/config.yaml` builds an older version whose profile today's schema refuses
    (6ec7a8b's per-experiment `seq2seq.seeds: 3`). None for any other file: a profile, judged by today's schema."""
    path = Path(config)
    return settings_of(path) if path.name == "config.yaml" and (path.parent / "manifest.json").is_file() else None


@functools.lru_cache(maxsize=64)
def _validated(config_yaml: str, state) -> dict:
    doc = read_yaml(config_yaml, "version settings")
    if "seeds" not in doc:
        for section in doc.values():
            if isinstance(section, dict) and isinstance(section.get("seeds"), int):
                del section["seeds"]
    return validate(resolve(doc))


def first_look_of(results_dir: str | Path) -> int | None:
    """The profile's own seed count for the run files under `results_dir` (the verdicts' first look): a
    version's config.yaml, else config/<the folder's name>.yaml; None where neither is there."""
    from attnlab.claims.design import profile_seed_count
    from attnlab.config import load_settings

    own, named = Path(results_dir) / "config.yaml", registry.ROOT / "config" / f"{Path(results_dir).name}.yaml"
    cfg = settings_of(own) if own.is_file() else load_settings(str(named)) if named.is_file() else None
    return profile_seed_count(cfg) if cfg else None


def expected(cfg: dict, only: list[str] | None = None) -> list[str]:
    """Every run file (relative to results/<profile>/) that a run of profile `cfg` writes: all of them for a
    complete run (claims.csv with them), or those of the experiments `only` names."""
    return [rel for job in plan(cfg, only) for rel in job.files] + ([] if only else ["claims.csv"])


def summaries(results: Path, cfg: dict, only: list[str] | None = None) -> list[str]:
    """The files a version keeps: every result file, each training run's metrics, curve and probes, claims.csv
    (and claims_by_seed.csv where the claims step wrote it)."""
    keep = [rel for rel in expected(cfg, only) if (results / rel).is_file()]
    if not only and (results / "claims_by_seed.csv").is_file():  # beside claims.csv since the interval rule
        keep.append("claims_by_seed.csv")
    probes = [layout.sibling(job.output, layout.PROBES) for job in plan(cfg, only) if job.run]
    return keep + [rel for rel in probes if (results / rel).is_file()]


def provenances(results: Path, cfg: dict, only: list[str] | None = None) -> dict[str, dict]:
    """Run file -> its provenance, for every JSON run file of the profile (of the experiments `only` names)."""
    return {rel: read_json(results / rel).get("provenance") or {}
            for rel in expected(cfg, only) if rel.endswith(".json")}


def check_publishable(results: Path, cfg: dict, root: Path, only: list[str] | None = None) -> tuple[str, str]:
    """(the runs' commit, HEAD); raises with one line naming the first reason `results` cannot be published."""
    dirty = git(root, "status", "--porcelain").splitlines()
    if dirty:
        raise AttnlabError(f"cannot publish from a dirty tree ({len(dirty)} changed: "
                           f"{', '.join(line[3:] for line in dirty[:3])}{', …' if len(dirty) > 3 else ''}); "
                           "a version comes from one clean commit: commit or stash first")
    missing = [rel for rel in expected(cfg, only) if not (results / rel).is_file()]
    if missing:
        what = f"a complete {cfg['profile']} run" if not only else f"a {cfg['profile']} run of {', '.join(only)}"
        raise AttnlabError(f"{results} is not {what}: {len(missing)} run files missing "
                           f"({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}); run "
                           f"`snakemake --cores 4 --resources gpu=1 --config profile={cfg['profile']}` first")
    check_files(results, summaries(results, cfg, only), None if only else claim_ids())
    prov = provenances(results, cfg, only)
    by_commit: dict[str, list[str]] = {}
    for rel, p in prov.items():
        by_commit.setdefault(str(p.get("commit")), []).append(rel)
    if len(by_commit) > 1:
        parts = [f"{c}: {len(files)} (e.g. {files[0]})" for c, files in sorted(by_commit.items())]
        raise AttnlabError(f"{results} holds run files from {len(by_commit)} commits ({'; '.join(parts)}); "
                           "a version comes from one commit: rerun the profile")
    commit = next(iter(by_commit))
    if commit.endswith("+dirty") or commit == "unknown":
        raise AttnlabError(f"{results}: its runs were made {'from a dirty tree' if commit != 'unknown' else 'outside git'}"
                           f" ({commit}); rerun them from a clean commit")
    profiles = {str(p.get("profile")) for p in prov.values()}
    if profiles != {cfg["profile"]}:
        raise AttnlabError(f"{results} holds runs of profiles {sorted(profiles)}, not only '{cfg['profile']}'")
    head = git(root, "rev-parse", "--short=12", "HEAD")
    changed = git(root, "diff", "--name-only", commit, "HEAD", "--", *run_shaping(cfg, only)).splitlines()
    if changed:
        raise AttnlabError(f"the runs in {results} come from commit {commit}, and since then {len(changed)} files "
                           f"that shape them changed ({', '.join(changed[:3])}{', …' if len(changed) > 3 else ''}); "
                           "rerun the profile at this commit")
    for job in (job for job in plan(cfg, only) if job.run):
        want_spec, want_steps = spec_from_config(cfg, job.run).to_dict(), train_settings(cfg, job.run)["steps"]
        m = read_json(results / job.output)
        if m.get("spec") != want_spec or (m.get("status") == "ok" and m.get("steps") != want_steps):
            raise AttnlabError(f"run {job.run} (seed {job.seed}) in {results} was trained with other settings than "
                               f"profile '{cfg['profile']}' declares (spec or steps differ): rerun it")
    return commit, head


def hardware(prov: dict[str, dict]) -> str:
    """A short tag for the devices the runs used: 'cpu', or the GPU's name ('nvidia-h200')."""
    gpus = sorted({p["device"] for p in prov.values() if p.get("device") and not p["device"].startswith("cpu")})
    return re.sub(r"[^a-z0-9]+", "-", gpus[0].lower()).strip("-") if gpus else "cpu"


def manifest(results: Path, cfg: dict, commit: str, head: str, name: str, only: list[str] | None = None) -> dict:
    prov = provenances(results, cfg, only)
    starts, ends = [], []
    for p in prov.values():
        if p.get("date") and p.get("wall_seconds") is not None:
            end = dt.datetime.fromisoformat(p["date"])
            ends.append(end)
            starts.append(end - dt.timedelta(seconds=p["wall_seconds"]))
    versions = {}
    for package in SOFTWARE:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "version": name,
        "profile": cfg["profile"],
        "experiments": scope(only),       # what it holds: every experiment, or those published --only
        "complete": not only,
        **({"only": only} if only and only != scope(only) else {}),  # some runs of one: `--only depth.E4-pre`
        "commit": commit,                 # where every run file came from
        "published_from": head,           # HEAD when published (differs only in what cannot change a run)
        "published": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "hardware": hardware(prov),
        "devices": sorted({p.get("device") for p in prov.values() if p.get("device")}),
        "gpu_clocks": {rel: p["clocks"] for rel, p in prov.items() if p.get("clocks")} or None,
        "software": {"python": sorted({p.get("python") for p in prov.values() if p.get("python")}),
                     "torch": sorted({p.get("torch") for p in prov.values() if p.get("torch")}),
                     "at_publish": versions},
        "runs": {
            "files": len(prov),
            "run_files": sorted(prov),  # what a complete run of this profile wrote, as the registry stood then
            "first_started": min(starts).isoformat(timespec="seconds") if starts else None,
            "last_finished": max(ends).isoformat(timespec="seconds") if ends else None,
            # from the first run file's start to the last one's end: the whole DAG when it ran in one go
            "dag_wall_seconds": round((max(ends) - min(starts)).total_seconds(), 1) if starts else None,
            "sum_wall_seconds": round(sum(p.get("wall_seconds") or 0 for p in prov.values()), 1),
        },
        **from_results(results),  # what an experiment's settings module has the manifest copy (its MANIFEST)
        "config_digest": digest(cfg),
    }


def from_results(results: Path) -> dict:
    """The fields a manifest copies from result files: each experiment's settings module may name them in
    `MANIFEST` (manifest key -> its result's key); None where the result is absent."""
    out = {}
    for e in registry.load():
        fields = getattr(registry.settings_of(e), "MANIFEST", {})
        result = read_json(results / e.result) if fields and (results / e.result).is_file() else {}
        out.update({key: result.get(field) for key, field in fields.items()})
    return out


def version_name(cfg: dict, prov: dict[str, dict], commit: str, only: list[str] | None = None,
                 laid: dict | None = None) -> str:
    """<last run's date>-<profile>-<hardware>-<commit>, '-only-<experiments>' for a partial version, and
    '-set-<settings>' for one whose settings were laid over its profile's file (named where they are one or two,
    the seeds with their values, else a digest of them)."""
    dates = sorted(p["date"][:10] for p in prov.values() if p.get("date"))
    name = f"{dates[-1]}-{cfg['profile']}-{hardware(prov)}-{commit[:7]}" + (f"-only-{'-'.join(only)}" if only else "")
    if laid:
        name += "-set-" + ("-".join(laid_name(k, v) for k, v in laid.items()) if len(laid) <= 2 else digest(laid)[:8])
    return name


def runs_named(version: str, run_files: list[str]) -> list[str]:
    """The runs (`depth.E4-pre`) a version of some runs was published with, as `version_name` spells them after
    '-only-' (its manifest names only their experiments), among those its run files hold; [] for a version named
    by whole experiments."""
    named = version.split("-only-", 1)[1] if "-only-" in version else ""
    held = {f"{found.experiment}.{found.run}" for found in map(layout.parse, run_files) if found and found.experiment}
    return sorted(run for run in held if f"-{run}-" in f"-{named}-")


def laid_name(key: str, value) -> str:
    """A laid setting in a version's name: its key, and for the seeds their values too, as two nights of one
    commit and day differ only there ('seeds-1341-1342', 'seeds-1340to1346', or a digest of a scattered many)."""
    if key != "seeds" or not isinstance(value, list) or not value:
        return key
    if len(value) <= 3:
        return "seeds-" + "-".join(map(str, value))
    if value == list(range(value[0], value[0] + len(value))):
        return f"seeds-{value[0]}to{value[-1]}"
    return "seeds-" + digest(value)[:8]


def leaves(cfg: dict, prefix: str = "") -> dict:
    """Every setting of a nested profile by its dotted name (`train.precision`); a list is one setting."""
    out = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        out |= leaves(value, f"{name}.") if isinstance(value, dict) and value else {name: value}
    return out


def differing(a: dict, b: dict) -> list[str]:
    """The dotted names whose values differ between two profiles' leaves (a null and an absent setting agree)."""
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


# ------------------------------------------------------------ the settings two profiles' plans differ in
# Each profile is resolved and validated; every job of its plan is compared with the job of the same run and seed
# in the other, on the settings it reads (its rerun trigger), a training run's own `train` laid over the profile's
# as training does.

@dataclass(frozen=True)
class Difference:
    setting: str              # a dotted path into the settings the job reads ('train.steps', 'cost.sizes')
    before: object            # its value in the first profile (None: not set there)
    after: object             # and in the second
    runs: tuple[str, ...] = ()  # the training runs it differs for ((): the whole experiment, or every run of it)


def job_view(cfg: dict, job: Job) -> dict[str, object]:
    """The settings a job reads, by dotted path, without the profile's name and the seed; a training run's own
    entry at the top (its `train` laid over the profile's), beside the shared sections it reads."""
    settings = json.loads(job.settings)
    settings.pop("profile", None)
    settings.pop("seed", None)
    if job.run is None:
        return leaves(settings)
    entry = settings[job.experiment].pop(job.run)
    if not settings[job.experiment]:  # left holding an up-trained run's source, or nothing
        del settings[job.experiment]
    settings.pop("train", None)
    own = {**{k: v for k, v in entry.items() if k != "train"}, "train": run_settings(cfg, job.run).train}
    return {**leaves(settings), **leaves(own)}


def by_run(cfg: dict) -> dict[str, dict[tuple, dict]]:
    """Experiment -> (run, seed) -> that job's settings view."""
    out: dict[str, dict[tuple, dict]] = {}
    for job in plan(cfg):
        out.setdefault(job.experiment, {})[(job.run, job.seed)] = job_view(cfg, job)
    return out


def experiment_differences(before: dict[tuple, dict], after: dict[tuple, dict]) -> list[Difference]:
    """What differs between one experiment's jobs in two profiles: its seeds and runs, then each setting with the
    runs it differs for (none named where it differs alike for every run)."""
    out = []
    for what, pick in (("seeds", lambda key: key[1]), ("runs", lambda key: key[0])):
        was, now = sorted({pick(k) for k in before} - {None}), sorted({pick(k) for k in after} - {None})
        if was != now:
            out.append(Difference(what, was, now))
    changed: dict[tuple, dict] = {}  # (setting, before, after) -> the runs it differs for
    for key in sorted(set(before) & set(after), key=str):
        a, b = before[key], after[key]
        for path in sorted(set(a) | set(b)):
            if a.get(path) != b.get(path):
                pair = (path, json.dumps(a.get(path)), json.dumps(b.get(path)))
                changed.setdefault(pair, {})[key[0]] = None
    runs = {key[0] for key in set(before) & set(after)} - {None}
    for (path, was, now), where in changed.items():
        named = () if set(where) >= runs else tuple(sorted(where))
        out.append(Difference(path, json.loads(was), json.loads(now), named))
    return out


def differences(before: dict, after: dict) -> dict[str, list[Difference]]:
    """Experiment -> what differs between two resolved, validated profiles, in the registry's order; an
    experiment whose jobs read the same settings in both is left out."""
    a, b = by_run(before), by_run(after)
    out = {}
    for e in registry.load():
        found = experiment_differences(a.get(e.name, {}), b.get(e.name, {}))
        if found:
            out[e.name] = found
    return out


def laid_over(cfg: dict, root: Path) -> dict | None:
    """The settings (dotted name -> value) in which `cfg` differs from the project's file of its profile
    (root/config/), as validated: what `--set` laid over it ({} for none); None where that file is not there."""
    path = Path(root, "config", f"{cfg['profile']}.yaml")
    if not path.is_file():
        return None
    mine, profile = leaves(cfg), read_yaml(path, "config file")
    profile = without_planned_seeds(profile) if cfg.get("seeds") != profile.get("seeds") else profile
    laid = {k: mine.get(k) for k in differing(mine, leaves(validate(resolve(profile))))}
    if "seeds" in laid and laid.get("seed") == (laid["seeds"] or [None])[0]:
        del laid["seed"]  # the first of the seeds, which follows them: `--set seeds=[1338]` lays one setting
    return laid


def publish(results: Path, cfg: dict, root: Path | None = None, only: list[str] | None = None,
            record: bool = False) -> Path:
    """Freeze the complete run in `results` (root/results/<profile>/), or its experiments `only` names, into
    root/results/<version>/, beside it; return that folder. `root` is the checkout the runs came from (default:
    the folder holding results/). `record`: it becomes the version of record (results/LATEST names it)."""
    results = Path(results)
    root = Path(root) if root else results.resolve().parent.parent
    only = registry.named(only)
    if record and only:
        raise AttnlabError("a version that holds only some experiments cannot be the version of record: "
                           "publish it without --latest")
    commit, head = check_publishable(results, cfg, root, only)
    if not (root / WORKFLOW).is_file():
        raise AttnlabError(f"{root} has no {WORKFLOW}: a version's RO-Crate names the workflow that made its runs")
    laid = laid_over(cfg, root)
    name = version_name(cfg, provenances(results, cfg, only), commit, only, laid)
    dest = root / "results" / name
    if dest.exists():
        raise AttnlabError(f"version {name} already exists in {dest.parent}; published versions are never rewritten")
    building = dest.with_name(f".{name}.building")
    shutil.rmtree(building, ignore_errors=True)
    for rel in summaries(results, cfg, only):
        (building / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(results / rel, building / rel)
    (building / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    shutil.copy2(root / WORKFLOW, building / WORKFLOW)  # as at the runs' commit: it shapes them (run_shaping)
    meta = manifest(results, cfg, commit, head, name, only) | {"set": laid}
    write_json(building / MANIFEST, meta)
    write_crate(building, meta)
    os.replace(building, dest)  # whole or not at all
    if record:  # the version of record from now on: committed with the version
        Path(root, "results", LATEST).write_text(name + "\n")
    return dest


def latest(root: Path = registry.ROOT) -> str | None:
    """The version of record: the one results/LATEST names (the publisher's choice: `publish --latest`, or the
    file edited and committed), else the newest complete version (the newest at all where none is complete);
    None when none is published. Raises in one line where LATEST names no published version."""
    path = Path(root, "results", LATEST)
    published = versions(root)
    if not path.is_file():
        complete = [m for m in published if m.get("complete", True)] or published
        return complete[0]["version"] if complete else None
    name = path.read_text().strip()
    if name not in {m["version"] for m in published}:
        raise AttnlabError(f"{path} names {name!r}, which is not a published version under {path.parent}: "
                           "write the name of one (results/<version>/) there")
    return name


def claim_ids() -> list[str]:
    """The id of every claim in the project's claims registry: what a complete run's claims.csv holds."""
    return [c.id for c in load_registry().claims]


def read_manifest(folder: Path) -> dict:
    """A version's manifest, whole; raises in one line where it is missing or damaged."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise AttnlabError(f"version {Path(folder).name} has no manifest: {path} is missing; restore it from git "
                           "or remove the folder")
    m = read_json(path, "manifest")
    lacking = [key for key in MANIFEST_KEYS if not isinstance(m.get(key), str)]
    if lacking:
        raise AttnlabError(f"manifest {path} lacks {', '.join(lacking)}: it is not a whole manifest")
    return m


def versions(root: Path = registry.ROOT) -> list[dict]:
    """The manifest of every published version (every folder named <date>-…) under root/results/, newest first."""
    folders = [p for p in sorted(Path(root, "results").glob("*")) if p.is_dir() and NAME.match(p.name)]
    return sorted(map(read_manifest, folders), key=lambda m: (m["published"], m["version"]), reverse=True)


def check_version(folder: Path) -> dict:
    """A published version's manifest, once its profile (config.yaml) is there and reads as one, every run file
    its manifest lists (and each training run's curve) is there, every file it holds is checked as `publish`
    checked it (runfiles; claims.csv complete against the claims registry it was published with), and its RO-Crate
    lists exactly the files it holds, each with the checksum it was published with (crate); raises naming the
    first damaged, missing or extra one."""
    folder = Path(folder)
    m = read_manifest(folder)
    profile = folder / "config.yaml"
    if not profile.is_file():
        raise AttnlabError(f"version {folder.name} is damaged: its profile {profile} is missing; restore it from git")
    settings_of(profile)
    held = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.suffix in (".json", ".csv") and p.name not in (MANIFEST, CRATE))
    wanted = [*(m.get("runs") or {}).get("run_files", []),
              *(layout.sibling(rel, layout.CURVE) for rel in held if Path(rel).name == layout.METRICS)]
    missing = [rel for rel in wanted if not (folder / rel).is_file()]
    if missing:
        raise AttnlabError(f"version {folder.name} is damaged: {len(missing)} of its run files are missing "
                           f"({folder / missing[0]}{', …' if len(missing) > 1 else ''}); restore them from git")
    check_files(folder, held, claim_ids_at(m.get("published_from"), folder) if "claims.csv" in held else None)
    check_crate(folder)  # last: a damaged file is named by what is wrong with it before by its checksum
    return m


CLAIMS_FILE = re.compile(r"claims/[^/]+\.yaml|src/attnlab/experiments/[^/]+/claims\.yaml")


def claim_ids_at(commit: str | None, folder: Path) -> list[str] | None:
    """The id of every claim in the claims registry at `commit` (what `publish` held claims.csv to), read from
    the git history of the repository holding `folder`, else of this checkout; None where neither has it (a
    shallow clone, a copy outside git): claims.csv is then checked row by row only."""
    if not re.fullmatch(r"[0-9a-f]{7,40}", str(commit)):  # a manifest's text never reaches git as an option
        return None
    for where in (Path(folder), registry.ROOT):
        try:  # claims/<experiment>.yaml before each experiment had its folder, <folder>/claims.yaml since
            listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", str(commit)], cwd=where,
                                    capture_output=True, text=True, check=True, timeout=60).stdout.split()
            paths = [p for p in listed if CLAIMS_FILE.fullmatch(p)]
            if not paths:
                continue
            done = subprocess.run(["git", "archive", "--format=tar", str(commit), *paths], cwd=where,
                                  capture_output=True, check=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
            files = [tar.extractfile(f).read() for f in tar.getmembers() if f.name.endswith(".yaml") and f.isfile()]
        return [str(c["id"]) for text in files for c in (yaml.safe_load(text) or {}).get("claims") or []
                if isinstance(c, dict) and "id" in c]
    return None


def manifest_of(results: Path) -> dict | None:
    """The manifest of a published version's folder, every file checked (None for a live results folder)."""
    results = Path(results)
    return check_version(results) if (results / MANIFEST).is_file() or NAME.match(results.resolve().name) else None
