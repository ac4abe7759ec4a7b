"""No shared module names an experiment: the report's core, config, check, versions, plan and runner reach every
experiment through the registry (its page module's hooks, its settings module), never by its name. An experiment
is then its own files plus one registry line."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from attnlab import registry

PACKAGE = Path(registry.__file__).resolve().parent
SHARED = sorted([*(PACKAGE / "report").glob("*.py"),
                 *(PACKAGE / f for f in ("config.py", "check.py", "versions.py", "plan.py", "runner.py",
                                         "registry.py", "pooling.py", "scaffold.py", "comparison.py",
                                         "sitedata.py", "claims/summary.py", "claims/table.py"))])
# Names that are also the shared vocabulary of every profile and model: the profile's data section and the
# results' data folder (the one experiment of kind data), a model's position setting and parameter part, a
# model's parameters. As words they are not looked for; as module paths they are.
ORDINARY = {"data", "position", "params"}
PENDING: set[str] = set()  # shared modules still naming an experiment, each with its reason (none now)
MODULE_PATH = r"\b(?:settings|pages|experiments|bench)\.({})\b"


def names() -> set[str]:
    return {e.name for e in registry.load()} | {e.formerly for e in registry.load() if e.formerly}


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (prose: they may mention an experiment)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            out.add(id(body[0].value))
    return out


def mentions(source: str, known: set[str]) -> list[str]:
    """Where a module's code names an experiment: a string literal that is a name (or starts 'name.' or 'name/',
    as 'ladder.L9' and 'ladder.csv' do), an identifier that is one, or a module path to its settings, page,
    producer or benchmark (in an import or a string)."""
    tree, words = ast.parse(source), known - ORDINARY
    prose, path = docstrings(tree), re.compile(MODULE_PATH.format("|".join(map(re.escape, sorted(known)))))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            head = re.match(r"(\w+)(?:[./]|$)", node.value)
            if head and head.group(1) in words or path.search(node.value):
                found.append(f"line {node.lineno}: {node.value[:40]!r}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found += [f"line {node.lineno}: import {m}" for m in modules if path.search(m)]
        else:
            ident = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else
                     node.arg if isinstance(node, ast.arg) else
                     node.name if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else None)
            if ident in words:
                found.append(f"line {node.lineno}: {ident}")
    return found


@pytest.mark.parametrize("path", [p for p in SHARED if str(p.relative_to(PACKAGE)) not in PENDING],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_shared_module_names_an_experiment(path):
    found = mentions(path.read_text(), names())
    assert not found, f"{path.relative_to(PACKAGE)} names an experiment: " + "; ".join(found)


@pytest.mark.parametrize("code", [
    'cfg["ladder"]', 'r = res.result("throughput")', 'x = "ladder.L9"', 'f = "ladder.csv"',
    "from attnlab.experiments.induction.settings import EARLY", 'm = "attnlab.experiments.seq2seq.page"',
    "def seq2seq(site): ...", "winograd = 1", "import attnlab.experiments.cost.producer", 'c = cfg["bench"]',
])
def test_the_check_finds_an_experiment_named_in_code(code):
    assert mentions(code, names()), code


@pytest.mark.parametrize("code", [
    'def f():\n    """The ladder, the seq2seq model and the cost of winograd, in prose."""',
    'spec.position == "learned"', 'data = cfg["data"]', "params, window = spec.training_floor()",
    'x = "ladders"', "from attnlab.settings.other import X", 'label = "a ladder of rungs"',
])
def test_the_check_leaves_prose_and_ordinary_words_alone(code):
    assert not mentions(code, names()), code


def test_the_modules_it_reads_are_there():
    assert len(SHARED) > 10 and all(p.is_file() for p in SHARED)
    assert all((PACKAGE / p).is_file() for p in PENDING)  # noqa: an entry that no longer exists is stale
