"""The training runs a profile declares: who owns each, its model spec and its train settings, where a setting of
it is written. Below config and the settings modules (both read it); nothing here imports torch."""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from attnlab.errors import AttnlabError
from attnlab.nn.spec import ModelSpec
from attnlab.registry import training

SCHEMA_PATH = Path(str(resources.files("attnlab") / "schemas" / "config.schema.yaml"))  # what all share
OWN_SEEDS = "seeds"  # in an experiment's section: its own seeds (config.schema's own_seeds), not a run
LIKE = "like"  # in a run's entry: the run whose settings it starts from (a reader's variant: {like: L9, ...})
RUN_KEYS = {"train", "probe_every", "grad_probe_steps", "init_from", LIKE}  # a run's settings not about the model


def entries(section: dict | None) -> dict:
    """A training experiment's runs, name -> entry: its section without its own seeds."""
    return {name: run for name, run in (section or {}).items() if name != OWN_SEEDS}


def own_seeds(cfg: dict, experiment: str) -> list[int] | None:
    """The seeds an experiment's section sets for it (None: the profile's; a version from before seeds gave S1 a
    count of its own under that name, which is not a list of seeds)."""
    section = cfg.get(experiment)
    own = section.get(OWN_SEEDS) if isinstance(section, dict) else None
    return list(own) if isinstance(own, list) and own else None


def runs(cfg: dict) -> list[tuple[str, str]]:
    """(experiment, run name) of every training run the profile declares."""
    return [(experiment, name) for experiment in training() for name in entries(cfg.get(experiment))]


def likes(cfg: dict) -> dict[str, str]:
    """Run -> the run it is `like`, for every run of the profile that starts from another's settings (a reader's
    variants)."""
    return {name: run[LIKE] for experiment, name in runs(cfg)
            if isinstance(run := cfg[experiment][name], dict) and run.get(LIKE)}


def owner(cfg: dict, name: str) -> str | None:
    """The training experiment whose section of `cfg` declares run `name` (None if none does)."""
    return next((experiment for experiment in training() if name in entries(cfg.get(experiment))), None)


def find_run(cfg: dict, name: str) -> tuple[str, dict]:
    """(experiment, run entry) of the training run called `name`."""
    experiment = owner(cfg, name)
    if experiment is None:
        raise AttnlabError(f"unknown run '{name}' (config has {', '.join(n for _, n in runs(cfg))})")
    return experiment, cfg[experiment][name]


def setting_path(cfg: dict, name: str, key: str) -> str:
    """Where run `name`'s train setting `key` is written: its own override, else the profile's train section."""
    experiment, run = find_run(cfg, name)
    return f"{experiment}.{name}.train.{key}" if key in (run.get("train") or {}) else f"train.{key}"


def spec_path(cfg: dict, name: str, key: str) -> str:
    """Where run `name`'s model setting `key` is written: its own entry, else the profile's model section."""
    experiment, run = find_run(cfg, name)
    return f"{experiment}.{name}.{key}" if key in run else f"model.{key}"


def spec_from_config(cfg: dict, name: str) -> ModelSpec:
    """The spec of training run `name`: the profile's `model` defaults, then the run's overrides."""
    experiment, run = find_run(cfg, name)
    settings = {**cfg["model"], **{k: v for k, v in run.items() if k not in RUN_KEYS}}
    settings.setdefault("vocab_size", cfg["data"].get("vocab_size", 1024))
    try:
        return ModelSpec(**settings)
    except AttnlabError as err:
        raise AttnlabError(f"config error at '{experiment}.{name}': {err}") from None


def train_settings(cfg: dict, name: str) -> dict:
    """The profile's `train` section with the run's own overrides (config.validate has checked them:
    check_train_settings)."""
    _, run = find_run(cfg, name)
    return {**cfg["train"], **(run.get("train") or {})}


def check_train_settings(cfg: dict, name: str) -> dict:
    """Run `name`'s train settings, checked against the schema: one line naming the setting that breaks it."""
    settings = train_settings(cfg, name)
    err = jsonschema.exceptions.best_match(_train_validator().iter_errors(settings))  # what validate() raises
    if err is not None:  # the profile's own train section passed: the run's overrides broke it
        key, *rest = [*err.absolute_path] or [None]
        where = f"{owner(cfg, name)}.{name}.train" if key is None else setting_path(cfg, name, key)
        raise schema_error(err, ".".join([where, *map(str, rest)]))
    return settings


@lru_cache(maxsize=None)
def common_schema() -> dict:
    """The part of the profile schema every experiment shares (config.schema adds each experiment's section);
    parsed once per process, and never changed: callers copy it."""
    return yaml.safe_load(SCHEMA_PATH.read_text())


@lru_cache(maxsize=None)
def _train_validator():
    # built once: every check reads each run's train settings, several times (jsonschema.validate would check
    # the schema itself on every call, most of `attnlab check`'s time)
    sch = common_schema()["properties"]["train"]
    return jsonschema.validators.validator_for(sch)(sch)


def schema_error(err: jsonschema.ValidationError, where: str) -> AttnlabError:
    """The one line for a schema error at `where`; a number YAML 1.1 read as text (`1e-3`) gets its fix."""
    hint = ""
    if err.validator == "type" and "number" in str(err.validator_value) and isinstance(err.instance, str):
        number = re.fullmatch(r"([-+]?\d+)(\.\d*)?[eE]([-+]?)(\d+)", err.instance.strip())
        if number:
            whole, frac, sign, exp = number.groups()
            hint = (f"; YAML 1.1 reads {err.instance} as text: write it with a dot and a signed exponent, "
                    f"{whole}{frac if frac and len(frac) > 1 else '.0'}e{sign or '+'}{exp}")
    message = err.message
    if err.validator in ("minimum", "maximum") and {"minimum", "maximum"} <= err.schema.keys():
        hint = f"; allowed: {err.schema['minimum']} to {err.schema['maximum']}"
    elif err.validator == "maxItems":  # jsonschema's own message would print the whole list
        message = f"{len(err.instance):,} entries, more than the {err.validator_value} allowed"
    return AttnlabError(f"config error at '{where}': {message}{hint}")


def longest_window(cfg: dict, name: str) -> int:
    """The longest window of tokens run `name` reads from the validation split."""
    return max([spec_from_config(cfg, name).context, *(train_settings(cfg, name).get("eval_contexts") or [])])


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
