"""tools/budget-changes.py: the claims whose verdict the larger budget changed, as the dashboard reads them."""
from __future__ import annotations

import importlib.util
import math
import re

from helpers import REPO

from attnlab.claims.outcome import Outcome
from attnlab.claims.verdicts import Part

spec = importlib.util.spec_from_file_location("budget_changes", REPO / "tools" / "budget-changes.py")
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)


class Judged:
    def __init__(self, parts):
        self.parts = parts


def test_each_numeric_part_is_shown_with_its_interval_or_alone_without_an_error():
    shown = tool.parts(Judged({
        "gap": Part("gap", "number", -0.113, Outcome.INCONCLUSIVE, se=0.0125, k=2.96),
        "ratio": Part("ratio", "number", 1.5, Outcome.REPRODUCED),
        "normal": Part("normal", "number", 2.0, Outcome.REPRODUCED, se=0.5, k=math.inf),
        "holds": Part("holds", "truth", True, Outcome.REPRODUCED)}))
    assert shown == "gap: -0.113 [-0.150, -0.076]; ratio: 1.500; normal: 2.000"
    assert tool.parts(Judged({"": Part("", "number", 0.25, Outcome.REPRODUCED, se=0.01, k=2.0)})) == "0.250 [0.230, 0.270]"
    assert tool.parts(Judged({})) == "–"


def test_the_committed_versions_table_lists_only_changed_verdicts_each_counted_under_its_origin(capsys):
    tool.main([])
    out = capsys.readouterr().out
    sections = re.findall(r"### (.+?): (\d+)\n\n(.*?)(?=\n### |\Z)", out, re.S)
    assert [s[0] for s in sections] == ["The sources' claims", "Ours (claims the sources never make)"]
    total, times = re.search(r"### Run time at the larger budget: ([\d,]+) s .*?\n\n(.*)", out, re.S).groups()
    seconds = [float(t.replace(",", "")) for t in re.findall(r"\| ([\d,]+) s \|", times)]
    assert len(re.findall(r"\| `python -m attnlab.runner chapter", times)) == len(seconds)
    assert seconds and all(s > 0 for s in seconds)
    assert abs(sum(seconds) - float(total.replace(",", ""))) <= len(seconds)  # each row rounded to the second
    for _, count, table in sections:
        rows = [line.split(" | ") for line in table.splitlines()[2:] if line.startswith("| ")]
        assert len(rows) == int(count)
        for row in rows:
            assert row[1] != row[3].strip("*"), row  # the record's verdict against the larger budget's: changed


def test_the_command_that_made_a_version_is_read_from_its_manifest():
    partial = {"profile": "chapter", "complete": False, "experiments": ["ladder", "position"],
               "set": {"seeds": [1341, 1342]}}
    assert tool.command(partial) == "python -m attnlab.runner chapter --only ladder position --set 'seeds=[1341,1342]'"
    assert tool.command({"profile": "quick", "complete": True, "set": {}}) == "python -m attnlab.runner quick"
