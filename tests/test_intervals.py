"""The interval rule: every test kind judged on value ± k·SE (reproduced, not reproduced, inconclusive), what
would settle an inconclusive one, computed claims (holds / fails), and claims.csv's checks of old and new files."""
from __future__ import annotations

import math

import pytest

from attnlab.report.build import template as template_of
from attnlab.claims.design import LOOKS, Noise, k_at
from attnlab.stats import T95, t95
from attnlab.claims.functions import SAFE_BUILTINS
from attnlab.claims.registry import parse_claim
from attnlab.claims.verdicts import judge_claim, judge_part, seeds_to_settle
from attnlab.errors import AttnlabError
from attnlab.report.format import fmt
from attnlab.runfiles import check_claims


def claim(check, kind="measured", value="1"):
    return parse_claim({"id": "T", "claim": "c", "chapter_value": 0, "value": value, "check": check,
                           "tolerance_note": "t", "kind": kind})


# Each test kind with a value inside and one outside, both at distance 1 from the nearest bound.
KINDS = {
    "above": ({"above": 1.0}, 2.0, 0.0),
    "below": ({"below": 1.0}, 0.0, 2.0),
    "between": ({"between": [0, 2]}, 1.0, 3.0),
    "between, open above": ({"between": [0, None]}, 1.0, -1.0),
    "between, open below": ({"between": [None, 0]}, -1.0, 1.0),
    "target, rel_tol": ({"target": 10, "rel_tol": 0.1}, 10.0, 12.0),
    "target, abs_tol": ({"target": 10, "abs_tol": 1}, 10.0, 8.0),
    "abs_le": ({"abs_le": 1}, 0.0, -2.0),
}
def k1(df: float) -> float:
    """k at the sequential design's first look (the profile's own seeds): Student's t at its level."""
    return k_at(df, LOOKS[0])


def k0(df: float) -> float:
    """k of a part read from files made at no seed (no seed can be added to it): one look, at the whole design's
    level."""
    return k_at(df, sum(LOOKS))


# A stated (normal) sampling error: at the first look's 97.5 %, k = 2.24, so the interval reaches the bound at
# SE = 1 / 2.24 = 0.446.
DECIDED, STRADDLING = (0.0, 0.1, 0.44), (0.45, 2.0, 50.0)


def test_the_decided_and_straddling_errors_lie_either_side_of_the_first_looks_reach():
    assert max(DECIDED) < 1 / k1(math.inf) < min(STRADDLING)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("se", DECIDED)
def test_a_clear_interval_decides_either_way(kind, se):
    check, inside, outside = KINDS[kind]
    noise = Noise(1, None, se, math.inf)
    assert judge_part(claim(check), "", inside, noise).outcome == "reproduced"
    assert judge_part(claim(check), "", outside, noise).outcome == "not reproduced"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("se", STRADDLING)
def test_an_interval_on_a_bound_is_inconclusive_on_either_side(kind, se):
    check, inside, outside = KINDS[kind]
    for value in (inside, outside):
        part = judge_part(claim(check), "", value, Noise(1, None, se, math.inf))
        assert (part.outcome, part.settle) == ("inconclusive", "budget")  # one run: only the sampling error
        lo, hi = part.interval
        assert lo == pytest.approx(value - k1(math.inf) * se) and hi == pytest.approx(value + k1(math.inf) * se)


@pytest.mark.parametrize("check, value", [({"above": 1.0}, 1.0), ({"below": 1.0}, 1.0)])
def test_a_tie_passes_no_direction_even_without_noise(check, value):
    assert judge_part(claim(check), "", value, Noise(1, None, 0.0, math.inf)).outcome == "not reproduced"


@pytest.mark.parametrize("check, value", [({"between": [0, 2]}, 2.0), ({"abs_le": 1}, -1.0),
                                          ({"target": 10, "abs_tol": 1}, 11.0)])
def test_a_band_holds_its_ends_without_noise(check, value):
    assert judge_part(claim(check), "", value, Noise(1, None, 0.0, math.inf)).outcome == "reproduced"


