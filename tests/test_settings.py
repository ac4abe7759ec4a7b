"""Each experiment's settings live in its own module (src/attnlab/experiments/<name>/settings.py): the common schema names none of
them, check.py names none of them, and the rename of `bench` to `throughput` still reads published versions."""
import ast
import re
from pathlib import Path

import pytest
import yaml

from attnlab import registry
from attnlab.config import declared, defaults, resolve, schema, validate
from attnlab.errors import AttnlabError
from attnlab.registry import settings_of
from attnlab.results import gather
from attnlab.runs import common_schema, owner
from attnlab.versions import settings_of as version_settings

SRC = Path(registry.__file__).parent
NAMES = [e.name for e in registry.load()]
OLD = sorted(p for p in (registry.ROOT / "results").glob("2026-*") if (p / "bench" / "result.json").is_file())


def test_the_common_schema_names_no_experiment():
    common = yaml.safe_load((SRC / "schemas" / "config.schema.yaml").read_text())
    formerly = [e.formerly for e in registry.load() if e.formerly]
    assert not set(common["properties"]) & {*NAMES, *formerly}
    assert not set(common["required"]) & set(NAMES)
    assert common == common_schema()


@pytest.mark.parametrize("name", NAMES)
def test_every_experiment_has_a_settings_module(name):
    e = registry.get(name)
    module = settings_of(e)
    assert module.__name__ == e.settings == f"attnlab.experiments.{name}.settings"
    assert module.SCHEMA is None or isinstance(module.SCHEMA, dict)
    assert isinstance(module.DEFAULTS, dict)
    for function in ("check", "check_split"):
        assert callable(getattr(module, function, None)) or not hasattr(module, function)
    if e.trains:  # its runs: the shared schema, and the runs every profile declares
        assert module.SCHEMA["$ref"] == "#/$defs/runs" and module.DEFAULTS
    assert (name in schema()["properties"]) == (module.SCHEMA is not None)


def test_check_py_names_no_experiment():
    """Its identifiers and strings hold no experiment's name (data: the corpus every run reads, is common)."""
    tree = ast.parse((SRC / "check.py").read_text())
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Name, ast.arg, ast.alias, ast.Attribute)):
            words |= set(re.split(r"[_.]", getattr(node, "name", None) or getattr(node, "id", None)
                                  or getattr(node, "arg", None) or getattr(node, "attr", "")))
        elif isinstance(node, ast.ImportFrom):
            words |= set(node.module.split("."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.add(node.value)
    assert words & set(NAMES) <= {"data"}


def test_the_runs_every_profile_declares_are_the_settings_modules():
    every = resolve({})
    for e in registry.experiments(trains=True):
        assert set(every[e.name]) == set(defaults()[e.name]) - {"base"}
        for run in every[e.name]:
            assert declared(run) == owner(every, run) == e.name
    assert declared("no-such-run") is None


@pytest.mark.parametrize("version", OLD, ids=lambda p: p.name)
def test_a_version_published_as_bench_still_reads_as_throughput(version):
    assert yaml.safe_load((version / "config.yaml").read_text())["bench"]
    cfg = version_settings(version / "config.yaml")
    assert "bench" not in cfg and cfg["throughput"]["steps"] >= 1
    res = gather(version)
    assert res.result("throughput") and res.path("throughput") == "bench/result.json"
    assert "bench/result.json" in res.provenance()


@pytest.mark.parametrize("version", OLD[-1:], ids=lambda p: p.name)
def test_the_page_of_a_renamed_experiment_gives_the_provenance_of_its_files_under_the_old_name(version):
    from attnlab.report import build

    s = build.context(version, None)
    block = s.provenance_block(s.files_of(["throughput"]))
    assert "bench/result.json" in block and "No run files yet" not in block
    assert not any(f.startswith("bench/") for f in s.files_of(["ladder", "data"]))


def test_old_and_new_name_together_is_one_line():
    with pytest.raises(AttnlabError, match=r"^config error at 'bench': the section is now 'throughput'"):
        resolve({"profile": "smoke", "bench": {}, "throughput": {}})


def test_multihead_heads_must_divide_the_width():
    from attnlab.experiments.multihead.settings import check

    cfg = validate(resolve({"profile": "smoke", "seeds": [1], "train": {"steps": 1, "batch_size": 1},
                            "multihead": {"d_model": 12, "heads": [1, 5]}}))
    with pytest.raises(AttnlabError, match=r"^config error at 'multihead.heads': 5 heads do not divide"):
        check(cfg)
