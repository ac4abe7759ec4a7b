"""Load an experiment profile, validate it against the schema and fill defaults."""
from __future__ import annotations

import copy
import hashlib
import json
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from attnlab.errors import AttnlabError

SCHEMA_PATH = Path(str(resources.files("attnlab") / "schemas" / "config.schema.yaml"))


def schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


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


def validate(cfg: dict) -> dict:
    """Return a validated copy of `cfg` with defaults filled; raise AttnlabError naming the problem."""
    root = schema()
    try:
        jsonschema.validate(cfg, root)
    except jsonschema.ValidationError as err:
        where = ".".join(str(p) for p in err.absolute_path) or "<top level>"
        raise AttnlabError(f"config error at '{where}': {err.message}") from None
    cfg = copy.deepcopy(cfg)
    _fill_defaults(cfg, root, root)
    from attnlab.nn.spec import spec_from_config  # checks every variant's names and sizes

    seen = {}
    for experiment in TRAINING:
        for name in cfg.get(experiment) or {}:
            if name in seen:
                raise AttnlabError(f"config error: run name '{name}' is used by both '{seen[name]}' and "
                                   f"'{experiment}'; run names must be unique")
            seen[name] = experiment
            spec = spec_from_config(cfg, name)
            for n in train_settings(cfg, name).get("eval_contexts") or []:
                if spec.position == "learned" and n > spec.positions:
                    raise AttnlabError(f"config error: run '{name}' evaluates windows of {n} tokens but its learned "
                                       f"position table has {spec.positions} rows; set max_positions: {n} or more")
    return cfg


TRAINING = ("ladder", "scaling", "depth", "position")  # config sections whose entries are training runs


def find_run(cfg: dict, name: str) -> tuple[str, dict]:
    """(experiment, run entry) of the training run called `name`."""
    for experiment in TRAINING:
        if name in (cfg.get(experiment) or {}):
            return experiment, cfg[experiment][name]
    known = [n for e in TRAINING for n in cfg.get(e) or {}]
    raise AttnlabError(f"unknown run '{name}' (config has {', '.join(known)})")


def train_settings(cfg: dict, name: str) -> dict:
    """The profile's `train` section with the run's own overrides, checked against the schema."""
    overrides = find_run(cfg, name)[1].get("train") or {}
    settings = {**cfg["train"], **overrides}
    sch = schema()["properties"]["train"]
    try:
        jsonschema.validate(settings, sch)
    except jsonschema.ValidationError as err:
        where = ".".join(str(p) for p in err.absolute_path) or "train"
        raise AttnlabError(f"config error at '{name}.train.{where}': {err.message}") from None
    return settings


def read_yaml(path: str | Path, what: str) -> dict:
    """A YAML mapping from `path`; `what` names the file in the one-line error."""
    path = Path(path)
    if not path.is_file():
        raise AttnlabError(f"{what} not found: {path}")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise AttnlabError(f"{what} {path} is not valid YAML: {' '.join(str(err).split())}") from None
    if not isinstance(doc, dict):
        raise AttnlabError(f"{what} {path} must hold a mapping, got {type(doc).__name__}")
    return doc


def load(path: str | Path) -> dict:
    return validate(read_yaml(path, "config file"))


def digest(obj) -> str:
    """A short, stable hash of any JSON-serialisable settings."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