def test_k_is_students_t_at_any_level_and_fractional_degrees_of_freedom():
    assert t95(2) == 4.303 and t95(19) == 2.093 and t95(math.inf) == 1.96 and t95(31) == 1.96
    assert all(round(k_at(df, 0.05), 3) == T95[df - 1] for df in range(1, 31))  # the 95 % table, computed
    assert k_at(math.inf, 0.05) == pytest.approx(1.95996, abs=1e-5)
    assert k_at(2, 0.025) == pytest.approx(6.20535, abs=1e-5)
    assert k_at(math.inf, 0.025) == pytest.approx(2.24140, abs=1e-5)
    assert k_at(1, 0.001) == pytest.approx(636.619, abs=1e-3)  # t's 99.95 % quantile at one degree of freedom
    assert k_at(2, 0.05) < k_at(1.5, 0.05) < k_at(1, 0.05)  # between the integers, between their k
    with pytest.raises(AttnlabError):
        k_at(0, 0.05)


@pytest.mark.parametrize("seed_sd, sampling, dominant", [(1.0, 0.1, "seeds"), (0.1, 1.0, "sampling"),
                                                         (math.sqrt(3), 1.0, "both"), (1.0, None, "seeds")])
def test_the_error_adds_both_sources_in_quadrature_and_so_does_the_half_width(seed_sd, sampling, dominant):
    """Three seeds' spread (sd/√3 at 2 df) and a jackknife's sampling error (19 df): SE² is their sum, the
    half-width k·SE is each source's own t·SE in quadrature, and the record names the source holding at least 2/3
    of SE² (else both); df is the larger source's."""
    part = judge_part(claim({"above": 0}), "", 5.0, Noise(3, seed_sd, sampling, 19))
    seeds, shared = seed_sd ** 2 / 3, (sampling or 0) ** 2
    assert part.se == pytest.approx(math.sqrt(seeds + shared))
    assert part.k * part.se == pytest.approx(math.sqrt(k1(2) ** 2 * seeds + k1(19) ** 2 * shared))
    assert k1(19) <= part.k <= k1(2) and part.df == (2 if seeds >= shared else 19)
    assert part.dominant == dominant and part.look == 1


@pytest.mark.parametrize("seed_sd, sampling, settle", [
    (0.5, None, "5"),       # the second look's k (97.5 %): 4 seeds, 4.177 × 0.25 = 1.04 straddles; 5: 3.495 × 0.22 clears
    (0.7, None, "6"),
    (5.0, None, "more than 30"),
    (0.5, 0.6, "budget"),   # 2.433 × 0.6 = 1.46: the sampling error alone keeps it on the bound
    (1.0, 0.45, "budget"),  # 2.433 × 0.45 = 1.09: however many seeds, the sampling error stays
    (0.5, 0.2, "5"),        # in quadrature: √(0.05 + 0.04) = 0.3 at 5 seeds, k 3.07 → 0.92 clears
    (0.8, 0.3, "10"),       # the sampling error (k·0.3 = 0.73) leaves room, but the seeds' share must shrink too
])
def test_an_inconclusive_claim_says_how_many_seeds_would_settle_it(seed_sd, sampling, settle):
    noise = Noise(3, seed_sd, sampling, 19)
    part = judge_part(claim({"above": 1.0}), "", 2.0, noise)
    assert part.outcome == "inconclusive" and part.settle == settle
    if settle.isdigit():  # at that many seeds the interval clears the bound; one fewer, it does not
        n = int(settle)
        for m, clears in ((n, True), (n - 1, False)):
            se, df = noise.at(m)
            assert (noise.k(m, LOOKS[1]) * se < 1.0) is clears  # past the profile's 3 seeds: the second look


def test_seeds_to_settle_names_the_budget_when_seeds_cannot_shrink_the_error():
    assert seeds_to_settle({"above": 1.0}, 2.0, Noise(1, None, 0.6, 19)) == "budget"


def test_a_measured_value_without_any_error_estimate_is_inconclusive():
    part = judge_part(claim({"between": [0, 2]}), "", 1.0, None)
    assert (part.outcome, part.settle) == ("inconclusive", "no error estimate")


