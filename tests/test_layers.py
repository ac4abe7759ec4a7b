"""The package's import graph runs one way: nothing imports a module of a higher layer.

Read from the source (attnlab.imports: every import statement, a lazy one inside a function included), so a
reader can trust the layers the README draws: the model, the data, the settings and the run-file layout at the
bottom; the plan over them; training, producers and benchmarks above; the claims; the report; and at the top
only the CLI and the runner, which import the report.
"""
from __future__ import annotations

import re

import pytest

from attnlab import imports
from helpers import REPO

PACKAGE = REPO / "src" / "attnlab"
LAYERS = [  # (layer, what it holds, as module-name patterns), lowest first
    ("base", [r"attnlab", r"attnlab\.runs", r"attnlab\.errors", r"attnlab\.imports", r"attnlab\.registry", r"attnlab\.layout",
              r"attnlab\.device", r"attnlab\.stats", r"attnlab\.maps",
              r"attnlab\.nn(\..+)?", r"attnlab\.data(\.bpe|\.corpus)?",
              r"attnlab\.claims\.outcome",  # the outcomes' enum: a leaf every layer may name
              r"attnlab\.experiments\.\w+\.settings", r"attnlab\.experiments(\.\w+)?"]),
    ("plan", [r"attnlab\.results", r"attnlab\.config", r"attnlab\.plan", r"attnlab\.runs", r"attnlab\.runfiles",
              r"attnlab\.runlock", r"attnlab\.cluster", r"attnlab\.provenance",
              r"attnlab\.calibration",  # the machine's speed, which provenance records
              r"attnlab\.precision"]),  # train.precision: auto, decided as a profile is read
    ("work", [r"attnlab\.data\.prepare", r"attnlab\.train", r"attnlab\.probes", r"attnlab\.progress",
              r"attnlab\.bench(\..+)?",
              r"attnlab\.experiments\.\w+\.producer",
              r"attnlab\.experiments\.\w+\.derive"]),  # the numbers a page shows, derived from run files
    ("claims", [r"attnlab\.claims(\..+)?"]),
    ("publishing", [r"attnlab\.check", r"attnlab\.versions", r"attnlab\.pooling", r"attnlab\.comparison",
                    r"attnlab\.crate",  # a version's RO-Crate: written as it is published, checked as it is read
                    r"attnlab\.sitedata",  # they read the claims; sitedata: what a site shows, with no words
                    r"attnlab\.eta",  # a run's expected time, from the published versions' recorded times
                    r"attnlab\.history", r"attnlab\.bisect"]),  # a claim across the versions; the commit that moved it
    ("report", [r"attnlab\.report(\..+)?", r"attnlab\.experiments\.\w+\.page"]),
    ("top", [r"attnlab\.__main__", r"attnlab\.cli", r"attnlab\.jobs", r"attnlab\.runner", r"attnlab\.scaffold"]),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}


def modules() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def layer(module: str) -> str:
    for name, patterns in LAYERS:
        if any(re.fullmatch(p, module) for p in patterns):
            return name
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_layers.py")


def edges() -> list[tuple[str, str]]:
    return [(m, d) for m in modules() for d in sorted(imports.direct(m)) if d != m]


def test_every_module_has_a_layer():
    assert {m: layer(m) for m in modules()}


def test_nothing_imports_upward():
    up = [f"{m} ({layer(m)}) imports {d} ({layer(d)})" for m, d in edges() if RANK[layer(d)] > RANK[layer(m)]]
    assert not up, "\n".join(up)


def test_only_the_cli_and_the_runner_import_the_report():
    outside = [f"{m} imports {d}" for m, d in edges()
               if layer(d) == "report" and layer(m) not in ("report", "top")]
    assert not outside, "\n".join(outside)


@pytest.mark.parametrize("kind", ["producer", "settings"])
def test_a_page_imports_no_producer_benchmark_or_settings_module(kind):
    pages = [m for m in modules() if layer(m) == "report"]
    wrong = [f"{m} imports {d}" for m in pages for d in imports.direct(m)
             if d.endswith(f".{kind}") or (kind == "producer" and (d.startswith("attnlab.bench") or d == "attnlab.train"))]
    assert not wrong, "\n".join(wrong)


def test_the_rule_catches_an_upward_import(tmp_path, monkeypatch):
    """The test above can fail: a model module that imports the report is reported."""
    monkeypatch.setattr(imports, "direct", lambda m: frozenset({"attnlab.report.site"}) if m == "attnlab.nn.spec"
                        else frozenset())
    up = [(m, d) for m, d in edges() if RANK[layer(d)] > RANK[layer(m)]]
    assert up == [("attnlab.nn.spec", "attnlab.report.site")]


def test_the_model_imports_nothing_but_the_model():
    """nn is the floor: a model module imports no settings, experiment, benchmark or report (their constants
    live with the model, and the settings read them from there); only the plain statistics beside it."""
    wrong = [f"{m} imports {d}" for m in modules() if m.startswith("attnlab.nn")
             for d in imports.direct(m) if not d.startswith("attnlab.nn") and d not in ("attnlab", "attnlab.errors", "attnlab.stats")]
    assert not wrong, "\n".join(wrong)
