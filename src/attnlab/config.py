"""Load an experiment profile, validate it against the schema and fill defaults."""
from __future__ import annotations

import copy
import hashlib
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

from attnlab.device import device_memory
from attnlab.errors import AttnlabError
from attnlab.nn.spec import ModelSpec
from attnlab import precision, registry
from attnlab.registry import ROOT, settings_of, training
from attnlab.runs import LIKE, OWN_SEEDS, check_train_settings, common_schema, entries, own_seeds, owner, runs, \
    schema_error, setting_path, spec_from_config, spec_path, train_settings

BASE = ROOT / "config" / "base.yaml"  # what every experiment shares; a profile is laid over it


def schema() -> dict:
    """The profile schema: the common part (schemas/config.schema.yaml) with each registered experiment's section
    under its name, as its settings module declares it (a copy: the caller may change it)."""
    return copy.deepcopy(_schema())


@lru_cache(maxsize=None)
def _schema() -> dict:
    # assembled once per process: parsing the schema on every call was most of the Snakefile's start-up
    # (~3 s of ~4.5 s), paid again by every job on a cluster
    sch = copy.deepcopy(common_schema())
    for e in registry.load():
        module = settings_of(e)
        if module.SCHEMA is not None:
            sch["properties"][e.name] = with_own_seeds(module.SCHEMA, e)
            if getattr(module, "REQUIRED", False):
                sch["required"].append(e.name)
    return sch


def with_own_seeds(section: dict, e: registry.Experiment) -> dict:
    """An experiment's section schema, with room for its own seeds where seeds mean something to it: a training
    experiment's (its runs schema has it), or an analysis whose job reads the seeds."""
    if e.trains or "seeds" not in e.reads or "properties" not in section:
        return section
    return {**section, "properties": {**section["properties"], OWN_SEEDS: {"$ref": "#/$defs/own_seeds"}}}


def defaults() -> dict:
    """Each registered experiment's section as its settings module declares it (a training experiment's runs),
    for sections with defaults beyond the schema's: what config/base.yaml and a profile are laid over."""
    return {e.name: copy.deepcopy(d) for e in registry.load() if (d := settings_of(e).DEFAULTS)}


def _fill_defaults(node: dict, sch: dict, root: dict) -> None:
    if "$ref" in sch:
        sch = root["$defs"][sch["$ref"].split("/")[-1]]
    for key, sub in sch.get("properties", {}).items():
        if key not in node and "default" in sub:
            node[key] = copy.deepcopy(sub["default"])
        if isinstance(node.get(key), dict):
            _fill_defaults(node[key], sub, root)
    extra = sch.get("additionalProperties")
    if isinstance(extra, dict):
        for key, value in node.items():
            if key not in sch.get("properties", {}) and isinstance(value, dict):
                _fill_defaults(value, extra, root)


@lru_cache(maxsize=None)
def _validator(partial: bool):
    # built once per process: jsonschema.validate checks the schema itself on every call, which was most of
    # the time of loading a version's profiles (a site pools several versions, each read many times)
    root = schema()
    if partial:
        root["required"] = ["profile"]
    cls = jsonschema.validators.validator_for(root)
    cls.check_schema(root)
    return cls(root)


def validate(cfg: dict, partial: bool = False) -> dict:
    """Return a validated copy of `cfg` with defaults filled; raise AttnlabError naming the problem.

    `partial`: the settings of one job (some sections of a validated profile, as the rules pass them),
    so the sections a whole profile must have are not required.
    """
    checker = _validator(partial)
    root = checker.schema
    for where, value in _numbers(cfg):
        if not math.isfinite(value):
            raise AttnlabError(f"config error at '{where}': {value} is not a finite number")
    err = jsonschema.exceptions.best_match(checker.iter_errors(cfg))  # the error jsonschema.validate would raise
    if err is not None:
        raise schema_error(err, ".".join(str(p) for p in err.absolute_path) or "<top level>")
    cfg = copy.deepcopy(cfg)
    _fill_defaults(cfg, root, root)
    if "seeds" in cfg and (not partial or "seed" not in cfg):
        cfg["seed"] = cfg["seeds"][0]  # what work done once (an analysis, a benchmark) is seeded with
    _check_runs(cfg)
    _check_own_seeds(cfg)
    return cfg


