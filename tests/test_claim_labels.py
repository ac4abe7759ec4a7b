"""What a claim's labels say: whose statement it tests (origin: the sources' or ours), a part tested by nothing
(descriptive), a stated error over seeds that more seeds settle (not the budget), and the seeds behind a mean."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from attnlab.claims.checks import passes
from attnlab.claims.evaluate import evaluate
from attnlab.claims.functions import SAFE_BUILTINS
from attnlab.claims.registry import load_registry, parse_claim
from attnlab.errors import AttnlabError
from attnlab.results import Results

OURS = {"S1.3", "S8.1", "S8.2", "S8.3", "S8.4"}  # statements neither the chapter nor the survey makes


def claim(**over):
    entry = {"id": "T", "claim": "c", "chapter_value": 0, "value": "cost['v']", "check": {"above": 0.5},
             "tolerance_note": "t", **over}
    return parse_claim(entry)


def judged(c, **files):
    return evaluate(c, Results(root=Path("."), files=files))


def test_origin_defaults_to_the_source_and_ours_is_parsed():
    assert claim().origin == "source" and not claim().ours
    assert claim(origin="ours").ours


def test_an_unknown_origin_is_one_line_naming_it():
    with pytest.raises(AttnlabError, match=r"claim T: 'origin' must be one of \['source', 'ours'\].*'mine'"):
        claim(origin="mine")


def test_the_registry_marks_exactly_the_statements_the_sources_never_make():
    registry = load_registry()
    assert {c.id for c in registry.claims if c.ours} == OURS
    assert all(c.claim.startswith("Ours, not the survey's") for c in registry.claims if c.ours)


def test_a_descriptive_part_is_shown_and_never_judged():
    c = claim(value={"a": "cost['v']", "b": "cost['w']"}, check={"a": {"above": 0.5}, "b": None},
              chapter_value={"a": 1}, kind={"b": "descriptive"})
    assert c.kind == "measured"
    for w in (0.0, 99.0):  # whatever the described value, the verdict is the tested part's alone
        v = judged(c, cost={"v": 1.0, "w": w})
        assert v.parts["b"].outcome == "descriptive" and "tested by nothing" in v.parts["b"].why
        assert v.verdict == "inconclusive"  # a has no error: the descriptive part neither helps nor hurts
    assert judged(c, cost={"v": 0.0, "w": 1.0}).verdict == "inconclusive"


def test_a_claim_with_only_descriptive_parts_is_descriptive_not_reproduced():
    c = claim(kind="descriptive", check=None)
    assert c.kind == "descriptive"
    v = judged(c, cost={"v": 3.0})
    assert v.verdict == "descriptive" and v.rows()[0]["part_verdict"] == "descriptive"


def test_a_descriptive_part_with_a_check_is_refused_in_one_line():
    with pytest.raises(AttnlabError, match="claim T: check: a descriptive part is tested by nothing; give it check null"):
        claim(kind="descriptive")


@pytest.mark.parametrize("spread, settle", [(0.05, "6"), (0.0001, "")])
def test_a_stated_spread_over_seeds_is_settled_by_seeds_not_the_budget(spread, settle):
    """A result that averaged its seeds itself states the seeds' spread (sd = se·√3): 0.1 above the bound, at 3
    seeds t(2)·0.05 straddles it, at 5 t(4)·sd/√5 = 0.107 still does, at 6 t(5)·sd/√6 = 0.091 clears it: 6 seeds
    settle it (a tiny spread already decides)."""
    c = claim(se="seed_se(cost['se'], 3)")
    v = judged(c, cost={"v": 0.6, "se": spread})
    p = v.parts[""]
    assert p.n_seeds == 3 and v.rows()[0]["n_seeds"] == 3 and not p.draws
    assert (p.outcome, p.settle) == (("inconclusive", settle) if settle else ("reproduced", ""))


def test_a_held_out_error_of_a_mean_over_seeds_counts_its_seeds_and_stays_the_budget():
    c = claim(se="seed_se(cost['se'], 3, False)")
    p = judged(c, cost={"v": 0.6, "se": 0.06}).parts[""]
    assert (p.outcome, p.settle, round(p.k, 2), p.n_seeds) == ("inconclusive", "budget", 1.96, 3)


def test_a_spread_over_draws_that_are_not_seeds_stays_a_budget_of_draws():
    p = judged(claim(se="draws_se(cost['se'], 3)"), cost={"v": 0.6, "se": 0.05}).parts[""]
    assert (p.settle, p.draws, p.n_seeds) == ("budget", True, 1)


@pytest.mark.parametrize("name", ["seeds_sem", "seeds_gsem"])
def test_the_seed_means_errors_are_seed_spreads(name):
    xs = [1.0, 2.0, 4.0]
    out = SAFE_BUILTINS[name](xs)
    plain = SAFE_BUILTINS[name.replace("seeds_", "")](xs)
    assert out == plain and (out.seeds, out.spread) == (3, True)
    assert SAFE_BUILTINS[name]([1.0]) is None


def test_s5_timings_are_judged_at_their_repeats_degrees_of_freedom():
    """Two timing repeats per median: the speedup's k is Student's t at 1 degree of freedom, as is a three-length
    fit's; the cache formula is arithmetic (computed)."""
    s5 = load_registry().by_id("S5")
    assert s5.kinds["formula_equals_measured"] == "computed"
    rows = [{"model": m, "kv_heads": kv, "n": n, "samples": 2, "cached": c}
            for m, kv in (("wide", 8), ("chapter", 4)) for n in (32, 64, 128) for c in (True, False)]
    slope = {"slope": 0.3, "se": 0.02, "se_fit": 0.01, "lengths": [32, 64, 128]}
    decode = {"settings": {"lengths": [32, 64, 128]}, "rows": rows, "cache": [{"formula_bytes": 8, "measured_bytes": 8}],
              "speedup_at_longest": {"wide/8": 3.0}, "speedup_se_at_longest": {"wide/8": 0.1},
              "speedup_slope": {"wide/8": slope, "chapter/4": {**slope, "se_fit": 0.02}}}
    v = judged(s5, decode=decode)
    assert {p: round(v.parts[p].k, 3) for p in ("wide_speedup", "wide_growth", "chapter_growth")} == dict.fromkeys(
        ("wide_speedup", "wide_growth", "chapter_growth"), 12.706)
    assert v.parts["formula_equals_measured"].outcome == "holds"
    decode["rows"] = [{**r, "samples": 5} for r in rows]
    assert round(judged(s5, decode=decode).parts["wide_speedup"].k, 3) == 2.776  # five repeats: 4 degrees of freedom
    assert round(judged(s5, decode=decode).parts["chapter_growth"].k, 3) == 12.706  # the fit through 3 lengths decides


def test_c3_5_tests_the_chapters_own_share_of_collapsed_rows():
    check = load_registry().by_id("C3.5").checks["raw_saturated_at_end"]
    assert passes(check, 0.9995) and not passes(check, 0.921)


@pytest.mark.parametrize("cid, parts", [("C9.1", {"mean_abs_output"}), ("S10.2", {"lag_intervals"}),
                                        ("S11", {"sentences", "models_in_all", "models_on_one_sentence"})])
def test_tests_that_could_not_fail_are_descriptive(cid, parts):
    c = load_registry().by_id(cid)
    assert {p for p, k in c.kinds.items() if k == "descriptive"} == parts
    assert all(c.checks[p] == {} for p in parts)
    assert math.isfinite(len(c.values)) and c.kind != "descriptive"  # each keeps a tested part