def test_a_stated_error_may_be_a_fractions_binomial_error_from_what_the_file_records(tmp_path):
    """Run files that record a fraction and its count, but no error, still give it one: `binomial_se` in `se:`."""
    from attnlab.claims.evaluate import evaluate
    from attnlab.results import Results
    from attnlab.stats import binomial_se

    c = parse_claim({"id": "T", "claim": "c", "chapter_value": 0, "tolerance_note": "t",
                        "value": "scores['p']", "se": "binomial_se(scores['p'], scores['n'])",
                        "check": {"between": [0.65, 0.75]}})
    got = evaluate(c, Results(root=tmp_path, files={"scores": {"p": 0.7, "n": 2000}})).parts[""]
    assert (got.outcome, got.se, got.k) == ("reproduced", binomial_se(0.7, 2000), k0(math.inf))
    wide = evaluate(c, Results(root=tmp_path, files={"scores": {"p": 0.7, "n": 100}})).parts[""]
    assert wide.outcome == "inconclusive"  # 0.7 ± 1.96 × 0.045 reaches past both ends of the band


# ------------------------------------------------------------------ stated errors with their degrees of freedom

def stated(se_expr, value=1.0, check=None):
    """A claim on a `cost` result holding `value` whose `se:` is `se_expr`, judged on Results holding only it."""
    from pathlib import Path

    from attnlab.claims.evaluate import evaluate
    from attnlab.results import Results

    c = parse_claim({"id": "T", "claim": "c", "chapter_value": 0, "value": "cost['v']", "se": se_expr,
                        "check": check or {"above": 0.5}, "tolerance_note": "t"})
    files = {"cost": {"v": value, "rows": ROWS, "a": {"mean": 1.0, "se": 0.3}, "b": {"mean": 2.0, "se": 0.8}}}
    return evaluate(c, Results(root=Path("."), files=files)).parts[""]


ROWS = [{"n": n, "y": n ** 2 * f} for n, f in ((1, 1.0), (2, 1.1), (4, 0.9), (8, 1.05), (16, 1.0))]


def test_a_stated_error_with_degrees_of_freedom_takes_students_t_there():
    normal = stated("0.15")  # a number: 1.0 ± 1.96 × 0.15 clears 0.5
    assert (normal.k, normal.se, normal.outcome) == (k0(math.inf), 0.15, "reproduced")
    part = stated("[0.15, 2]")  # three draws' spread: 1.0 ± 4.303 × 0.15 reaches below 0.5
    assert (part.k, part.se, part.df, part.outcome) == (k0(2), 0.15, 2, "inconclusive")
    assert part.settle == "budget" and stated("[0.15, 30]").outcome == "reproduced"


def test_a_stated_error_of_none_leaves_no_error_estimate_not_a_zero_one():
    part = stated("None")
    assert (part.outcome, part.settle, part.se) == ("inconclusive", "no error estimate", None)


def test_the_stated_errors_of_several_seeds_pool_at_the_fewest_degrees_of_freedom():
    from attnlab.claims.evaluate import _stated

    assert _stated([[0.1, 2], (0.3, 4)]) == (pytest.approx(0.2), 2)
    assert _stated([0.1, 0.3]) == (pytest.approx(0.2), math.inf)
    assert _stated([[0.1, 2], None]) == (None, math.inf)


def test_the_mean_and_its_error_over_draws_in_an_expression():
    part = stated("sem([1.0, 2.0, 3.0])", value=2.0)  # sd 1 over √3, at 2 degrees of freedom
    assert (part.se, part.df) == (pytest.approx(1 / math.sqrt(3)), 2)
    assert stated("sem([1.0])").settle == "no error estimate"  # one draw has no spread
    assert stated("[mean([1.0, 2.0, 6.0]), 1]").se == 3.0 and stated("[log10(100.0), 1]").se == 2.0


def test_a_power_laws_slope_error_is_its_fits_residual_error_over_the_last_points():
    from attnlab.stats import fit_line

    part = stated("slope_se([r['n'] for r in cost['rows']], [r['y'] for r in cost['rows']], 4)")
    xs, ys = [math.log(r["n"]) for r in ROWS[1:]], [math.log(r["y"]) for r in ROWS[1:]]
    assert (part.se, part.df) == (pytest.approx(fit_line(xs, ys)["se"]), 2) and part.se > 0
    assert stated("slope_se([1, 2, 4], [1, 4, 0], 4)").settle == "no error estimate"  # two points with y > 0


