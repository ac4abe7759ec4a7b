"""attnlab.claims.summary: verdicts counted and selected for the overview, the dashboard and the about page
(their words are tested in test_intervals.py, test_readings.py and test_budget.py)."""
from __future__ import annotations

from types import SimpleNamespace

from attnlab.claims import summary
from attnlab.claims.registry import load_registry


def claim(cid, ours=False, kind="measured", files=(), rows=(), se_code=(), sampled=()):
    return SimpleNamespace(id=cid, ours=ours, kind=kind, files=set(files), rows=set(rows), se_code=se_code,
                           sampled=sampled)


def v(cid, verdict="reproduced", **kw):
    return SimpleNamespace(claim=claim(cid, **kw), verdict=verdict)


def test_whose_claim_and_the_groups_in_order():
    vs = [v("S1.1"), v("C2.1"), v("C9.9", ours=True), v("S4")]
    assert [summary.whose(x.claim) for x in vs] == ["survey", "chapter", "ours", "survey"]
    assert {w: [x.claim.id for x in g] for w, g in summary.by_whose(vs).items()} == {
        "chapter": ["C2.1"], "survey": ["S1.1", "S4"], "ours": ["C9.9"]}
    assert list(summary.by_whose(vs[:2])) == ["chapter", "survey"]


def test_the_seed_groups_follow_survival_then_the_verdict_on_the_mean():
    def seeded(cid, survives, verdict, judged=None):
        return SimpleNamespace(claim=claim(cid), verdict=verdict, survives=lambda: survives,
                               judged_alone=lambda: judged or {})
    vs = [seeded("A", "no seed", "not reproduced"), seeded("B", "every seed", "reproduced"),
          seeded("C", "no error alone", "inconclusive", {"a": 2}), seeded("D", "no error alone", "inconclusive"),
          seeded("E", "every seed", "inconclusive")]
    groups = summary.by_survival(vs)
    assert list(groups) == ["every seed", "no seed", "in part", "no error alone"]
    assert {k: [x.claim.id for x in g] for k, g in groups["every seed"].items()} == {"reproduced": ["B"],
                                                                                     "inconclusive": ["E"]}
    assert summary.survival(vs[2]) == "in part" and summary.survival(vs[3]) == "no error alone"


def test_a_parts_error_source_at_one_seed():
    c = SimpleNamespace(claim=claim("X", se_code=("a",), sampled=("b",)))
    assert [summary.error_source(c, p) for p in "abc"] == ["stated", "sampled", "exact"]


def test_why_no_seed_alone_judged_a_claim_and_at_which_seeds():
    res = SimpleNamespace(recorded_seeds=lambda f: {"pooled": [1, 2, 3], "once": [7]}.get(f, []),
                          seeds=lambda r: {"L1": [1337], "old": [None]}[r])
    assert summary.why_unseeded(v("C0.1", kind="computed"), res) == ("computed", [])
    assert summary.why_unseeded(v("C6.3", "not run", files=("pooled",)), res) == ("no value", [])
    assert summary.why_unseeded(v("S1.1", files=("pooled",)), res) == ("pooled", [1, 2, 3])
    assert summary.why_unseeded(v("S5", files=("once",), rows=("L1",)), res) == ("pooled", [7, 1337])
    assert summary.why_unseeded(v("C2.1", rows=("L1",)), res) == ("once", [1337])
    assert summary.why_unseeded(v("C2.2", rows=("old",)), res) == ("once", [])


def part(outcome, interval=(0.0, 1.0), kind="measured", dominant="seeds", settle=""):
    return SimpleNamespace(outcome=outcome, interval=interval, kind=kind, dominant=dominant, settle=settle)


def test_the_dominant_sources_count_parts_judged_on_a_mean_over_seeds_only():
    two = {1: 0, 2: 0}
    vs = [SimpleNamespace(seeds=two, parts={"a": part("reproduced"), "b": part("reproduced", dominant="both"),
                                             "c": part("reproduced", interval=None)}),
          SimpleNamespace(seeds={1: 0}, parts={"a": part("reproduced", dominant="sampling")})]
    assert summary.dominant_sources(vs) == ["seeds", "both"]
    assert summary.dominant_sources(vs[1:]) == []


def test_each_example_is_the_first_claim_with_a_part_judged_its_way_that_shows_what_is_asked():
    budget = SimpleNamespace(verdict="inconclusive", parts={"a": part("inconclusive", settle="budget")})
    settled = SimpleNamespace(verdict="inconclusive", parts={"a": part("inconclusive", settle="5")})
    no_interval = SimpleNamespace(verdict="reproduced", parts={"a": part("reproduced", interval=None)})
    holds = SimpleNamespace(verdict="holds", parts={"a": part("holds", interval=None, kind="computed")})
    found = dict(enumerate(summary.examples([no_interval, budget, settled, holds])))
    assert [outcome for outcome, _ in found.values()] == [e[0] for e in summary.EXAMPLES]
    assert found[0][1] is None and found[1][1] is None  # no interval and not computed: no reproduced example
    assert found[2][1] == (settled, settled.parts["a"]) and found[3][1] == (budget, budget.parts["a"])
    assert found[4][1] == (holds, holds.parts["a"])


def test_a_larger_budget_splits_the_verdicts_into_those_it_measured_and_the_rest():
    larger = {"C1": SimpleNamespace(verdict="reproduced"), "C2": SimpleNamespace(verdict=None)}
    there, rest = summary.at_larger([v("C1", "inconclusive"), v("C2"), v("C3")], larger)
    assert [(x.claim.id, x.verdict) for x in there] == [("C1", "reproduced")]
    assert [x.claim.id for x in rest] == ["C2", "C3"]


def test_a_checks_upper_bound():
    assert summary.upper_bound(load_registry(), "S4", "time_ratio_max_min") == 2
    assert summary.upper_bound(load_registry(), "S4", "no such part") is None


def test_a_verdict_is_counted_apart_for_the_sources_and_for_ours():
    vs = [v("C1"), v("C2"), v("C3", ours=True), v("C4", "inconclusive", ours=True)]
    assert summary.apart(vs, "reproduced") == (2, 1) and summary.apart(vs, "inconclusive") == (0, 1)
    assert summary.apart(vs, "not run") == (0, 0)


def test_the_run_files_a_verdict_reads_that_ran():
    paths = {"a": "a/result.json", "b": "b/result.json", "L1": "ladder/L1/m.json"}
    res = SimpleNamespace(provenance=lambda: {"a/result.json": {"device": "cpu"}, "ladder/L1/m.json": {"device": "x"}},
                          path=paths.get)
    assert summary.made(v("C1", files=("b", "a"), rows=("L1",)), res) == {
        "a/result.json": {"device": "cpu"}, "ladder/L1/m.json": {"device": "x"}}
    assert summary.made(v("C2", files=("b",)), res) == {}
