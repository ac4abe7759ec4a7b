"""The design's second look is decided from the first look's verdicts alone: an inconclusive claim with a settle
count of at most SECOND_LOOK_MOST gives its experiment that many seeds (the profile's, then the next ones); a
larger count, a budget-limited claim, or an experiment not made at seeds gives none, and says why."""
from __future__ import annotations

from types import SimpleNamespace

from attnlab.claims.design import SECOND_LOOK_MOST
from attnlab.claims.second_look import as_yaml, runs_needing, second_look


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


def test_an_experiment_at_its_second_look_gets_no_third():
    """A pool that holds its planned seeds, or an analysis read from its rerun, is at the design's last look: a
    claim still inconclusive there is named, and no seeds are asked for it."""
    claims = [verdict("C2.7", "ladder", settle="8"), verdict("C5.1", "position", settle="4")]
    first = lambda e: [1337, 1338, 1339]
    seeds, not_taken = second_look(claims, first, lambda e: e == "ladder")
    assert list(seeds) == ["position"] and not_taken == {"C2.7": "ladder is at its second look, the design's last"}
    assert set(second_look(claims, first)[0]) == {"ladder", "position"}  # at the first look: both ask


def test_the_second_look_follows_the_seeds_the_first_look_pooled():
    """A seed a night, pooled: the first look of the ladder is the three nights' seeds, not the last night's one."""
    first = {"ladder": [1337, 1338, 1339], "position": [1337, 1338]}
    seeds, _ = second_look([verdict("C2.8", "ladder", settle="6"), verdict("C5.1", "position", settle="4")],
                           lambda e: first[e])
    assert seeds == {"ladder": [1337, 1338, 1339, 1340, 1341, 1342], "position": [1337, 1338, 1339, 1340]}


def test_a_second_look_names_the_runs_its_claims_read_where_they_are_not_all():
    """depth's first look: C4.1 (E4-pre, E4-post) asks for 10 seeds; C4.2b (the warmup runs) is limited by the
    budget. The second look says that a version of E4-pre and E4-post alone serves it; where the asking claims read
    every run, or a result file, it names none."""
    def claim(cid, settle, rows, files=()):
        return SimpleNamespace(verdict="inconclusive", settle=settle,
                               claim=SimpleNamespace(id=cid, experiment="depth", rows=set(rows), files=set(files)))
    runs = ["E4-pre", "E4-pre-warm", "E4-post", "E4-post-warm"]
    c41, c42b = claim("C4.1", "10", ["E4-post", "E4-pre"]), claim("C4.2b", "budget", runs)
    seeds, _ = second_look([c41, c42b], lambda e: [1337, 1338, 1339])
    narrow = runs_needing([c41, c42b], seeds, lambda e: runs)
    assert narrow == {"depth": (["C4.1"], ["E4-pre", "E4-post"])}
    assert as_yaml(seeds, narrow).splitlines() == [
        f"depth: {{seeds: [{', '.join(map(str, range(1337, 1347)))}]}}",
        "#   C4.1 read E4-pre, E4-post only: a version of the added seeds may hold those runs alone "
        "(--only depth.E4-pre depth.E4-post)"]
    every = claim("C4.2x", "5", runs)
    assert runs_needing([c41, every], second_look([c41, every], lambda e: [1337])[0], lambda e: runs) == {}
    with_file = claim("C4.1", "10", ["E4-pre"], files=["depth/result.json"])
    assert runs_needing([with_file], seeds, lambda e: runs) == {}


def test_the_quick_records_second_look_asks_nothing_more_of_induction_which_is_at_its_own():
    """The command on the version of record: induction is read from its rerun at four seeds (S10.2's second look),
    so S10.3, inconclusive there, is named and asks for no third look; scaling, at its first look, still would."""
    import subprocess
    import sys

    from helpers import REPO

    said = subprocess.run([sys.executable, "-m", "attnlab", "second-look", "--results",
                           "results/2026-12-02-quick-cpu-4303899"], cwd=REPO, capture_output=True, text=True)
    assert said.returncode == 0, said.stderr[-2000:]
    lines = said.stdout.splitlines()
    assert "# S10.3: no second look: induction is at its second look, the design's last" in lines
    assert not any(line.startswith("induction:") for line in lines)
    assert "scaling: {seeds: [1337, 1338, 1339, 1340, 1341, 1342, 1343, 1344, 1345, 1346]}" in lines
