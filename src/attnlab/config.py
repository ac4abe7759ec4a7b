"""Load an experiment profile, validate it against the schema and fill defaults."""
from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from attnlab.device import device_memory
from attnlab.errors import AttnlabError
from attnlab.nn.spec import ModelSpec
from attnlab.registry import ROOT, training

SCHEMA_PATH = Path(str(resources.files("attnlab") / "schemas" / "config.schema.yaml"))
BASE = ROOT / "config" / "base.yaml"  # every run, declared once; a profile is laid over it


def schema() -> dict:
    """The profile schema, with a section of runs for every training experiment in the registry (a copy: the
    caller may change it)."""
    return copy.deepcopy(_schema())


@lru_cache(maxsize=None)
def _schema() -> dict:
    # parsed once per process: every run's train settings are checked against it, and parsing it each time
    # was most of the Snakefile's start-up (~3 s of ~4.5 s), paid again by every job on a cluster
    sch = yaml.safe_load(SCHEMA_PATH.read_text())
    for name in training():
        sch["properties"].setdefault(name, {"$ref": "#/$defs/runs"})
    return sch


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


def validate(cfg: dict, partial: bool = False) -> dict:
    """Return a validated copy of `cfg` with defaults filled; raise AttnlabError naming the problem.

    `partial`: the settings of one job (some sections of a validated profile, as the rules pass them),
    so the sections a whole profile must have are not required.
    """
    root = schema()
    if partial:
        root["required"] = ["profile"]
    for where, value in _numbers(cfg):
        if not math.isfinite(value):
            raise AttnlabError(f"config error at '{where}': {value} is not a finite number")
    try:
        jsonschema.validate(cfg, root)
    except jsonschema.ValidationError as err:
        raise schema_error(err, ".".join(str(p) for p in err.absolute_path) or "<top level>") from None
    cfg = copy.deepcopy(cfg)
    _fill_defaults(cfg, root, root)
    if "seeds" in cfg and (not partial or "seed" not in cfg):
        cfg["seed"] = cfg["seeds"][0]  # what work done once (an analysis, a benchmark) is seeded with
    _check_runs(cfg)
    heads, width = (cfg.get("multihead") or {}).get("heads") or [], (cfg.get("multihead") or {}).get("d_model")
    for h in heads:
        if width and width % h:
            raise AttnlabError(f"config error at 'multihead.heads': {h} heads do not divide "
                               f"multihead.d_model={width} (each head would be {width / h:g} wide)")
    return cfg


def schema_error(err: jsonschema.ValidationError, where: str) -> AttnlabError:
    """The one line for a schema error at `where`; a number YAML 1.1 read as text (`1e-3`) gets its fix."""
    hint = ""
    if err.validator == "type" and "number" in str(err.validator_value) and isinstance(err.instance, str):
        number = re.fullmatch(r"([-+]?\d+)(\.\d*)?[eE]([-+]?)(\d+)", err.instance.strip())
        if number:
            whole, frac, sign, exp = number.groups()
            hint = (f"; YAML 1.1 reads {err.instance} as text: write it with a dot and a signed exponent, "
                    f"{whole}{frac if frac and len(frac) > 1 else '.0'}e{sign or '+'}{exp}")
    return AttnlabError(f"config error at '{where}': {err.message}{hint}")


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
        settings = train_settings(cfg, name)
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


def runs(cfg: dict) -> list[tuple[str, str]]:
    """(experiment, run name) of every training run the profile declares."""
    return [(experiment, name) for experiment in training() for name in cfg.get(experiment) or {}]


def setting_path(cfg: dict, name: str, key: str) -> str:
    """Where run `name`'s train setting `key` is written: its own override, else the profile's train section."""
    experiment, run = find_run(cfg, name)
    return f"{experiment}.{name}.train.{key}" if key in (run.get("train") or {}) else f"train.{key}"


def spec_path(cfg: dict, name: str, key: str) -> str:
    """Where run `name`'s model setting `key` is written: its own entry, else the profile's model section."""
    experiment, run = find_run(cfg, name)
    return f"{experiment}.{name}.{key}" if key in run else f"model.{key}"


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


def longest_window(cfg: dict, name: str) -> int:
    """The longest window of tokens run `name` reads from the validation split."""
    return max([spec_from_config(cfg, name).context, *(train_settings(cfg, name).get("eval_contexts") or [])])


def find_run(cfg: dict, name: str) -> tuple[str, dict]:
    """(experiment, run entry) of the training run called `name`."""
    for experiment in training():
        if name in (cfg.get(experiment) or {}):
            return experiment, cfg[experiment][name]
    known = [n for e in training() for n in cfg.get(e) or {}]
    raise AttnlabError(f"unknown run '{name}' (config has {', '.join(known)})")


def train_settings(cfg: dict, name: str) -> dict:
    """The profile's `train` section with the run's own overrides, checked against the schema."""
    experiment, run = find_run(cfg, name)
    overrides = run.get("train") or {}
    settings = {**cfg["train"], **overrides}
    err = jsonschema.exceptions.best_match(_train_validator().iter_errors(settings))  # what validate() raises
    if err is not None:  # the profile's own train section passed: the run's overrides broke it
        key, *rest = [*err.absolute_path] or [None]
        where = f"{experiment}.{name}.train" if key is None else setting_path(cfg, name, key)
        raise schema_error(err, ".".join([where, *map(str, rest)]))
    return settings


