"""The claims sit below the report, versions and check: nothing in attnlab.claims imports them (or a page, a
producer, a benchmark or training), and versions, check and pooling reach the claims without the report."""
from __future__ import annotations

import pytest

from attnlab.imports import closure
from helpers import REPO

CLAIMS = sorted(f"attnlab.claims.{p.stem}" for p in (REPO / "src" / "attnlab" / "claims").glob("*.py"))
ABOVE_CLAIMS = ("attnlab.report", "attnlab.bench", "attnlab.experiments", "attnlab.train", "attnlab.versions",
                "attnlab.check", "attnlab.pooling", "attnlab.cli", "attnlab.jobs", "attnlab.runner")


def above(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("module", CLAIMS)
def test_the_claims_import_nothing_above_them(module):
    assert above(closure(module), ABOVE_CLAIMS) == []


@pytest.mark.parametrize("module", ["attnlab.versions", "attnlab.check", "attnlab.pooling"])
def test_versions_check_and_pooling_read_the_claims_without_the_report(module):
    reached = closure(module)
    assert above(reached, ("attnlab.claims",)) and above(reached, ("attnlab.report",)) == []


def test_the_scan_sees_an_import_of_the_report():
    """The control: the site reaches the report, so the test above can fail."""
    assert above(closure("attnlab.report.build"), ("attnlab.report",))