def test_a_ratios_error_by_the_delta_method():
    part = stated("ratio_se(cost['a'], cost['b'])")  # √(0.09 + 0.25 · 0.64) / 2
    assert part.se == pytest.approx(0.25) and part.k == k0(math.inf)


@pytest.mark.parametrize("check, value, outcome", [
    ({"between": [0, 2]}, 1.0, "holds"), ({"between": [0, 2]}, 3.0, "fails"),
    ({"equals": 768}, 768, "holds"), ({"equals": 768}, 769, "fails"),
    ({"above": 1.0}, 1.5, "holds"), ({"above": 1.0}, 1.0, "fails"),
])
def test_a_computed_value_holds_or_fails_on_its_own(check, value, outcome):
    c = claim(check, kind="computed")
    assert judge_part(c, "", value, None).outcome == outcome  # no noise needed, none used
    assert judge_claim(c, {"": value}, {}).verdict == outcome
    assert c.kind == "computed"


@pytest.mark.parametrize("values, verdict", [
    ({"a": 2.0, "b": 2.0, "n": 768}, "reproduced"),
    ({"a": 2.0, "b": 1.2, "n": 768}, "inconclusive"),
    ({"a": 0.0, "b": 1.2, "n": 768}, "not reproduced"),
    ({"a": 2.0, "b": 2.0, "n": 769}, "not reproduced"),  # its computed part fails
])
def test_a_claims_verdict_from_its_parts(values, verdict):
    c = parse_claim({"id": "T", "claim": "c", "chapter_value": {"a": 0}, "tolerance_note": "t",
                        "value": {"a": "1", "b": "1", "n": "1"}, "kind": {"n": "computed"},
                        "check": {"a": {"above": 1.0}, "b": {"above": 1.0}, "n": {"equals": 768}}})
    assert c.kind == "measured" and c.kinds == {"a": "measured", "b": "measured", "n": "computed"}
    noise = {p: Noise(1, None, 0.2, math.inf) for p in ("a", "b", "n")}
    got = judge_claim(c, values, noise)
    assert got.verdict == verdict
    assert got.settle == ("budget" if verdict == "inconclusive" else "")


@pytest.mark.parametrize("kind", ["guessed", {"x": "computed"}, {"": "exact"}, 3])
def test_a_bad_kind_is_refused(kind):
    with pytest.raises(AttnlabError, match="'kind'"):
        claim({"above": 0}, kind=kind)


# ------------------------------------------------------------------ claims.csv, old and new

OLD = "claim_id,chapter_value,reproduced_value,verdict,note\nC2.1,4,4.1,reproduced,ok\n"
NEW_HEAD = "claim_id,part,kind,chapter_value,value,value_text,se,k,lo,hi,n_seeds,verdict,part_verdict,settle,note\n"


def test_claims_csv_of_old_and_new_versions_are_accepted(tmp_path):
    (tmp_path / "old.csv").write_text(OLD)
    check_claims(tmp_path / "old.csv", ["C2.1"])
    (tmp_path / "new.csv").write_text(
        NEW_HEAD + "C2.2,gain,measured,1,0.13,,0.2,2.093,-0.3,0.6,3,inconclusive,inconclusive,budget,n\n"
        "C2.2,share,measured,0,0.1,,0.1,2.093,0,0.3,3,inconclusive,reproduced,,n\n"
        "C7.2,,computed,5,5,,,,,,1,holds,holds,,n\n")
    check_claims(tmp_path / "new.csv", ["C2.2", "C7.2"])


@pytest.mark.parametrize("rows, match", [
    ("C2.2,gain,measured,1,0.1,,,,,,1,maybe,inconclusive,,n\n", "has verdict 'maybe'"),
    ("C2.2,gain,measured,1,0.1,,,,,,1,inconclusive,unsure,,n\n", "has part verdict 'unsure'"),
    ("C2.2,gain,measured,1,0.1,,,,,,1,holds,holds,,n\n" * 2, "holds claim C2.2 part gain more than once"),
])
def test_claims_csv_with_a_bad_verdict_or_a_part_twice_is_refused(tmp_path, rows, match):
    (tmp_path / "c.csv").write_text(NEW_HEAD + rows)
    with pytest.raises(AttnlabError, match=match):
        check_claims(tmp_path / "c.csv")