@lru_cache(maxsize=None)
def _train_validator():
    # built once: every check reads each run's train settings, several times (jsonschema.validate would check
    # the schema itself on every call, most of `attnlab check`'s time)
    sch = _schema()["properties"]["train"]
    return jsonschema.validators.validator_for(sch)(sch)


def read_yaml(path: str | Path, what: str) -> dict:
    """A YAML mapping from `path`; `what` names the file in the one-line error."""
    path = Path(path)
    if not path.is_file():
        raise AttnlabError(f"{what} not found: {path}")
    try:
        doc = yaml.safe_load(path.read_text())
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


def resolve(profile: dict) -> dict:
    """A profile laid over config/base.yaml, then each training experiment's `base` laid under its runs."""
    cfg = merged(read_yaml(BASE, "base profile"), profile)
    seed = profile.get("seed")
    if seed is not None and "seeds" not in profile:  # `seed: 7` (a version published before seeds) is one seed
        cfg["seeds"] = [seed]
    elif seed is not None and seed != (cfg.get("seeds") or [None])[0]:
        raise AttnlabError(f"config error at 'seed': {seed!r} is not the first of seeds {cfg.get('seeds')}; "
                           "give the seeds as a list (--config seeds=[7,8,9]), not 'seed'")
    for experiment in training():
        runs = cfg.get(experiment)
        if isinstance(runs, dict) and "base" in runs:
            base = runs.pop("base") or {}
            if not isinstance(base, dict):
                raise AttnlabError(f"config error at '{experiment}.base': must be a mapping of run settings")
            cfg[experiment] = {name: merged(base, run or {}) for name, run in runs.items()}
    return cfg


def load(path: str | Path) -> dict:
    return validate(resolve(read_yaml(path, "config file")))


def declared(run: str) -> str | None:
    """The experiment that declares training run `run` in config/base.yaml (None if none does)."""
    base = read_yaml(BASE, "base profile")
    return next((e for e in training() if run in (base.get(e) or {})), None)


def chosen(config: dict, configfiles) -> dict:
    """The profile a `snakemake` invocation asks for: a whole one given with --configfile (Snakemake has read
    it into `config`), else the one named by `--config profile=NAME|FILE` (quick by default) with any other
    `--config key=value` laid over it. Read here, so that a missing or broken file is named with its line."""
    if configfiles:
        return resolve(dict(config))
    name = str(config.get("profile", "quick"))
    path = Path(name) if name.endswith((".yaml", ".yml")) else Path("config") / f"{name}.yaml"
    overrides = {k: _typed(v) for k, v in config.items() if k != "profile"}
    if "seed" in overrides and "seeds" not in overrides:  # --config seed=7: train every run once, at seed 7
        overrides["seeds"] = [overrides.pop("seed")]
    return resolve(merged(read_yaml(path, "config file"), overrides))


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


RUN_KEYS = {"train", "probe_every", "grad_probe_steps", "init_from"}  # a run's settings that are not about the model


def spec_from_config(cfg: dict, name: str) -> ModelSpec:
    """The spec of training run `name`: the profile's `model` defaults, then the run's overrides."""
    experiment, run = find_run(cfg, name)
    settings = {**cfg["model"], **{k: v for k, v in run.items() if k not in RUN_KEYS}}
    settings.setdefault("vocab_size", cfg["data"].get("vocab_size", 1024))
    try:
        return ModelSpec(**settings)
    except AttnlabError as err:
        raise AttnlabError(f"config error at '{experiment}.{name}': {err}") from None


def check_splits(cfg: dict, n_train: int, n_val: int, *, names=None, at_most: bool = False,
                 source: tuple[str, str] = ("data.path", "the corpus")) -> None:
    """Each run (of `names`, default all) needs one training window plus a target, and its longest window on
    the validation split. `at_most`: the counts are upper bounds. Too few tokens in all is named before a split
    too small for some run: no validation fraction can mend the first."""
    key, what = source
    q = "at most " if at_most else ""
    vf = cfg["data"]["val_fraction"]
    needs = [(name, spec_from_config(cfg, name).context + 2, longest_window(cfg, name) + 1)
             for _, name in runs(cfg) if names is None or name in names]
    for name, need_train, need_val in needs:
        if n_train + n_val < need_train + need_val:
            raise AttnlabError(f"config error at '{key}': {what} gives {q}{n_train + n_val:,} tokens, too few for "
                               f"run '{name}', which needs {need_train} to train on and {need_val} to validate on")
    for name, need_train, need_val in needs:
        for split, have, need in (("validation", n_val, need_val), ("training", n_train, need_train)):
            if have < need:
                raise AttnlabError(f"config error at 'data.val_fraction': {vf} leaves {q}{have:,} {split} tokens, "
                                   f"fewer than the {need} that run '{name}' reads in one window; "
                                   f"{'raise' if split == 'validation' else 'lower'} data.val_fraction")
