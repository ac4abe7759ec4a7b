"""A verdict's outcome is an attnlab.claims.outcome.Outcome, written as the very word every published claims.csv
holds; no module spells an outcome as a string literal of its own."""
from __future__ import annotations

import ast
import json

import pandas as pd
import pytest

from attnlab.claims.outcome import VERDICTS, Outcome
from helpers import REPO

SRC = REPO / "src" / "attnlab"
OWNER = SRC / "claims" / "outcome.py"
# The outcomes whose word means nothing else in the code ("holds", "fails", "descriptive" and "diverged" are also
# prose, a claim's kind and a run's status).
WORDS = {o.value for o in (Outcome.REPRODUCED, Outcome.NOT_REPRODUCED, Outcome.INCONCLUSIVE, Outcome.NOT_RUN)}
SERIES = "reproduced"  # also the name of the project's data series beside the chapter's, in a chart or a table


def is_series_label(node: ast.Constant, statement: ast.stmt, parent: dict) -> bool:
    """'reproduced' naming a data series: a `source` beside the chapter's, or in a statement that names the
    chapter's series too (a chart's domain, a table's columns)."""
    if node.value != SERIES:
        return False
    up = parent.get(id(node))
    if isinstance(up, ast.keyword) and up.arg == "source":
        return True
    if isinstance(up, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "source" and v is node
                                        for k, v in zip(up.keys, up.values)):
        return True
    return any(isinstance(n, ast.Constant) and n.value == "chapter" for n in ast.walk(statement))


def literals(source: str) -> list[tuple[int, str]]:
    """(line, word) for every string literal in Python code that spells an outcome, docstrings and series labels
    aside."""
    tree = ast.parse(source)
    parent = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for statement in ast.walk(tree):
        if not isinstance(statement, ast.stmt) or isinstance(statement, ast.Expr):  # a docstring or bare string
            continue
        for node in ast.iter_child_nodes(statement):
            if isinstance(node, ast.stmt):
                continue  # a nested statement is walked as its own
            for leaf in ast.walk(node):
                if isinstance(leaf, ast.Constant) and leaf.value in WORDS \
                        and not is_series_label(leaf, statement, parent):
                    found.append((leaf.lineno, leaf.value))
    return found


def test_no_module_spells_an_outcome_outside_the_enum():
    found = [f"{path.relative_to(REPO)}:{line}: {word!r}" for path in sorted(SRC.rglob("*.py")) if path != OWNER
             for line, word in literals(path.read_text())]
    assert not found, "use attnlab.claims.outcome.Outcome instead of:\n" + "\n".join(found)


@pytest.mark.parametrize("code, caught", [
    ('if v.verdict == "not run":\n    pass\n', [(1, "not run")]),
    ('MARKS = {"inconclusive": "?"}\n', [(1, "inconclusive")]),
    ('def f(x):\n    return "not reproduced" if x else "reproduced"\n', [(2, "not reproduced"), (2, "reproduced")]),
    ('def f():\n    """reproduced"""\n', []),  # a docstring
    ('domain = ["reproduced", "chapter"]\n', []),  # the data series beside the chapter's
    ('rows = [{"source": "reproduced", "tokens": 1}]\n', []),
    ('rows = [{"verdict": "reproduced", "tokens": 1}]\n', [(1, "reproduced")]),  # a verdict, not a series
    ('text = f"{n} not run"\n', []),  # prose
])
def test_the_scan_tells_an_outcome_literal_from_prose_and_a_series_label(code, caught):
    assert sorted(literals(code)) == sorted(caught)


def test_every_outcome_reads_and_writes_as_its_word():
    assert [str(o) for o in VERDICTS] == ["reproduced", "not reproduced", "inconclusive", "holds", "fails",
                                          "descriptive", "not run", "diverged"]
    o = Outcome.NOT_REPRODUCED
    assert f"{o}" == str(o) == "%s" % o == "{}".format(o) == o == "not reproduced"
    assert {"not reproduced": 1}[o] == 1 and Outcome("not reproduced") is o
    assert json.dumps({"v": o}) == '{"v": "not reproduced"}'
    assert pd.DataFrame({"verdict": [o]}).to_csv(index=False) == "verdict\nnot reproduced\n"


def test_every_verdict_of_every_published_claims_csv_is_an_outcome():
    for csv in sorted((REPO / "results").glob("*/claims.csv")):
        table = pd.read_csv(csv, keep_default_na=False)
        words = set(table["verdict"]) | set(table.get("part_verdict", []))
        assert words <= {o.value for o in Outcome}, (csv, words - {o.value for o in Outcome})