# ------------------------------------------------------------------ How verdicts work

def test_how_verdicts_work_gives_one_worked_example_per_outcome_from_the_run_files(tmp_path):
    from attnlab.report.build import render
    from attnlab.report.pages import about
    from helpers import site_for
    from test_report import CONFIG, write_fake_results

    # C2.1 holds, C2.3's residual average is 10 % off (not reproduced), C2.2's gain is inside the noise
    root = write_fake_results(tmp_path / "r", val={"L3": 248.1, "L4": 66.0})
    blocks = about.blocks(site_for(root, CONFIG))
    lines = blocks["examples"].strip().split("\n\n")
    assert len(lines) == 5
    assert "verdict-reproduced" in lines[0] and "[C2.1]" in lines[0] and "The whole interval passes it" in lines[0]
    assert "verdict-not-reproduced" in lines[1] and "[C2.3]" in lines[1] and "The whole interval fails it" in lines[1]
    assert "no claim of this version has this verdict" in lines[2]  # one seed: nothing more seeds would settle
    k19 = fmt(k1(19))  # one seed: the first look, at the jackknife's 19 degrees of freedom
    assert "[C2.2]" in lines[3] and "budget-limited" in lines[3]
    assert f"k = {k19} at look 1 (at 19 degrees of freedom" in lines[3]
    assert "(mostly the sampling error)" in lines[3]
    assert "verdict-holds" in lines[4] and "[C0.1]" in lines[4]
    ks = " | ".join(fmt(k_at(2, level)) for level in (*LOOKS, 0.05))  # each look's, then 95 % in one look
    assert f"| 3 seeds' spread alone | 2 | {ks} |" in blocks["k_table"] and "| 4.303 |" in blocks["k_table"]
    assert f"| a line fitted through 4 points (its residual error) | 2 | {ks} |" in blocks["k_table"]
    both = " | ".join(fmt(math.sqrt((k_at(2, level) ** 2 + k_at(19, level) ** 2) / 2)) for level in (*LOOKS, 0.05))
    assert f"| 3 seeds and 20 blocks, equal in variance | 2 and 19 | {both} |" in blocks["k_table"]
    page = render(template_of("about.md").read_text(), blocks, "about.md")
    assert "<!-- attnlab:" not in page and lines[3] in page


def test_the_headline_counts_measured_claims_and_computed_ones_apart_and_ours_apart_from_both(tmp_path):
    from attnlab.report.pages import dashboard, index
    from helpers import site_for
    from test_report import CONFIG, write_fake_results

    site = site_for(write_fake_results(tmp_path / "r", val={"L4": 66.0}), CONFIG)
    theirs = [v for v in site.verdicts if not v.claim.ours]
    measured = [v for v in theirs if v.claim.kind == "measured"]
    computed = [v for v in theirs if v.claim.kind == "computed"]
    ours = [v for v in site.verdicts if v.claim.ours]
    assert {v.verdict for v in computed} == {"holds", "not run"} and "holds" not in {v.verdict for v in measured}
    assert ours and {v.claim.id for v in ours} >= {"S1.3", "S8.1", "S8.3", "S8.4"}
    ran = sum(v.verdict == "holds" for v in computed)
    headline = index.blocks(site)["summary"]
    sources, _, own = headline.partition("; counted apart, the project's own findings")
    assert headline.startswith("**") and f"of {len(measured)} measured claims" in sources
    assert f"**{ran}** holds, **{len(computed) - ran}** not run of {len(computed)} computed claims" in sources
    assert "**1** not reproduced" in sources.split(";")[0]  # C2.3
    assert f"of {len(ours)} measured findings" in own and "claims" not in own
    board = dashboard.blocks(site)
    assert 'option value="holds">holds (' in board["filters"] and "the chapter's: " in board["summary"]
    assert f"the project's own findings (the sources never state them): **{len(ours)}** not run" in board["summary"]
    assert 'option value="ours">' in board["filters"] and board["table"].count('data-whose="ours"') == len(ours)


def _verdict(verdict: str, kind: str = "measured", ours: bool = False):
    from types import SimpleNamespace

    return SimpleNamespace(verdict=verdict, claim=SimpleNamespace(kind=kind, ours=ours))


