"""Each claim at the largest budget where a published version measured it, beside the version of record's: the
pick (largest budget, newest among equals, a partial version only for its experiments), the naming, the
sentences on every side, and a site of quick versions that looks as it did."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

import yaml

from attnlab.claims.budget import Larger, largest, rank
from attnlab.claims.evaluate import evaluate_all
from attnlab.claims.registry import load_registry
from attnlab.config import load
from attnlab.pooling import Pool
from attnlab.report import budget
from attnlab.report.budget import sentence, tally
from attnlab.report.pages import dashboard, index
from attnlab.report.site import Site, verdict_reading
from attnlab.report.site import tally as count_verdicts
from attnlab.results import gather
from attnlab.versions import versions
from helpers import REPO, rendered_page

RECORD = "2026-11-30-quick-cpu-3c6d867"
OLD_CHAPTER = "2026-12-01-chapter-cpu-aaaaaaa-only-ladder-position"
NEW_CHAPTER = "2026-12-02-chapter-cpu-bbbbbbb-only-ladder"


def manifest(name: str, profile: str, published: str, experiments: list[str] | None = None) -> dict:
    return {"version": name, "profile": profile, "commit": name.split("-")[-1], "hardware": "cpu",
            "published": published, "complete": experiments is None, "experiments": experiments or []}


def claim(cid: str, experiment: str):
    return SimpleNamespace(id=cid, experiment=experiment)


CLAIMS = [claim("C2.3", "ladder"), claim("C5.1", "position"), claim("C4.1", "depth"), claim("C2.2", "ladder")]
PUBLISHED = [  # newest first, as versions() lists them
    manifest(NEW_CHAPTER, "chapter", "2026-12-02T08:00:00+00:00", ["ladder"]),
    manifest(OLD_CHAPTER, "chapter", "2026-12-01T08:00:00+00:00", ["ladder", "position"]),
    manifest("2026-11-30-smoke-cpu-ccccccc", "smoke", "2026-11-30T12:00:00+00:00"),
    manifest(RECORD, "quick", "2026-11-30T09:00:00+00:00"),
]
VERDICTS = {
    RECORD: {"C2.3": "not reproduced", "C5.1": "not reproduced", "C4.1": "not reproduced", "C2.2": "reproduced"},
    NEW_CHAPTER: {"C2.3": "reproduced", "C2.2": "not run",
                  "C5.1": "reproduced", "C4.1": "reproduced"},  # not its experiments: it does not speak for them
    OLD_CHAPTER: {"C2.3": "not reproduced", "C5.1": "not reproduced", "C2.2": "inconclusive", "C4.1": "reproduced"},
    "2026-11-30-smoke-cpu-ccccccc": {c.id: "reproduced" for c in CLAIMS},
}


def test_the_largest_budget_that_measured_a_claim_gives_its_verdict_newest_first():
    found = largest(CLAIMS, PUBLISHED, RECORD, VERDICTS.__getitem__)
    assert (found["C2.3"].verdict, found["C2.3"].manifest["version"]) == ("reproduced", NEW_CHAPTER)  # newest
    assert (found["C2.2"].verdict, found["C2.2"].manifest["version"]) == ("inconclusive", OLD_CHAPTER)  # not run
    assert (found["C5.1"].verdict, found["C5.1"].manifest["version"]) == ("not reproduced", OLD_CHAPTER)  # held
    assert found["C4.1"].verdict is None and found["C4.1"].manifest is None  # no partial version holds depth
    assert {x.record["version"] for x in found.values()} == {RECORD} and found["C2.2"].record_verdict == "reproduced"
    assert {x.above for x in found.values()} == {"chapter"}


def test_nothing_is_larger_where_only_the_records_budget_or_less_is_published():
    quick_only = [manifest("2026-12-01-quick-cpu-ddddddd", "quick", "2026-12-01T08:00:00+00:00"), PUBLISHED[2],
                  PUBLISHED[3]]
    assert largest(CLAIMS, quick_only, RECORD, VERDICTS.get) == {}
    assert largest(CLAIMS, PUBLISHED, None, VERDICTS.get) == {}  # nothing published
    partial_elsewhere = [manifest(OLD_CHAPTER, "chapter", "2026-12-01T08:00:00+00:00", ["cost"]), PUBLISHED[3]]
    assert largest(CLAIMS, partial_elsewhere, RECORD, VERDICTS.get) == {}  # it holds none of these claims
    record_is_chapter = [manifest(RECORD, "chapter", "2026-11-30T09:00:00+00:00")]
    assert largest(CLAIMS, record_is_chapter, RECORD, VERDICTS.get) == {}


def test_a_version_whose_budget_was_changed_over_its_profile_has_no_budget_rank():
    """`--set 'seeds=[1337]'` or a speed setting keeps the chapter's budget; `--set 'train={steps: 800}'` does not,
    and such a version is not shown as the chapter's budget."""
    chapter = manifest(OLD_CHAPTER, "chapter", "2026-12-01T08:00:00+00:00", ["ladder", "position"])
    assert rank(chapter) == rank(chapter | {"set": {"seeds": [1337], "train.precision": "bf16"}}) == 2
    cut = chapter | {"set": {"seeds": [1337], "train.steps": 800}}
    assert rank(cut) is None
    assert largest(CLAIMS, [cut, PUBLISHED[3]], RECORD, VERDICTS.get) == {}


