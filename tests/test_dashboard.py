"""Every claim of both source documents is registered, and the dashboard lists each with its verdict and link."""
from __future__ import annotations

import re

import pytest

from attnlab.claims.registry import load_registry
from attnlab.report.pages import dashboard
from helpers import REPO, rendered_page, site_for

SPEC = REPO.parent / "shared" / "spec"
ID = re.compile(r"\b([CS]\d+(?:\.\d+)?)\b")


def spec_ids(name: str) -> list[str]:
    path = SPEC / name
    if not path.is_file():
        pytest.skip(f"{path} is not beside the checkout")
    return sorted(set(ID.findall(path.read_text())))


def registered(spec_id: str, ids: set[str]) -> bool:
    """C4.2 is registered as C4.2 or as its parts C4.2a, C4.2b; S1 as S1 or S1.1, S1.2, ..."""
    return any(i == spec_id or re.fullmatch(re.escape(spec_id) + r"(\.\d+|[a-z])", i) for i in ids)


@pytest.mark.parametrize("document", ["CHAPTER.md", "SURVEY.md"])
def test_every_claim_of_the_sources_is_in_the_registry(document):
    ids = {c.id for c in load_registry().claims}
    missing = [i for i in spec_ids(document) if not registered(i, ids)]
    assert not missing, f"claims of {document} with no entry in claims/*.yaml: {', '.join(missing)}"


def test_registered_matches_parts_but_not_other_claims():
    assert registered("C4.2", {"C4.2a"}) and registered("S1", {"S1.3"}) and registered("S4", {"S4"})
    assert not registered("S1", {"S10.1", "S11"}) and not registered("C2.1", {"C2.10"})


def test_dashboard_lists_every_claim_with_its_verdict_and_link(tmp_path):
    site = site_for(tmp_path, {"profile": "smoke", "seeds": [1337]})  # no run files: every claim is 'not run'
    text = rendered_page(site, "dashboard", dashboard.blocks)
    rows = re.findall(r'<tr data-verdict="([^"]+)" data-experiment="([^"]+)" data-kind="([^"]+)" '
                      r'data-whose="([^"]+)">(.*?)</tr>', text)
    assert len(rows) == len(site.verdicts) and {v for v, _, _, _, _ in rows} == {"not run"}
    for v, (verdict, experiment, kind, whose, cells) in zip(site.verdicts, rows):
        assert experiment == v.claim.experiment and kind == v.claim.kind
        assert whose == ("ours" if v.claim.ours else "survey" if v.claim.id.startswith("S") else "chapter")
        assert ("our finding</span>" in cells) == v.claim.ours
        assert f'href="{experiment}.html#claim-{v.claim.id.replace(".", "-")}"' in cells
    assert 'option value="not run">not run (' in text and "dashboard-experiment" in text
    assert "the chapter's" in text and "the survey's" in text