def test_a_tally_never_counts_our_findings_with_the_sources_claims():
    from attnlab.report.site import tally

    theirs = [_verdict("reproduced"), _verdict("reproduced"), _verdict("inconclusive"), _verdict("holds", "computed")]
    assert tally(theirs) == ("2 reproduced, 1 inconclusive of 3 measured claims; "
                             "1 holds of 1 computed claim, which holds or fails by arithmetic")
    assert tally(theirs + [_verdict("holds", "computed")]).endswith("2 holds of 2 computed claims, which hold or fail by arithmetic")
    ours = [_verdict("reproduced", ours=True), _verdict("not reproduced", ours=True)]
    both = tally(theirs + ours)
    assert both.startswith(tally(theirs) + "; counted apart, the project's own findings")
    assert both.endswith("1 reproduced, 1 not reproduced of 2 measured findings")
    assert tally(ours).startswith("the project's own findings") and "claims" not in tally(ours)
    described = tally([_verdict("descriptive", "descriptive")])
    assert described == "1 descriptive claim, shown and tested by nothing"
    assert tally([]) == "no claims registered"


def test_the_dashboards_filter_counts_ours_apart():
    from attnlab.report.pages.dashboard import option_count

    vs = [_verdict("reproduced"), _verdict("reproduced"), _verdict("reproduced", ours=True)]
    assert option_count(vs, "reproduced") == "2 + 1 of ours"
    assert option_count(vs[:2], "reproduced") == "2"


def test_a_cut_claims_by_seed_csv_is_named(tmp_path):
    from attnlab.runfiles import check_files

    (tmp_path / "claims_by_seed.csv").write_text("claim_id,part,seed,value,value_text,seed_verdict\nC2.1,,1337,4.1,,reproduced\n")
    check_files(tmp_path, ["claims_by_seed.csv"])
    (tmp_path / "claims_by_seed.csv").write_text("claim_id,part,seed,value,value_text,seed_verdict\nC2.1,,1337\n")
    with pytest.raises(AttnlabError, match="row 1 has 3 fields"):
        check_files(tmp_path, ["claims_by_seed.csv"])


def test_a_computed_claim_read_at_several_seeds_is_no_single_run_claim():
    from attnlab.claims.verdicts import Verdict

    seeded = {1337: "holds", 1338: "holds"}
    assert Verdict(claim({"equals": 1}, kind="computed"), "holds", single=seeded).survives() is None
    assert Verdict(claim({"above": 0}), "reproduced", single=dict.fromkeys(seeded, "reproduced")).survives() \
        == "every seed"


def on_file(value, se=None, check=None, **doc):
    """One claim on a result file (S10's, `induction`) held in memory, judged by the engine."""
    from pathlib import Path

    from attnlab.claims.evaluate import evaluate
    from attnlab.results import Results

    entry = {"id": "T", "claim": "c", "chapter_value": 0, "value": value, "check": check or {"between": [0, 10]},
             "tolerance_note": "t", **({"se": se} if se else {})}
    return evaluate(parse_claim(entry), Results(root=Path("."), files={"induction": doc}))


def test_se_expressions_read_per_example_lists_with_examples_that_have_no_value():
    """S9's errors: a mean's over the examples that have a value, a paired gap's, an accuracy gap's (its pairing
    recorded or not), a bootstrap of a ratio of medians."""
    from attnlab.stats import paired_gap_se, se_median_ratio

    v = on_file("induction['mean']", "sem([x for x in induction['xs'] if x is not None])", mean=2.0,
                xs=[1.0, 2.0, None, 3.0])
    assert v.se[""] == pytest.approx(1 / math.sqrt(3)) and v.parts[""].df == 2
    v = on_file("1.0", "sem([x - y for x, y in zip(induction['a'], induction['b'])])", a=[1.0, 2.0, 3.0],
                b=[0.0, 1.0, 2.5])
    assert v.se[""] == pytest.approx(math.sqrt(1 / 12) / math.sqrt(3))
    assert on_file("0.5", "paired_gap_se(0.75, 0.25, 64, None)").se[""] == paired_gap_se(0.75, 0.25, 64)
    both = "mean([a and b for a, b in zip(induction['a'], induction['b'])])"
    v = on_file("0.5", f"paired_gap_se(0.75, 0.25, 4, {both})", a=[True, True, True, False],
                b=[True, False, False, False])
    assert v.se[""] == paired_gap_se(0.75, 0.25, 4, 0.25)
    a, b = [0.1, 0.4, None, 0.3, 0.2], [0.2, 0.3, 0.5, 0.1, 0.4]
    assert on_file("1.0", "se_median_ratio(induction['a'], induction['b'], 1e-6)", a=a, b=b).se[""] \
        == se_median_ratio(a, b, 1e-6)