def seeds(cfg: dict, experiment: str | None = None) -> list[int]:
    """The seeds of a profile or of one job's settings, as resolve() and validate() normalised them: `experiment`'s
    own where its section sets them, else the profile's list, else (a job's settings that carry one seed: a
    training run's, or a job that reads only `seed`) that one seed. Every reader of the seeds asks here."""
    own = own_seeds(cfg, experiment) if experiment else None
    if own:
        return own
    if cfg.get("seeds"):
        return list(cfg["seeds"])
    if cfg.get("seed") is None:
        raise AttnlabError(f"settings of profile {cfg.get('profile')!r} name no seeds")
    return [cfg["seed"]]


def _check_own_seeds(cfg: dict) -> None:
    """An experiment's own seeds begin with the profile's (its first look), and an up-trained run's source is
    trained at every seed the run is."""
    profile = cfg.get("seeds") or []
    for e in registry.load():
        own = own_seeds(cfg, e.name)
        if own is None:
            continue
        if own[:len(profile)] != profile:
            raise AttnlabError(f"config error at '{e.name}.{OWN_SEEDS}': {own} must begin with the profile's seeds "
                               f"{profile} (the verdicts' first look), then add the seeds it needs")
        for name, run in runs_of(cfg, e.name).items():
            source = (run or {}).get("init_from")
            there = owner(cfg, source) if source else None
            if there and there != e.name and (own_seeds(cfg, there) or profile)[:len(own)] != own:
                raise AttnlabError(f"config error at '{e.name}.{OWN_SEEDS}': run '{name}' starts from '{source}' "
                                   f"({there}), which is not trained at seeds {own}; give {there} the same seeds")


def runs_of(cfg: dict, experiment: str) -> dict:
    """The runs of a training experiment, name -> entry ({} for an experiment that trains nothing)."""
    return entries(cfg.get(experiment)) if experiment in training() else {}