def larger(verdict, record_verdict="not reproduced", profile="chapter"):
    there = manifest(OLD_CHAPTER, profile, "2026-12-01T08:00:00+00:00", ["ladder"]) if verdict else None
    return Larger(verdict, there, record_verdict, manifest(RECORD, "quick", "2026-11-30T09:00:00+00:00"), profile)


def test_the_sentence_says_whether_the_chapters_budget_changed_a_claim_on_every_side():
    assert sentence(larger("reproduced")) == (
        f"At the chapter's budget ({OLD_CHAPTER}) it is reproduced: the quick verdict was the budget's.")
    assert sentence(larger("not reproduced")) == (
        f"At the chapter's budget ({OLD_CHAPTER}) it is still not reproduced: the budget does not explain the quick "
        "verdict.")
    assert "it is inconclusive: the larger budget neither confirms the quick verdict" in sentence(larger("inconclusive"))
    assert "its verdict is diverged: it says nothing on whether the budget" in sentence(larger("diverged"))
    one = Larger("reproduced", larger("reproduced").manifest, "not reproduced", larger(None).record, "chapter", 1)
    assert sentence(one).startswith(f"At the chapter's budget ({OLD_CHAPTER}, at one seed) it is reproduced")
    assert "(x, at 3 seeds)" in sentence(Larger("inconclusive", {**one.manifest, "version": "x"}, "not reproduced",
                                                  one.record, "chapter", 3))
    assert sentence(larger(None)) == "Not measured at the chapter's budget."
    assert sentence(larger(None, profile="quick")) == "Not measured at the quick profile's budget."


def test_a_pooled_verdict_is_said_as_pooled_and_the_tally_names_every_version_it_rests_on():
    import dataclasses

    alone = larger("reproduced")
    pooled = dataclasses.replace(alone, seeds=3, members=(OLD_CHAPTER, "b-seed1338", "a-seed1337"))
    assert alone.versions == (OLD_CHAPTER,) and larger(None).versions == ()
    assert pooled.versions == (OLD_CHAPTER, "b-seed1338", "a-seed1337")
    assert sentence(pooled).startswith("At the chapter's budget (3 versions pooled, at 3 seeds) it is reproduced")
    assert sentence(alone).startswith(f"At the chapter's budget ({OLD_CHAPTER}) it is reproduced")
    text = tally({"C2.3": pooled, "C4.1": larger(None)})
    assert text.startswith(f"1 of 2 claims were measured at the chapter's budget (versions {OLD_CHAPTER}, "
                           "a-seed1337, b-seed1338); ")
    assert tally({"C2.3": alone}).startswith(f"1 of 1 claims were measured at the chapter's budget (version {OLD_CHAPTER});")


