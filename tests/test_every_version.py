"""Every page of every committed version renders with today's code (no mkdocs: build.context, page_blocks and
render, as the MkDocs hook calls them), so a change that breaks an old version's pages fails here; and what a page
says of an older version's files it can not read as today's (a field it predates, a claim it cannot judge)."""
from __future__ import annotations

import pytest

from attnlab import versions
from attnlab.report import build
from helpers import REPO

VERSIONS = [m["version"] for m in versions.versions(REPO)]
PAGES = [page for page in [*build.pages(), *build.STATIC_PAGES] if (REPO / "docs" / page).is_file()]


@pytest.fixture(scope="module")
def known() -> dict:
    """Other versions' verdicts, shared by every version's site here (each page that compares versions would
    otherwise recompute all of them, once per version)."""
    return {}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_page_of_a_committed_version_renders_with_todays_code(version, known):
    site = build.context(REPO / "results" / version, REPO / "claims", selector=True, known=known)
    for page in PAGES:
        text = site.stamp(page) + build.render((REPO / "docs" / page).read_text(), build.page_blocks(site, page), page)
        assert version in text and "<!-- attnlab:" not in text, f"{version}/{page} left a marker unfilled"


def test_every_committed_version_is_under_test():
    folders = sorted(p.name for p in (REPO / "results").iterdir() if p.is_dir() and versions.NAME.match(p.name))
    assert folders and sorted(VERSIONS) == folders
