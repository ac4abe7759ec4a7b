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
NAME = PACKAGE.name
REGISTRY = PACKAGE / "experiments.yaml"
EXPERIMENTS = PACKAGE / "experiments"  # one folder per experiment
SCHEMA = PACKAGE / "schemas" / "experiments.schema.yaml"
FOLDER_SCHEMA = PACKAGE / "schemas" / "experiment.schema.yaml"


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
    bf16_kept: tuple[str, str] | None = None  # (bf16 version, fp32 version): its verdicts the same in both

    @property
    def module(self) -> str:
        """Its folder, as a package: attnlab.experiments.<name>."""
        return f"{NAME}.experiments.{self.name}"

    @property
    def folder(self) -> Path:
        return folder_of(self.name)

    @property
    def page(self) -> str:
        return f"{self.module}.page"

    @property
    def settings(self) -> str:
        """Its settings module: the schema of its profile section, its defaults and its checks."""
        return f"{self.module}.settings"

    @property
    def template(self) -> Path:
        """Its page's prose, with <!-- attnlab:marker --> where the page module's blocks go."""
        return self.folder / "page.md"

    @property
    def claims_file(self) -> Path:
        return self.folder / "claims.yaml"

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


def folder_of(name: str) -> Path:
    """An experiment's folder: its settings, producer, page, page template, claims and experiment.yaml."""
    return EXPERIMENTS / name


def settings_of(e: Experiment) -> ModuleType:
    """An experiment's settings module (torch-free: SCHEMA, DEFAULTS, check())."""
    return importlib.import_module(e.settings)


def module_file(module: str) -> Path:
    """Where a module of the package lives, found without importing it (or torch with it)."""
    return PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")


def _validated(path: Path, schema: Path, what: str) -> dict:
    try:
        doc = yaml.safe_load(Path(path).read_text())
        jsonschema.validate(doc, yaml.safe_load(schema.read_text()))
    except (OSError, yaml.YAMLError) as err:
        raise AttnlabError(f"{what} {path} cannot be read: {' '.join(str(err).split())}") from None
    except jsonschema.ValidationError as err:
        where = ".".join(str(p) for p in err.absolute_path) or "<top level>"
        raise AttnlabError(f"{what} {path} at '{where}': {err.message}") from None
    return doc


def _experiment(entry: dict, path: Path) -> Experiment:
    """A registry line and its folder's experiment.yaml, as one Experiment."""
    name, folder = entry["name"], folder_of(entry["name"])
    if not folder.is_dir():
        raise AttnlabError(f"experiment registry {path}: '{name}' has no folder {folder} "
                           f"(python -m attnlab new-experiment {name} writes one)")
    meta = _validated(folder / "experiment.yaml", FOLDER_SCHEMA, f"experiment '{name}':")
    default = "attnlab.train" if entry["kind"] == "training" else f"{NAME}.experiments.{name}.producer"
    return Experiment(name=name, kind=entry["kind"], needs=tuple(entry.get("needs", ())),
                      title=meta["title"], producer=meta.get("producer", default), reads=tuple(meta.get("reads", ())),
                      data=meta.get("data", False), every_seed=meta.get("every_seed", False),
                      formerly=meta.get("formerly"), claims=(folder / "claims.yaml").is_file(),
                      bf16_kept=(meta["bf16_kept"]["bf16"], meta["bf16_kept"]["fp32"]) if "bf16_kept" in meta
                      else None)


@lru_cache(maxsize=None)
def load(path: Path = REGISTRY) -> tuple[Experiment, ...]:
    """The registry, checked: one line naming the first entry whose name, folder, module or page is wrong.
    An experiment is its folder (src/attnlab/experiments/<name>/) and its line here."""
    doc = _validated(path, SCHEMA, "experiment registry")
    out, seen = [], set()
    for entry in doc["experiments"]:
        if entry["name"] in seen:
            raise AttnlabError(f"experiment registry {path}: two experiments are named '{entry['name']}'")
        for need in entry.get("needs", ()):  # only earlier entries: the registry's order is one the DAG can run in
            if need.partition(".")[0] not in seen:
                raise AttnlabError(f"experiment registry {path}: '{entry['name']}' needs '{need}', which is not an "
                                   "experiment declared before it")
        e = _experiment(entry, path)
        seen.add(e.name)
        for what, file in [("producer", module_file(e.producer)), ("page", module_file(e.page)),
                           ("settings module", module_file(e.settings)), ("page template", e.template)]:
            if not file.is_file():
                raise AttnlabError(f"experiment registry {path}: '{e.name}' names a {what} that does not exist: {file}")
        out.append(e)
    if [e.kind for e in out].count("data") != 1:
        raise AttnlabError(f"experiment registry {path}: exactly one experiment must be of kind 'data'")
    return tuple(out)


@lru_cache(maxsize=None)
def claim_ids(name: str) -> tuple[str, ...]:
    """The ids of the claims experiment `name` decides, in its claims.yaml's order (none where it has no such file),
    read without checking or compiling them (attnlab.claims.registry does that): what the report's captions name."""
    e = get(name)
    return tuple(str(c["id"]) for c in yaml.safe_load(e.claims_file.read_text())["claims"]) if e.claims else ()


def relative(path: Path) -> str:
    """A path of the project as the workflow names it: relative to the project folder."""
    return str(Path(path).relative_to(ROOT))


def page_module(page: str) -> str:
    """The module that fills a page's blocks: an experiment's page.py, else attnlab.report.pages.<page>."""
    return get(page).page if page in {e.name for e in load()} else f"{NAME}.report.pages.{page}"


def template(page: str, docs: Path) -> Path:
    """A page's prose: an experiment's page.md, else <docs>/<page>.md (the site's own pages)."""
    return get(page).template if page in {e.name for e in load()} else Path(docs) / f"{page}.md"


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
    """The experiments a command line names (`--only ladder position` or `--only cost,decode`), or runs of one
    (`--only depth.E4-pre depth.E4-post`), each experiment checked (a run is checked against the profile, by the
    plan); None where it names none."""
    names = [name.strip() for item in items or [] for name in item.split(",") if name.strip()]
    return [get(e).name + (f".{run}" if run else "") for e, _, run in (n.partition(".") for n in names)] or None


def standalone() -> list[Experiment]:
    """The benchmarks that need neither the token files nor a trained run: what runs without the DAG, on a
    machine that has torch but not Snakemake (tools/gpu-benchmarks.sh), and what a benchmarks-only version holds."""
    return [e for e in load() if e.kind == "benchmark" and not e.data]


def training() -> tuple[str, ...]:
    """Names of the experiments whose runs are declared in the profile (config sections of training runs)."""
    return tuple(e.name for e in load() if e.trains)
