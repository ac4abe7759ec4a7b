"""The design's second look is decided from the first look's verdicts alone: an inconclusive claim with a settle
count of at most SECOND_LOOK_MOST gives its experiment that many seeds (the profile's, then the next ones); a
larger count, a budget-limited claim, or an experiment not made at seeds gives none, and says why."""
from __future__ import annotations

from types import SimpleNamespace

from attnlab.claims.design import SECOND_LOOK_MOST
from attnlab.claims.second_look import as_yaml, second_look


def verdict(cid: str, experiment: str, verdict: str = "inconclusive", settle: str = ""):
    return SimpleNamespace(verdict=verdict, settle=settle, claim=SimpleNamespace(id=cid, experiment=experiment))


def test_each_experiment_gets_the_most_seeds_its_claims_need_and_no_more():
    seeds, not_taken = second_look([verdict("C2.8", "ladder", settle="5"), verdict("C2.6", "ladder", settle="4"),
                                    verdict("C8.1", "winograd", settle="4")], lambda e: [1337, 1338, 1339])
    assert seeds == {"ladder": [1337, 1338, 1339, 1340, 1341], "winograd": [1337, 1338, 1339, 1340]}
    assert not not_taken
    assert as_yaml(seeds) == ("ladder: {seeds: [1337, 1338, 1339, 1340, 1341]}\n"
                              "winograd: {seeds: [1337, 1338, 1339, 1340]}\n")


def test_claims_seeds_cannot_settle_within_the_design_get_no_second_look():
    seeds, not_taken = second_look([
        verdict("A", "ladder", settle=str(SECOND_LOOK_MOST + 1)),   # beyond the design's last look
        verdict("B", "ladder", settle="budget"),                     # the evaluation's budget limits it
        verdict("C", "ladder", "reproduced"), verdict("D", "ladder", "not reproduced"),  # decided at the first look
        verdict("E", "cost", settle="4"),                             # a benchmark: not made at seeds
        verdict("F", "ladder", settle=str(SECOND_LOOK_MOST)),        # exactly the design's most: taken
    ], lambda e: [1337, 1338, 1339])
    assert seeds == {"ladder": list(range(1337, 1337 + SECOND_LOOK_MOST))}
    assert not_taken == {"A": f"needs {SECOND_LOOK_MOST + 1} seeds, beyond the design's {SECOND_LOOK_MOST}",
                         "E": "cost is not made at seeds"}


def test_a_settle_count_the_profile_already_has_adds_nothing():
    assert second_look([verdict("C2.8", "ladder", settle="3")], lambda e: [1337, 1338, 1339]) == ({}, {})


def test_the_second_look_follows_the_seeds_the_first_look_pooled():
    """A seed a night, pooled: the first look of the ladder is the three nights' seeds, not the last night's one."""
    first = {"ladder": [1337, 1338, 1339], "position": [1337, 1338]}
    seeds, _ = second_look([verdict("C2.8", "ladder", settle="6"), verdict("C5.1", "position", settle="4")],
                           lambda e: first[e])
    assert seeds == {"ladder": [1337, 1338, 1339, 1340, 1341, 1342], "position": [1337, 1338, 1339, 1340]}