def test_the_cell_names_both_versions_and_reads_only_what_the_record_does_not_reproduce():
    on_record = budget.cell(larger("reproduced"), RECORD)
    assert OLD_CHAPTER in on_record and "the version of record" not in on_record  # the row's verdict is the record's
    assert "the quick verdict was the budget's" in on_record
    elsewhere = budget.cell(larger("reproduced"), OLD_CHAPTER)
    assert f"quick, the version of record ({RECORD})" in elsewhere
    assert "budget-reading" not in budget.cell(larger("reproduced", record_verdict="reproduced"), RECORD)
    assert budget.cell(larger(None, record_verdict="reproduced"), RECORD) == (
        '<td data-label="at the chapter&#x27;s budget" class="none"><span title="not measured at the chapter&#x27;s '
        'budget">–</span></td>')  # a bare dash, left out on a phone
    assert "Not measured at the chapter's budget." in budget.cell(larger(None), RECORD)  # its reading


def test_the_tally_groups_the_claims_the_record_does_not_reproduce():
    found = largest(CLAIMS, PUBLISHED, RECORD, VERDICTS.__getitem__)
    text = tally(found)
    assert text.startswith(f"3 of 4 claims were measured at the chapter's budget (versions {OLD_CHAPTER}, "
                           f"{NEW_CHAPTER}); beside each, the quick verdict of the version of record ({RECORD}).")
    assert ("Of the 3 claims it does not reproduce: reproduced there (the budget's): C2.3; still not reproduced: "
            "C5.1; not measured there: C4.1.") in text
    assert tally({}) == ""


def test_the_tally_counts_our_own_findings_apart_from_the_sources_claims():
    found = largest(CLAIMS, PUBLISHED, RECORD, VERDICTS.__getitem__)
    text = tally(found, frozenset({"C4.1"}))  # as if C4.1 were the project's own finding
    assert text.startswith("3 of 3 claims were measured at the chapter's budget (and 0 of 1 of the project's own "
                           "findings)")
    assert ("Of the 2 sources' claims it does not reproduce: reproduced there (the budget's): C2.3; still not "
            "reproduced: C5.1. Of the 1 own findings it does not reproduce: not measured there: C4.1.") in text
    assert tally(found, frozenset()) == tally(found)


def test_the_reading_under_a_verdict_table_adds_the_budgets_sentence():
    v = SimpleNamespace(claim=SimpleNamespace(id="C2.3"), verdict="not reproduced", parts={})
    assert verdict_reading([v], 3) == ""
    text = verdict_reading([v], 3, {"C2.3": larger("reproduced")})
    assert "**C2.3** at a larger budget: At the chapter's budget" in text and "the quick verdict was the budget's" in text
    reproduced_at_record = {"C2.3": larger("reproduced", record_verdict="reproduced")}
    assert verdict_reading([v], 1, reproduced_at_record) == ""


def publish_fake(root, m: dict) -> None:
    """A version's folder as publish writes it, without run files (the verdicts are given to the site)."""
    folder = root / "results" / m["version"]
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(m))
    cfg = load(REPO / "config" / f"{m['profile']}.yaml")
    cfg["seeds"] = [1337] if m["profile"] == "chapter" else [1337, 1338, 1339]
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg))


def site_over(root, published: list[dict], verdicts: dict) -> Site:
    """The site of the version of record, beside the published versions, each one's verdicts as given."""
    for m in published:
        publish_fake(root, m)
    (root / "results" / "LATEST").write_text(RECORD + "\n")
    registry = load_registry()
    res = gather(root / "results" / RECORD)
    record = next(m for m in versions(root) if m["version"] == RECORD)
    site = Site(res, registry, evaluate_all(registry, res), {"profile": "quick", "seeds": [1, 2, 3]},
                manifest=record, versions_root=root)
    site.verdicts_of = lambda name: {k: SimpleNamespace(verdict=v, claim=registry.by_id(k), shown=lambda: {"": "1.5"})
                                      for k, v in verdicts.get(name, {}).items()}
    site.pool_of = lambda name: Pool(name, gather(root / "results" / name))  # each alone: none pooled
    return site