def _numbers(node, path=""):
    """(dotted path, value) of every float in a parsed config (YAML's .nan and .inf are floats)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _numbers(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _numbers(value, f"{path}[{i}]")
    elif isinstance(node, float):
        yield path, node


def _check_runs(cfg: dict) -> None:
    """Every training run: a unique name, a valid spec, a size that fits in memory, and windows its settings can
    actually score."""
    seen, checked = {}, {}
    for experiment, name in runs(cfg):
        if name in seen:
            raise AttnlabError(f"config error: run name '{name}' is used by both '{seen[name]}' and "
                               f"'{experiment}'; run names must be unique")
        seen[name] = experiment
        spec = spec_from_config(cfg, name)
        settings = check_train_settings(cfg, name)
        for n in settings.get("eval_contexts") or []:
            if spec.position == "learned" and n > spec.positions:
                raise AttnlabError(f"config error: run '{name}' evaluates windows of {n} tokens but its learned "
                                   f"position table has {spec.positions} rows; set max_positions: {n} or more")
        checked[name] = spec, settings
    check_memory(cfg, {name: (spec, settings["batch_size"]) for name, (spec, settings) in checked.items()})
    for name, (spec, settings) in checked.items():  # after the sizes: a context too long to fit is named as such
        scored = settings["train_eval_tokens"]
        if scored is not None and scored < spec.context:
            where = setting_path(cfg, name, "train_eval_tokens")
            raise AttnlabError(f"config error at '{where}': {scored} tokens are fewer than run '{name}''s "
                               f"context of {spec.context}, so not one window of the training split would be "
                               f"scored; set it to {spec.context} or more (or null for the whole split)")


def check_memory(cfg: dict, sizes: dict[str, tuple[ModelSpec, int]]) -> None:
    """Refuse runs (name -> (spec, batch size)) whose training clearly cannot fit in the memory of the device they
    would run on: a lower bound of their bytes (fp32: the parameters with their gradients and AdamW's two moments,
    and what autograd keeps of each window) against all of the device's memory. Named: the context if one window
    alone is too big for some run, else the width if the parameters alone are, else the batch size."""
    have, where = device_memory(cfg["device"])
    if have is None:
        return
    rows = []
    for name, (spec, batch) in sizes.items():
        params, window = spec.training_floor()
        p, w = 16 * params, 4 * window
        rows.append([
            (w, f"the activations of one window of {spec.context:,} tokens", spec_path(cfg, name, "context")),
            (p, f"its {params:,} parameters (with their gradients and AdamW's two moments)",
             spec_path(cfg, name, "d_model")),
            (p + batch * w, f"a batch of {batch:,} windows ({size(p)} for the parameters, {size(batch * w)} for the "
                            f"activations)", setting_path(cfg, name, "batch_size")),
        ])
    for tier in zip(*rows):  # every run's one window, then every run's parameters, then every run's batch
        for name, (n_bytes, what, key) in zip(sizes, tier):
            if n_bytes > have:
                raise AttnlabError(f"config error at '{key}': run '{name}' needs at least {size(n_bytes)} for {what}, "
                                   f"more than the {size(have)} {where}")


def size(n_bytes: float) -> str:
    """Bytes in MiB, GiB or TiB, whichever reads best."""
    gib = n_bytes / 2**30
    return f"{gib * 1024:,.1f} MiB" if gib < 1 else f"{gib:,.1f} GiB" if gib < 1000 else f"{gib / 1024:,.0f} TiB"


MAX_VALUES = 100_000  # the values a profile's aliases may expand it to: ~100x the chapter's whole profile


class StrictLoader(yaml.SafeLoader):
    """YAML as a profile must be: every key of a mapping given once (YAML says so; PyYAML would keep the last
    silently), and aliases that do not expand the document past MAX_VALUES values (an alias bomb: a few lines
    that every later walk of the settings would take hours over) or into itself."""

    def construct_document(self, node):
        _check_node(node, "", {}, set())
        return super().construct_document(node)


def _check_node(node, where: str, sizes: dict, open_nodes: set) -> int:
    """The number of values `node` expands to, aliases followed; raises at a key given twice, or an alias that
    expands the document past MAX_VALUES or contains itself. Each node is walked once (`sizes`), however often
    aliases repeat it."""
    if id(node) in sizes:
        return sizes[id(node)]
    if id(node) in open_nodes:
        raise yaml.constructor.ConstructorError(None, None, f"an alias at '{where or '<top level>'}' refers to "
                                                f"a node that holds it, so it never ends", node.start_mark)
    open_nodes.add(id(node))
    size = 1
    if isinstance(node, yaml.MappingNode):
        first = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            at = f"{where}.{name}" if where else str(name)
            if name is not None and key.tag != "tag:yaml.org,2002:merge":
                if name in first:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key '{at}' is given twice (first at line {first[name] + 1}); keep one",
                        key.start_mark)
                first[name] = key.start_mark.line
            size += _check_node(value, at, sizes, open_nodes)
    elif isinstance(node, yaml.SequenceNode):
        size += sum(_check_node(item, f"{where}[{i}]", sizes, open_nodes) for i, item in enumerate(node.value))
    open_nodes.discard(id(node))
    if size > MAX_VALUES and size > len(sizes) + 1:  # more values than nodes so far: aliases repeat some
        raise yaml.constructor.ConstructorError(None, None, f"its aliases expand '{where or '<top level>'}' to "
                                                f"more than {MAX_VALUES:,} values (an alias bomb?)", node.start_mark)
    sizes[id(node)] = size
    return size


def read_yaml(path: str | Path, what: str) -> dict:
    """A YAML mapping from `path` (read by StrictLoader); `what` names the file in the one-line error."""
    path = Path(path)
    if path.is_dir():
        raise AttnlabError(f"{what} {path} is a folder, not a file: give a YAML file")
    if not path.is_file():
        raise AttnlabError(f"{what} not found: {path}")
    try:
        doc = yaml.load(path.read_text(), Loader=StrictLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or " ".join(str(err).split())
        raise AttnlabError(f"{what} {path} is not valid YAML{where}: {problem}") from None
    except UnicodeDecodeError as err:
        raise AttnlabError(f"{what} {path} is not UTF-8 text: {err.reason} at byte {err.start}") from None
    if doc is None:
        raise AttnlabError(f"{what} {path} is empty")
    if not isinstance(doc, dict):
        raise AttnlabError(f"{what} {path} must hold a mapping of settings, got a {type(doc).__name__}")
    return doc


def base_profile() -> dict:
    """config/base.yaml (a copy), parsed once for as long as the file is unchanged: every profile, and every
    version's settings a site reads, is resolved over it (parsing it each time was a third of a site's build)."""
    if not BASE.is_file():
        return read_yaml(BASE, "base profile")  # the one-line error
    stat = BASE.stat()
    return copy.deepcopy(_base_as_of(stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=4)
def _base_as_of(mtime_ns: int, size: int) -> dict:
    return read_yaml(BASE, "base profile")


def resolve(profile: dict) -> dict:
    """A profile laid over config/base.yaml laid over the registered defaults (every run), then each training
    experiment's `base` laid under its runs. A section under an experiment's former name is read as its own."""
    profile = dict(profile)
    for e in registry.load():
        if e.formerly and e.formerly in profile:
            if e.name in profile:
                raise AttnlabError(f"config error at '{e.formerly}': the section is now '{e.name}', "
                                   f"and the profile has both; keep '{e.name}'")
            profile[e.name] = profile.pop(e.formerly)
    cfg = merged(merged(defaults(), base_profile()), profile)
    seed = profile.get("seed")
    if seed is not None and "seeds" not in profile:  # `seed: 7` (a version published before seeds) is one seed
        cfg["seeds"] = [seed]
    elif seed is not None and seed != (cfg.get("seeds") or [None])[0]:
        raise AttnlabError(f"config error at 'seed': {seed!r} is not the first of seeds {cfg.get('seeds')}; "
                           "give the seeds as a list (--config seeds=[7,8,9]), not 'seed'")
    written = {}  # (experiment, run) -> the run's entry as written, before its section's base
    for experiment in training():
        section = cfg.get(experiment)
        if isinstance(section, dict):
            written |= {(experiment, name): run for name, run in entries(section).items()}
        if isinstance(section, dict) and "base" in section:
            base = section.pop("base") or {}
            if not isinstance(base, dict):
                raise AttnlabError(f"config error at '{experiment}.base': must be a mapping of run settings")
            cfg[experiment] = {name: run if name == OWN_SEEDS else merged(base, run or {})
                               for name, run in section.items()}
    resolve_likes(cfg, written)
    precision.resolve(cfg)  # auto: bf16 or fp32, decided here so that the settings say which
    return cfg


def resolve_likes(cfg: dict, written: dict) -> None:
    """Each run that is `like` another becomes that run's settings (as resolved, its own `like` followed first)
    with its own entry laid over them; its section's `base` is not laid under it again. `written`: (experiment,
    run) -> the entry as the profile wrote it. The `like` stays in the entry: what the run is a variant of."""
    where = {name: experiment for experiment, name in runs(cfg)}
    settled = set()

    def settle(name: str, chain: list[str]) -> dict:
        experiment = where[name]
        own = written.get((experiment, name)) or {}
        target = own.get(LIKE) if isinstance(own, dict) else None
        if target is None or name in settled:
            return cfg[experiment][name] or {}
        at = f"config error at '{experiment}.{name}.{LIKE}'"
        if not isinstance(target, str) or target not in where:
            near = [n for n, e in where.items() if e == experiment and n != name]
            raise AttnlabError(f"{at}: no run of this profile is called {target!r} ({experiment}'s runs: "
                               f"{', '.join(near)}; another experiment's may be named too)")
        if target in [*chain, name]:
            loop = [*chain[chain.index(target):], name, target] if target in chain else [name, target]
            raise AttnlabError(f"{at}: its likes run in a circle ({' → '.join(loop)}); one of them must give "
                               "its own settings")
        cfg[experiment][name] = merged(settle(target, [*chain, name]), own)
        settled.add(name)
        return cfg[experiment][name]

    for name in where:
        settle(name, [])


def load(path: str | Path) -> dict:
    return validate(resolve(read_profile(path)))


EXTENDS = "extends"  # in a profile file: the profile it is laid over (a reader's own file, over quick)


def profile_file(name: str, beside: Path | None = None) -> Path:
    """The file of profile `name`: a path (ending .yaml or .yml; relative to the folder of the file naming it,
    `beside`), or the name of one in config/ (smoke, quick, chapter)."""
    if name.endswith((".yaml", ".yml")):
        return Path(beside, name) if beside is not None else Path(name)
    return (BASE.parent if beside is not None else Path("config")) / f"{name}.yaml"


def read_profile(path: str | Path, chain: tuple[Path, ...] = ()) -> dict:
    """A profile file as written, laid over the profile it `extends` (that one's own `extends` followed first), so
    that a reader's file holds only what it adds: `extends: quick` and a run of their own."""
    path = Path(path)
    doc = read_yaml(path, "config file")
    parent = doc.pop(EXTENDS, None)
    if parent is None:
        return doc
    if not isinstance(parent, str) or not parent:
        raise AttnlabError(f"config error at '{EXTENDS}' in {path}: give a profile's name (smoke, quick, chapter) "
                           f"or the path of its file, not {parent!r}")
    over = profile_file(parent, path.parent)
    if over.resolve() in (p.resolve() for p in (*chain, path)):
        loop = " → ".join(map(str, (*chain, path, over)))
        raise AttnlabError(f"config error at '{EXTENDS}' in {path}: the profiles extend each other in a circle "
                           f"({loop}); one of them must be a whole profile")
    if not over.is_file():
        raise AttnlabError(f"config error at '{EXTENDS}' in {path}: profile '{parent}' not found ({over}); give "
                           "smoke, quick, chapter or the path of a profile file")
    return merged(read_profile(over, (*chain, path)), doc)


def declared(run: str) -> str | None:
    """The experiment that declares training run `run` for every profile (None if none does)."""
    return owner(resolve({}), run)


@dataclass(frozen=True)
class RunSettings:
    """A training run as the profile declares it, resolved: its model, its train settings, the run it starts from."""
    experiment: str
    spec: ModelSpec
    train: dict
    init_from: str | None = None


def run_settings(cfg: dict, name: str) -> RunSettings | None:
    """Training run `name` of profile `cfg`, resolved as its job reads it; None where the profile declares no such
    run (a published version may predate it). What the report reads of a run's settings."""
    experiment = owner(cfg, name)
    if experiment is None:
        return None
    return RunSettings(experiment, spec_from_config(cfg, name), train_settings(cfg, name),
                       cfg[experiment][name].get("init_from"))


def runs_settings(cfg: dict, experiment: str) -> dict[str, RunSettings]:
    """Every training run an experiment's section of `cfg` declares, name -> its resolved settings."""
    return {name: run_settings(cfg, name) for name in entries(cfg.get(experiment))}


def command_line(items: list[str]) -> dict:
    """`KEY=VALUE` settings from a command line (`--set seeds=[1337]`), read as Snakemake reads --config: a list or
    a mapping as YAML, every scalar a string (typed by `chosen`)."""
    bad = [item for item in items if "=" not in item]
    if bad:
        raise AttnlabError(f"'{bad[0]}' is not a setting: give KEY=VALUE (e.g. seeds=[1337])")
    return {k: yaml.load(v, Loader=yaml.BaseLoader) for k, v in (item.split("=", 1) for item in items)}


def chosen(config: dict, configfiles) -> dict:
    """The profile a `snakemake` invocation asks for: a whole one given with --configfile (Snakemake has read
    it into `config`), else the one named by `--config profile=NAME|FILE` (quick by default) with any other
    `--config key=value` laid over it. Read here, so that a missing or broken file is named with its line."""
    if configfiles:
        for file in configfiles:  # read again as a profile is: a key given twice or an alias bomb is named
            if EXTENDS in read_yaml(file, "config file"):
                raise AttnlabError(f"config file {file} extends another profile, which --configfile cannot lay it "
                                   f"over: give it as --config profile={file}")
        return resolve(dict(config))
    name = str(config.get("profile", "quick"))
    path = profile_file(name)
    if not path.is_file() and Path(name).is_dir():
        raise AttnlabError(f"config file {name} is a folder, not a profile: give a profile's YAML file, or the "
                           "name of one in config/ (smoke, quick or chapter)")
    overrides = {k: _typed(v) for k, v in config.items() if k != "profile"}
    if "seed" in overrides and "seeds" not in overrides:  # --config seed=7: train every run once, at seed 7
        overrides["seeds"] = [overrides.pop("seed")]
    profile = read_profile(path)
    return resolve(merged(without_planned_seeds(profile) if "seeds" in overrides else profile, overrides))


def without_planned_seeds(profile: dict) -> dict:
    """A profile file's sections without their own seeds: what a run given its seeds (`--set seeds=[1340]`, a
    seed a night) reads, since the second looks a file plans (`ladder: {seeds: [...]}`) are not that run's."""
    return {k: {n: v for n, v in section.items() if n != OWN_SEEDS} if isinstance(section, dict) else section
            for k, section in profile.items()}


def _typed(value):
    """A `--config` value as YAML would type it: Snakemake reads nested ones (`seeds=[7,8]`,
    `train='{steps: 10}'`) with every scalar left a string."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, str):
        try:
            typed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        return typed if isinstance(typed, (int, float, bool)) or typed is None else value
    return value


def load_settings(arg: str) -> dict:
    """`--config`: a profile file, or one job's settings as inline JSON (what the rules pass)."""
    if not arg.lstrip().startswith("{"):
        return load(arg)
    try:
        settings = json.loads(arg)
    except json.JSONDecodeError as err:
        raise AttnlabError(f"inline settings are not valid JSON: {err}") from None
    return validate(settings, partial=True)


def merged(base: dict, overrides: dict) -> dict:
    """`base` with `overrides` laid over it, section by section (`--config train='{steps: 10}'` keeps the rest)."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def canonical(obj) -> str:
    """Settings as one JSON text that depends on their content only, never on the order they were written in."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def job_settings(cfg: dict, *sections: str, **extra) -> str:
    """The settings one job reads, as canonical JSON: the profile's name, `sections` of it (a dotted one,
    e.g. 'ladder.L9', picks one entry of a section), and `extra`."""
    picked = {"profile": cfg["profile"]}
    for section in sections:
        key, _, entry = section.partition(".")
        if key in cfg and not entry:
            picked[key] = cfg[key]
        elif entry in (cfg.get(key) or {}):
            picked.setdefault(key, {})[entry] = cfg[key][entry]
    return canonical({**picked, **extra})


def digest(obj) -> str:
    """A short, stable hash of any JSON-serialisable settings."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:16]
