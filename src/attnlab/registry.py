"""The experiment registry (experiments.yaml): every experiment declared once, under one name.

Read by the CLI, the Snakemake rules, the claims, the site and publishing; none keeps a list of its own.
Nothing here imports torch: the Snakefile reads it on every invocation.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import jsonschema
import yaml

from attnlab import layout
from attnlab.errors import AttnlabError

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parents[1]  # the project folder: claims/, config/, docs/ (the package is used from a checkout)
REGISTRY = PACKAGE / "experiments.yaml"
SCHEMA = PACKAGE / "schemas" / "experiments.schema.yaml"


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    kind: str  # data | training | analysis | benchmark
    producer: str
    reads: tuple[str, ...] = ()
    data: bool = False
    claims: bool = True
    needs: tuple[str, ...] = ()  # finished work of other experiments it reads: 'name' (all of it) or 'name.run'
    every_seed: bool = False  # it reads the training runs it needs at every seed of the profile, not the first only
    formerly: str | None = None  # the name it had: published versions hold its section and results under it

    @property
    def page(self) -> str:
        return f"attnlab.report.pages.{self.name}"

    @property
    def settings(self) -> str:
        """Its settings module: the schema of its profile section, its defaults and its checks."""
        return f"attnlab.settings.{self.name}"

    @property
    def claims_file(self) -> str:
        return f"claims/{self.name}.yaml"

    @property
    def needed_runs(self) -> tuple[str, ...]:
        """The single training runs among its needs ('ladder.L9'), not whole experiments."""
        return tuple(n for n in self.needs if "." in n)

    @property
    def needed_run_names(self) -> tuple[str, ...]:
        """The names of those runs ('L9'), as a profile's settings name them."""
        return tuple(n.partition(".")[2] for n in self.needed_runs)

    @property
    def trains(self) -> bool:
        return self.kind == "training"

    @property
    def gpu(self) -> bool:
        return self.kind in ("training", "benchmark")

    @property
    def result(self) -> str | None:
        """Its one run file relative to results/<profile>/ (None for training: one per run)."""
        return layout.result(self.name, self.kind)

    def run_dir(self, run: str, seed: int) -> str:
        """A training run's folder at one seed, relative to results/<profile>/."""
        return layout.run_dir(self.name, run, seed)


def settings_of(e: Experiment) -> ModuleType:
    """An experiment's settings module (torch-free: SCHEMA, DEFAULTS, check())."""
    return importlib.import_module(e.settings)


def module_file(module: str) -> Path:
    """Where a module of the package lives, found without importing it (or torch with it)."""
    return PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")


@lru_cache(maxsize=None)
def load(path: Path = REGISTRY, root: Path | None = None) -> tuple[Experiment, ...]:
    """The registry, checked: one line naming the first entry whose name, module, page or claims file is wrong.
    `root`: the project folder holding claims/ and docs/ (default: beside the package source)."""
    root = Path(root) if root else ROOT
    try:
        doc = yaml.safe_load(Path(path).read_text())
        jsonschema.validate(doc, yaml.safe_load(SCHEMA.read_text()))
    except (OSError, yaml.YAMLError) as err:
        raise AttnlabError(f"experiment registry {path} cannot be read: {' '.join(str(err).split())}") from None
    except jsonschema.ValidationError as err:
        where = ".".join(str(p) for p in err.absolute_path) or "<top level>"
        raise AttnlabError(f"experiment registry {path} at '{where}': {err.message}") from None
    out, seen = [], set()
    for entry in doc["experiments"]:
        e = Experiment(**{**entry, "reads": tuple(entry.get("reads", ())), "needs": tuple(entry.get("needs", ()))})
        if e.name in seen:
            raise AttnlabError(f"experiment registry {path}: two experiments are named '{e.name}'")
        for need in e.needs:  # only earlier entries: the order of the registry is an order the DAG can run in
            if need.partition(".")[0] not in seen:
                raise AttnlabError(f"experiment registry {path}: '{e.name}' needs '{need}', which is not an "
                                   "experiment declared before it")
        seen.add(e.name)
        needed = [("producer", module_file(e.producer)), ("page", module_file(e.page)),
                  ("settings module", module_file(e.settings)),
                  ("page template", root / "docs" / f"{e.name}.md")]
        if e.claims:
            needed.append(("claims file", root / e.claims_file))
        for what, file in needed:
            if not file.is_file():
                raise AttnlabError(f"experiment registry {path}: '{e.name}' names a {what} that does not exist: {file}")
        out.append(e)
    if [e.kind for e in out].count("data") != 1:
        raise AttnlabError(f"experiment registry {path}: exactly one experiment must be of kind 'data'")
    return tuple(out)


OVERVIEW, DASHBOARD, COMPARE = "index", "dashboard", "compare"  # generated pages besides one per experiment
PAGE_TITLES = {OVERVIEW: "Overview", DASHBOARD: "Every claim", COMPARE: "Compare versions"}


def pages() -> dict[str, str]:
    """Every generated page of the site (module name -> title): the overview, each experiment, every claim on
    one page, the comparison."""
    return {OVERVIEW: PAGE_TITLES[OVERVIEW], **{e.name: e.title for e in load()},
            DASHBOARD: PAGE_TITLES[DASHBOARD], COMPARE: PAGE_TITLES[COMPARE]}


def experiments(kind: str | None = None, *, trains: bool | None = None) -> list[Experiment]:
    return [e for e in load() if (kind is None or e.kind == kind) and (trains is None or e.trains == trains)]


def get(name: str) -> Experiment:
    for e in load():
        if e.name == name:
            return e
    raise AttnlabError(f"unknown experiment '{name}' (the registry has {', '.join(e.name for e in load())})")


def named(items: list[str] | None) -> list[str] | None:
    """The experiments a command line names (`--only ladder position` or `--only cost,decode`), each checked;
    None where it names none."""
    return [get(name.strip()).name for item in items or [] for name in item.split(",") if name.strip()] or None


def standalone() -> list[Experiment]:
    """The benchmarks that need neither the token files nor a trained run: what runs without the DAG, on a
    machine that has torch but not Snakemake (tools/gpu-benchmarks.sh), and what a benchmarks-only version holds."""
    return [e for e in load() if e.kind == "benchmark" and not e.data]


def training() -> tuple[str, ...]:
    """Names of the experiments whose runs are declared in the profile (config sections of training runs)."""
    return tuple(e.name for e in load() if e.trains)