def test_the_dashboard_and_home_page_show_the_chapters_verdict_beside_the_records(tmp_path):
    site = site_over(tmp_path, PUBLISHED, VERDICTS)
    text = rendered_page(site, "dashboard", dashboard.blocks)
    assert '<table class="cards dashboard budget">' in text and ">at the chapter's budget</th>" in text
    row = next(r for r in text.split("<tr ") if 'href="ladder.html#claim-C2-3"' in r)
    assert NEW_CHAPTER in row and "the quick verdict was the budget's" in row
    assert f"{NEW_CHAPTER} · at one seed</div>" in row and f"({NEW_CHAPTER}, at one seed) it is reproduced" in row
    assert "3 of 4 claims" not in text and "claims were measured at the chapter's budget" in text
    home = rendered_page(site, "index", index.blocks)
    assert "## At the chapter's budget" in home and f"<div class=\"why\">{NEW_CHAPTER}</div>" in home  # two: named
    assert ('<th class="c-verdict">quick, the version of record</th>'
            "<th class=\"c-value\">at the chapter's budget</th>" in home)
    section = home.split("## At the chapter's budget")[1].split("## Settings")[0]
    assert "the quick verdict was the budget's" in section and 'href="depth.html' not in section  # measured only


def test_a_site_of_quick_versions_looks_as_before(tmp_path):
    quick_only = [manifest("2026-12-01-quick-cpu-ddddddd", "quick", "2026-12-01T08:00:00+00:00"), PUBLISHED[3]]
    site = site_over(tmp_path, quick_only, VERDICTS)
    before = Site(site.res, site.registry, site.verdicts, site.config, manifest=site.manifest)  # no versions beside
    for name, blocks in (("dashboard", dashboard.blocks), ("index", index.blocks)):
        assert rendered_page(site, name, blocks) == rendered_page(before, name, blocks)
    text = rendered_page(site, "dashboard", dashboard.blocks)
    assert '<table class="cards dashboard">' in text and "budget" not in text.split("<table")[1].split(">")[0]


def test_a_partial_versions_headline_counts_the_others_as_the_record_judged_them():
    """The site of a version that ran the ladder alone: the claims it did not run are counted at the quick budget
    of the version of record with the record's verdicts, not as this version's 'not run'; with none measured
    larger, the headline still names the record's budget."""
    reg = load_registry()
    mine = [SimpleNamespace(claim=reg.by_id(c), verdict="not run") for c in ("C2.3", "C5.1", "C4.1")]
    site = SimpleNamespace(verdicts=mine, larger=lambda: {"C2.3": larger("reproduced"),
                                                          "C5.1": larger(None, "reproduced"),
                                                          "C4.1": larger(None, "inconclusive")})
    said = index.headline(site, count=count_verdicts)
    assert said.startswith("at the chapter's budget") and "not run" not in said
    assert "the other 2 at the quick budget of the version of record" in said
    site.larger = lambda: {"C5.1": larger(None, "reproduced"), "C4.1": larger(None, "inconclusive")}
    said = index.headline(SimpleNamespace(verdicts=mine[1:], larger=site.larger), count=count_verdicts)
    assert said.startswith("at the quick budget of the version of record") and "not run" not in said


def test_the_home_pages_cell_names_the_versions_a_pooled_verdict_rests_on():
    import dataclasses

    words = f"pooled over 2 versions: {OLD_CHAPTER} (seed 1337), b (seed 1338)"
    pooled = dataclasses.replace(larger("reproduced"), seeds=2, pooled=words, members=(OLD_CHAPTER, "b"))
    claim = SimpleNamespace(id="C2.3", experiment="ladder", ours=False)
    site = SimpleNamespace(larger=lambda: {"C2.3": pooled}, verdicts=[SimpleNamespace(claim=claim)])
    section = re.sub(r'<span class="num">([^<]*)</span>', r"\1", index.larger_budget(site))  # numbers, unwrapped
    assert f'<div class="why">{words}</div>' in section  # one version: named in the cell only where it pools
    assert f"(versions {OLD_CHAPTER}, b)" in section and "(2 versions pooled, at 2 seeds) it is reproduced" in section
    alone = SimpleNamespace(larger=lambda: {"C2.3": larger("reproduced")}, verdicts=site.verdicts)
    assert '<div class="why">2026' not in index.larger_budget(alone)
