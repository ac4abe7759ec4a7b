"""The repository as a reader gets it: no file git tracks holds a merge's conflict markers (one once reached the
README's layout section, where a reader met both sides of a merge)."""
from __future__ import annotations

import re
import subprocess

import pytest

from helpers import REPO

MARKER = re.compile(r"^(<{7}|>{7})( |$)|^={7}$", re.M)


def tracked_text() -> list[str]:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split("\n")
    return [f for f in files if f and not f.startswith("results/") and (REPO / f).is_file()
            and (REPO / f).suffix in {".py", ".md", ".yaml", ".yml", ".smk", ".toml", ".cfg", ".sh", ".js", ".css", ""}]


def markers(text: str) -> list[int]:
    return [text[:m.start()].count("\n") + 1 for m in MARKER.finditer(text)]


def test_no_tracked_file_holds_a_conflict_marker():
    found = {f: lines for f in tracked_text() if (lines := markers((REPO / f).read_text(errors="replace")))}
    assert not found, f"merge conflict markers (file: lines): {found}"


@pytest.mark.parametrize("text, lines", [("a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> branch\n", [2, 4, 6]),
                                         ("a heading\n=======\n", [2]),  # setext underline of exactly seven: flagged
                                         ("a\n========\n<<<< not one\n", [])])
def test_the_marker_check_finds_what_a_merge_leaves(text, lines):
    assert markers(text) == lines


def test_the_files_the_suite_starts_first_and_the_fault_census_s_tests_exist():
    """conftest.FIRST orders the suite by file name, tools/fault-census.py runs tests by id: a renamed file or test
    would drop out of both unseen."""
    import importlib.util

    from conftest import FIRST

    assert all((REPO / "tests" / name).is_file() for name in FIRST), [n for n in FIRST if not (REPO / "tests" / n).is_file()]
    spec = importlib.util.spec_from_file_location("fault_census", REPO / "tools" / "fault-census.py")
    census = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(census)
    for files in census.GROUPS.values():
        for file, names in files.items():
            text = (REPO / file).read_text()
            assert all(f"def {name}(" in text for name in names), (file, [n for n in names if f"def {n}(" not in text])
