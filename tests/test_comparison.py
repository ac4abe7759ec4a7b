"""attnlab.comparison: two versions' numbers set side by side (the compare page words them; its words are tested
in test_versions.py and test_every_version.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from attnlab import comparison


def verdict(value, verdict="reproduced", se=None, seeds=None):
    return SimpleNamespace(verdict=verdict, reproduced=value, se=se or {}, seeds=seeds or {})


def test_the_other_versions_lead_with_the_version_of_record_and_leave_out_this_one():
    manifests = [{"version": v} for v in ("c", "b", "a")]
    assert [m["version"] for m in comparison.others(manifests, "b", "a")] == ["a", "c"]
    assert [m["version"] for m in comparison.others(manifests, None, None)] == ["c", "b", "a"]


def test_an_unread_side_is_not_an_unmeasured_one():
    measured, unmeasured = verdict(1.0), verdict(None, "not run")
    assert comparison.status(measured, unmeasured) == "only here"
    assert comparison.status(measured, unmeasured, unread_there=True) == "unread there"
    assert comparison.status(unmeasured, measured, unread_here=True) == "unread here"
    assert comparison.status(unmeasured, measured, unread_there=True) == "only there"


def test_a_change_is_rounding_paired_by_seed_or_both_errors_combined():
    assert comparison.part_change(1.0, 1.0 + 1e-7, [], [0.1]) == {"identical": pytest.approx(1e-7)}
    assert comparison.part_change(1.3, 1.0, [], [0.3, 0.4]) == {"diff": pytest.approx(0.3), "se": pytest.approx(0.5),
                                                                "paired": 0}
    assert comparison.part_change(1.3, 1.0, [], [])["se"] is None
    paired = comparison.part_change(4.08, 4.0, [0.1, 0.1, 0.04], [0.15, 0.15])
    assert paired["paired"] == 3 and paired["se"] == pytest.approx(0.02)  # sd 0.0346 over √3


def test_only_parts_both_sides_give_a_number_for_change_and_only_same_seeds_pair():
    here = verdict({"a": 2.0, "b": "text", "c": 1.0}, seeds={1: {"a": 2.0}, 2: {"a": 2.2}})
    there = verdict({"a": 1.5, "b": "text", "c": None}, seeds={1: {"a": 1.5}, 2: {"a": 1.5}})
    assert comparison.paired(here, there, "a") == [pytest.approx(0.5), pytest.approx(0.7)]
    assert set(comparison.changes(here, there)) == {"a"} and comparison.changes(here, there)["a"]["paired"] == 2
    assert comparison.paired(here, verdict(1.5, seeds={1: {"a": 1.5}, 3: {"a": 1.5}}), "a") == []


def test_the_settings_every_run_shares_are_named_first():
    here = {"ladder.L1.steps": 1, "train.lr": 1, "threads": 2, "a.b": 1}
    there = {"ladder.L1.steps": 2, "train.lr": 2, "threads": 2, "a.b": 2}
    assert comparison.differing_settings(here, there) == ["train.lr", "a.b", "ladder.L1.steps"]
    assert comparison.differing_settings(here, dict(here)) == []


def test_the_claims_both_versions_measured_come_first_each_with_its_status():
    def of(cid, value, outcome="reproduced"):
        return SimpleNamespace(claim=SimpleNamespace(id=cid), verdict=outcome, reproduced=value)
    mine = [of("C1", None, "not run"), of("C2", 1.0), of("C3", 1.0), of("C4", None, "not run")]
    theirs = {"C1": of("C1", 1.0), "C2": of("C2", 1.0, "inconclusive"), "C3": of("C3", 1.0), "C4": of("C4", 1.0)}
    pairs, statuses = comparison.paired_up(mine, theirs, lambda v: v.claim.id == "C4", lambda v: False)
    assert statuses == {"C1": "only there", "C2": "changed", "C3": "same", "C4": "unread here"}
    assert [(a.claim.id, b is theirs[a.claim.id]) for a, b in pairs] == [("C2", True), ("C3", True), ("C1", True),
                                                                           ("C4", True)]