@pytest.mark.parametrize("value, seeded", [
    ("induction['control']", True),
    ("induction['control'] if 'by_seed' in induction else None", True),
    ("induction['text']", False),
    ("induction['text'] if 'by_seed' in induction else None", False),
    ("induction['text'] + len(induction)", True),  # the file read as a whole: whatever it holds per seed
])
def test_a_result_file_seeds_only_the_claims_that_read_what_it_holds_per_seed(value, seeded):
    """S10: the control models are trained at every seed (by_seed), the text models read at one. A claim on the
    text is one value with its own error, not three seeds that agree; one on the control models is their mean."""
    doc = {"control": 1.0, "text": 5.0, "by_seed": {"1": {"control": 1.0}, "2": {"control": 3.0}}}
    v = on_file(value, "0.1", **doc)
    if seeded:
        assert len(v.seeds) == 2 and v.parts[""].df in (1, math.inf)  # seeds at 1 and 3, or (read whole) alike
    else:
        # S10's result is made at the profile's seeds (more could be added): the first look's k
        assert v.seeds == {} and v.reproduced == 5.0 and v.parts[""].k == k1(math.inf) and "mean of" not in v.note
    if value == "induction['control']":  # seeds' sd √2 over √2 seeds (variance 1), and the stated 0.1 (normal)
        k = math.sqrt((k1(1) ** 2 * 1.0 + k1(math.inf) ** 2 * 0.01) / 1.01)
        assert v.reproduced == 2.0 and v.parts[""].df == 1 and v.parts[""].k == pytest.approx(k)


@pytest.mark.parametrize("se, survives", [(None, "no error alone"), ("0.1", "every seed")])
def test_a_claim_whose_only_error_is_the_seeds_spread_is_not_said_to_be_missed_by_one_seed(se, survives):
    """Three seeds at 4.9, 5.0 and 5.1, inside [0, 10] by far: without an error of its own, one seed alone is
    inconclusive because nothing can judge it, not because it misses; the dashboard and the seed lines say so.
    With an error of its own, each seed alone passes."""
    from types import SimpleNamespace

    from attnlab.report.pages.dashboard import seed_noise
    from attnlab.report.site import alone, seed_lines

    doc = {"control": 5.0, "by_seed": {str(k): {"control": x} for k, x in enumerate((4.9, 5.0, 5.1), 1)}}
    v = on_file("induction['control']", se, **doc)
    assert v.verdict == "reproduced" and v.survives() == survives
    said = seed_noise(SimpleNamespace(config={}), [v])
    if se is None:
        assert set(v.single.values()) == {"inconclusive"} and v.unjudged == {1, 2, 3}
        assert "cannot be judged at one seed alone" in said and "would have missed" not in said
        assert "no error to judge it by" in alone(v) and seed_lines(v).count("no error of its own") == 3
    else:
        assert set(v.single.values()) == {"reproduced"} and v.unjudged == set()
        assert "reproduce at every seed alone" in said and "no error of its own" not in seed_lines(v)
        assert alone(v).endswith("3 of 3 reproduce</div>")


def test_a_paired_difference_is_judged_at_its_seeds_degrees_of_freedom_where_the_seeds_decide():
    paired = SAFE_BUILTINS["paired_se"]
    by_seeds, held_out = (paired({"se": 0.1, "seeds": 3, "se_from": f}) for f in ("seeds", "held-out rows"))
    assert by_seeds == [0.1, 2] and (by_seeds.seeds, by_seeds.spread) == (3, True)
    assert held_out == [0.1, math.inf] and (held_out.seeds, held_out.spread) == (3, False)  # normal k, 3 seeds


@pytest.mark.parametrize("expr, df", [("seed_se(0.1, 3)", 2), ("seed_se(0.1, 3, False)", math.inf),
                                      ("fit_se(0.1, 4)", 2), ("fit_se(0.1, 4, False)", math.inf)])
def test_a_recorded_error_over_few_seeds_or_points_is_judged_at_their_degrees_of_freedom(expr, df):
    assert stated(expr).k == k0(df)


def test_a_recorded_error_of_none_stays_none_through_the_helpers():
    assert stated("seed_se(None, 3)").settle == "no error estimate"
    assert stated("fit_se(None, 4)").settle == "no error estimate"


def test_how_verdicts_work_states_the_evaluations_block_count_the_training_records():
    """docs/about.md names the jackknife's blocks and its degrees of freedom in prose: they are train.py's."""
    import re

    from attnlab.train import EVAL_BLOCKS

    text = re.sub(r"\s+", " ", template_of("about.md").read_text())
    assert f"scores its validation split in {EVAL_BLOCKS} contiguous stretches" in text
    assert f"{EVAL_BLOCKS - 1} for the jackknife's {EVAL_BLOCKS} blocks" in text
    assert f"recomputed {EVAL_BLOCKS} times" in text


@pytest.mark.parametrize("se, group", [({}, "no error alone"), ({"a": "0.1"}, "in part"),
                                       ({"a": "0.1", "b": "0.1"}, "every seed")])
def test_a_claim_is_grouped_by_the_error_sources_its_parts_have_at_one_seed(se, group):
    """C8.2: some parts carry a stated (binomial) error at each seed, others only the seeds' spread. Such a claim is
    judged in part at one seed, its judged parts named with how many seeds alone reproduce them, the others
    named as having no error; a claim none of whose parts has an error is the one one run cannot judge at all."""
    from pathlib import Path
    from types import SimpleNamespace

    from attnlab.claims.evaluate import evaluate
    from attnlab.claims.summary import survival
    from attnlab.report.pages.dashboard import seed_noise
    from attnlab.report.site import alone, seed_lines
    from attnlab.results import Results

    doc = {"a": 5.0, "b": 5.0, "by_seed": {str(k): {"a": x, "b": x} for k, x in enumerate((4.9, 5.0, 5.1), 1)}}
    entry = {"id": "T", "claim": "c", "chapter_value": {"a": 0, "b": 0},
             "value": {"a": "induction['a']", "b": "induction['b']"},
             "check": {"a": {"between": [0, 10]}, "b": {"between": [0, 10]}}, "tolerance_note": "t",
             **({"se": se} if se else {})}
    v = evaluate(parse_claim(entry), Results(root=Path("."), files={"induction": doc}))
    assert survival(v) == group
    said = seed_noise(SimpleNamespace(config={}), [v])
    if group == "in part":
        assert v.errorless_alone() == ["b"] and v.judged_alone() == {"a": 3}
        assert "can be judged only in part at one seed alone" in said and "cannot be judged" not in said
        assert "a (the error its run file states) reproduces at 3 of 3 seeds alone; no error at one seed: b" in said
        assert "no error to judge b by" in alone(v) and seed_lines(v).count("no error of its own to judge b by") == 3
    elif group == "no error alone":
        assert v.errorless_alone() == ["a", "b"] and v.judged_alone() == {}
        assert "cannot be judged at one seed alone" in said and "only in part" not in said
        assert "no error to judge it by" in alone(v)
    else:
        assert v.errorless_alone() == [] and "no error" not in said and "only in part" not in said


def test_each_evaluation_s_replicates_are_the_jackknife_s_own_even_for_a_new_list_in_a_freed_one_s_place():
    """expressions.without serves ppl_without's numbers from one evaluation's replicates, worked out once; a list
    that takes the place (and id) of one since dropped gets its own."""
    from attnlab.claims.expressions import without
    from attnlab.stats import ppl_without

    for scale in (1.0, 2.0, 3.0):  # each list is dropped before the next: CPython may reuse its id
        blocks = [(scale * (1 + i / 10), 100 + i) for i in range(5)]
        for drop in range(len(blocks) + 2):  # past the last block nothing is left out
            assert without(blocks, drop) == ppl_without(blocks, drop)
        del blocks
