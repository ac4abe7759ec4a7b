"""Every reading (values in, sentence out) fed values on both sides of each of its boundaries: the sentence must
change where the numbers cross, and say nothing a reader would have to check by hand."""
from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pandas as pd
import pytest

from attnlab import stats
from attnlab.claims import design
from attnlab.report import readings
from attnlab.report.site import verdict_reading
from attnlab.report.pages import dashboard
from attnlab.experiments.approximation import page as approximation
from attnlab.experiments.averaging import page as averaging
from attnlab.experiments.cost import page as cost
from attnlab.experiments.data import page as data
from attnlab.experiments.decode import page as decode
from attnlab.experiments.depth import page as depth
from attnlab.experiments.equivalence import page as equivalence
from attnlab.experiments.grouping import page as grouping
from attnlab.experiments.ladder import page as ladder
from attnlab.experiments.multihead import page as multihead
from attnlab.experiments.params import page as params
from attnlab.experiments.position import page as position
from attnlab.experiments.scaling import derive as scaling_derive, page as scaling
from attnlab.experiments.scores import page as scores
from attnlab.experiments.seq2seq import page as seq2seq
from attnlab.experiments.throughput import page as throughput
from attnlab.experiments.viewer import page as viewer
from attnlab.experiments.winograd import page as winograd
from attnlab.claims.verdicts import Part, Verdict
from attnlab.stats import Estimate
from attnlab.results import Spread
from helpers import REPO


def seeds(*values) -> Spread:
    return Spread({str(1337 + i): v for i, v in enumerate(values)})


# ------------------------------------------------------------------ the shared words

@pytest.mark.parametrize("e, of, side", [
    (Estimate(1.0, 0.1), 0.0, "above"), (Estimate(-1.0, 0.1), 0.0, "below"), (Estimate(0.1, 0.1), 0.0, "within"),
    (Estimate(0.3, 0.1), 0.0, "above"), (Estimate(0.3, 0.1, 2), 0.0, "within"),  # k = 1.96 against k = 4.30
    (Estimate(1.0), 0.0, None), (None, 0.0, None), (Estimate(1.1, 0.01), 1.0, "above"), (Estimate(0.9, 0.01), 1.0, "below"),
])
def test_a_side_is_said_only_where_the_interval_clears_it(e, of, side):
    assert stats.side(e, of) == side
    words = readings.said(e, above="up", below="down", of=of)
    assert words == {"above": "up", "below": "down", "within": readings.NOISE, None: readings.NO_ERROR}[side]


def test_two_runs_are_set_against_each_other_paired_by_seed():
    a = seeds(58.0, 59.5, 56.6)
    assert readings.versus(a, seeds(56.5, 58.0, 55.0)) == "58.03 against 56.50, a difference of +1.53 ± 0.14 (k·SE): higher"
    assert readings.versus(seeds(56.5, 58.0, 55.0), a).endswith(": lower")
    assert readings.versus(a, seeds(57.1, 57.6, 56.8)).endswith(": within the noise")


def test_paired_differences_are_judged_on_their_own_spread():
    a, b = {1: 10.0, 2: 20.0, 3: 30.0}, {1: 9.0, 2: 19.1, 3: 28.9}  # far apart runs, a steady difference
    e = design.paired(a, b)
    assert e.value == pytest.approx(1.0) and e.df == 2 and stats.side(e) == "above"
    assert stats.side(design.paired(a, {1: 11.0, 2: 19.0, 3: 30.0})) == "within"
    assert design.paired(a, {4: 1.0}) == Estimate(19.0)  # no seed in common: the means, nothing to judge by
    assert design.paired({1: 2.0}, {1: 1.0}).se is None
    assert design.paired(a, b, how=lambda x, y: x / y).value == pytest.approx((10 / 9 + 20 / 19.1 + 30 / 28.9) / 3)


def blocks_of(ppl: float, scatter: list[float]) -> list[list]:
    """Evaluation blocks (mean loss, tokens) whose perplexity is exactly `ppl`."""
    mean = sum(scatter) / len(scatter)
    return [[math.log(ppl) + x - mean, 100] for x in scatter]


@pytest.mark.parametrize("scatter, side", [(0.002, "above"), (0.2, "within")])
def test_perplexities_paired_by_seed_take_the_evaluations_sampling_error_where_it_is_larger(scatter, side):
    """Seeds that agree closely do not make a difference real when the held-out blocks scatter: the error is the
    larger of the two, as the verdicts take it; at one seed the blocks alone give an error."""
    pattern = [math.sin(2.3 * i) for i in range(10)]
    own = [math.cos(1.7 * i + 0.4) for i in range(10)]  # run a's scatter of its own, which the pairing keeps
    def run(ppls, mine):
        return Spread({s: p for s, p in zip((1, 2, 3), ppls)},
                      {s: blocks_of(p, [0.05 * x + scatter * y * mine for x, y in zip(pattern, own)])
                       for s, p in zip((1, 2, 3), ppls)})
    a, b = run((41.0, 42.0, 40.0), 1), run((40.0, 40.98, 39.02), 0)
    e = design.paired(a, b, how=lambda x, y: x / y)
    assert stats.side(e, 1.0) == side
    assert stats.side(design.paired(a.by_seed, b.by_seed, how=lambda x, y: x / y), 1.0) == "above"  # seeds alone
    one = design.paired(Spread({1: 41.0}, {1: a.blocks[1]}), Spread({1: 40.0}, {1: b.blocks[1]}))
    assert one.se is not None and one.df == 9  # one seed: the jackknife over its 10 blocks
    assert design.paired(Spread({1: 41.0}), Spread({1: 40.0})).se is None  # no blocks, one seed: no error


@pytest.mark.parametrize("slope, se, words", [
    (1.8, 0.05, "between linear and quadratic"), (2.0, 0.05, "quadratic within the noise"),
    (2.5, 0.05, "steeper than quadratic"), (1.02, 0.05, "linear within the noise"), (0.5, 0.05, "less than linear"),
    (1.5, 0.5, "too noisy to tell linear from quadratic"), (1.8, None, readings.NO_ERROR)])
def test_a_slope_is_linear_quadratic_or_between_only_as_its_interval_says(slope, se, words):
    assert readings.growth(Estimate(slope, se)) == words


def test_seed_and_sampling_errors_add_in_quadrature():
    from attnlab.stats import t95

    wide = design.of_seeds([0.5, 0.9, 0.7], sampling=0.01)  # mostly the seeds' spread: t at 2 df, weighed
    seeds = (0.2 / math.sqrt(3)) ** 2
    assert wide.se == pytest.approx(math.sqrt(seeds + 0.01 ** 2)) and wide.df == 2
    assert wide.half == pytest.approx(math.sqrt(seeds * t95(2) ** 2 + 0.01 ** 2 * t95(math.inf) ** 2), rel=1e-3)
    tight = design.of_seeds([0.70, 0.70, 0.70], sampling=0.02)  # no spread: the binomial error alone, normal
    assert (tight.se, tight.df) == (0.02, math.inf) and tight.half == pytest.approx(0.02 * t95(math.inf), rel=1e-3)


def test_runs_at_different_seeds_are_named_apart_from_the_seeds_most_hold():
    ten, three = list(range(1337, 1347)), [1337, 1338, 1339]
    every = {"E4-pre": ten, "E4-pre-warm": three, "E4-post": ten, "E4-post-warm": three}
    assert readings.runs_at_seeds(every) == ("at each of 10 seeds (" + ", ".join(map(str, ten))
                                             + "; E4-pre-warm and E4-post-warm at 1337, 1338, 1339 only)")
    most = {"a": three, "b": three, "c": [1337]}  # most runs win, whichever holds more seeds
    assert readings.runs_at_seeds(most) == "at each of 3 seeds (1337, 1338, 1339; c at 1337 only)"
    assert readings.runs_at_seeds({"a": [1338, 1337], "b": [1337, 1338]}) == "at each of 2 seeds (1337, 1338)"
    assert readings.runs_at_seeds({"a": [1337, None]}) == "at one seed (1337)"
    assert readings.runs_at_seeds({}) == readings.runs_at_seeds({"a": [None]}) == ""


def test_counts_seeds_and_rounding_steps():
    assert readings.at_seeds([1338, 1337, 1339]) == "at each of 3 seeds (1337, 1338, 1339)"
    assert readings.at_seeds([1337]) == "at one seed (1337)" and readings.at_seeds([None]) == ""
    assert (readings.count(1, "sentence"), readings.count(2, "sentence")) == ("1 sentence", "2 sentences")
    assert readings.rounding_steps(2.0 ** -23).startswith("1 rounding step of")
    assert readings.rounding_steps(3 * 2.0 ** -23).startswith("3 rounding steps")
    assert readings.interval(Estimate(0.5, 0.1)) == "+0.50 ± 0.20 (k·SE)" and readings.interval(Estimate(0.5)) == "+0.50"


# ------------------------------------------------------------------ why each verdict is so (every page)

def verdict(verdict: str, *parts: Part, checks: dict) -> Verdict:
    return Verdict(SimpleNamespace(id="C9.9", checks=checks), verdict, parts={p.name: p for p in parts})


def test_each_part_of_the_verdict_reading_is_labelled_with_its_own_outcome():
    """S6.3: one part fails clear of the bound, so the claim is not reproduced; a part whose interval holds the
    bound is inconclusive, and its line says so, beside the claim's verdict."""
    band = {"below": 1.06}
    fails = Part("mqa", "measured", 1.079, "not reproduced", se=0.004, k=4.3)
    straddles = Part("gqa", "measured", 1.026, "inconclusive", se=0.003, k=4.3, settle="7")
    text = verdict_reading([verdict("not reproduced", fails, straddles, checks={"mqa": band, "gqa": band})],
                           3)
    assert "**C9.9, mqa** (not reproduced):" in text
    assert "**C9.9, gqa** (inconclusive; the claim: not reproduced):" in text


def test_the_verdict_reading_counts_the_seeds_its_claim_was_judged_at():
    """A second look may add seeds to some runs of an experiment only (depth's E4-pre and E4-post, for C4.1): a
    claim that reads the others (C4.2b: the warmup runs) says the seeds it was judged at, not the page's most."""
    band = {"between": [0.5, 1.5]}
    part = Part("gain", "measured", 1.4, "inconclusive", se=0.1, k=4.3, settle="7", n_seeds=3)
    text = verdict_reading([verdict("inconclusive", part, checks={"gain": band})], 10)
    assert "7 seeds would settle it; these runs were trained at 3." in text
    once = dataclasses.replace(part, n_seeds=1)  # a value with no seed count of its own: the page's
    assert "these runs were trained at 10." in verdict_reading([verdict("inconclusive", once, checks={"gain": band})],
                                                                10)
    judged = verdict("inconclusive", once, checks={"gain": band})
    judged.seeds = {1337: 1.3, 1338: 1.4, 1339: 1.5, 1340: 1.4}
    assert "these runs were trained at 4." in verdict_reading([judged], 10)
    # past the first look (three seeds) a claim is at the design's second look, its last: no seeds are promised
    assert "trained at 4, the design's second look and its last, which adds no more seeds." in verdict_reading(
        [judged], 10, first=3)
    assert "trained at 3." in verdict_reading([verdict("inconclusive", part, checks={"gain": band})], 10, first=3)



def test_a_claim_whose_profile_plans_no_second_look_is_told_so_and_one_with_a_plan_is_not():
    """Settle counts promise nothing where the profile plans no second look (quick's scaling, for one)."""
    band = {"between": [0.5, 1.5]}
    part = Part("gain", "measured", 1.4, "inconclusive", se=0.1, k=4.3, settle="7", n_seeds=3)
    v = verdict("inconclusive", part, checks={"gain": band})
    v.claim.experiment = "scaling"
    said = verdict_reading([v], 3, first=3, unplanned=("scaling",))
    assert "trained at 3. The profile plans no second look for scaling, so the design leaves it at this look." in said
    assert "plans no second look" not in verdict_reading([v], 3, first=3, unplanned=("another",))
    past = dataclasses.replace(part, n_seeds=4)  # at its second look: the last, whatever the plan
    later = verdict("inconclusive", past, checks={"gain": band})
    later.claim.experiment = "scaling"
    said = verdict_reading([later], 4, first=3, unplanned=("scaling",))
    assert "its last, which adds no more seeds." in said and "plans no second look" not in said


def test_the_verdict_reading_says_a_real_difference_or_what_would_settle_it():
    band = {"between": [0.5, 1.5]}
    real = Part("gain", "measured", 3.0, "not reproduced", se=0.1, k=2.0)
    text = verdict_reading([verdict("not reproduced", real, checks={"gain": band})], 3)
    assert "C9.9, gain" in text and "a real difference" in text and "1.5 past the test's bound" in text
    seeds = Part("gain", "measured", 1.4, "inconclusive", se=0.1, k=4.3, settle="7")
    text = verdict_reading([verdict("inconclusive", seeds, checks={"gain": band})], 3)
    assert "passes the test" in text and "7 seeds would settle it; these runs were trained at 3" in text
    assert "wider than the test's whole band" not in text
    outside = Part("gain", "measured", 1.6, "inconclusive", se=0.1, k=4.3, settle="7")
    assert "the value itself fails the test" in verdict_reading(
        [verdict("inconclusive", outside, checks={"gain": band})], 3)
    wide = Part("gain", "measured", 1.0, "inconclusive", se=0.5, k=4.3, settle="budget")
    text = verdict_reading([verdict("inconclusive", wide, checks={"gain": band})], 1)
    assert "the budget limits it" in text and "wider than the test's whole band (1)" in text
    many = Part("gain", "measured", 1.4, "inconclusive", se=0.1, k=4.3, settle="more than 30")
    assert "would need more than 30 seeds" in verdict_reading([verdict("inconclusive", many, checks={"gain": band})], 1)
    exact = Part("ok", "measured", False, "not reproduced")
    assert "as it stands" in verdict_reading([verdict("not reproduced", exact, checks={"ok": {"is_true": True}})], 1)
    unknown = Part("gain", "measured", 1.0, "inconclusive", settle="no error estimate")
    assert "no interval to judge" in verdict_reading([verdict("inconclusive", unknown, checks={"gain": band})], 1)


def test_the_verdict_reading_lists_only_what_did_not_reproduce():
    band = {"between": [0.5, 1.5]}
    fine = Part("gain", "measured", 1.0, "reproduced", se=0.1, k=2.0)
    assert verdict_reading([verdict("reproduced", fine, checks={"gain": band})], 1) == ""
    bad = Part("loss", "measured", 3.0, "not reproduced", se=0.1, k=2.0)
    text = verdict_reading([verdict("not reproduced", fine, bad, checks={"gain": band, "loss": band})], 1)
    assert "C9.9, loss" in text and "C9.9, gain" not in text


# ------------------------------------------------------------------ E4 depth

def init_table(pre, post, definition=depth.NAMES["grad_block_"]) -> pd.DataFrame:
    return pd.DataFrame([{"definition": definition, "norm": "pre-norm", "run": "E4-pre", "seeds": len(pre), "n": 12,
                          "ratio": seeds(*pre)},
                         {"definition": definition, "norm": "post-norm", "run": "E4-post", "seeds": len(post), "n": 12,
                          "ratio": seeds(*post)}])


def test_depth_says_which_end_gets_the_gradient_only_beyond_the_noise():
    text = depth.init_reading(init_table([0.90, 0.84, 0.84], [1.02, 1.04, 0.97]))
    assert "nearer the input receive the larger gradient" in text  # 0.86 ± 0.09: below 1
    assert "even over the depth within the noise" in text  # 1.01 ± 0.09 holds 1
    assert "larger with the LayerNorm after each sublayer" in text
    text = depth.init_reading(init_table([1.30, 1.32, 1.31], [1.31, 1.29, 1.33]))
    assert "nearer the output receive the larger gradient" in text and "alike within the noise" in text
    one = depth.init_reading(init_table([0.90], [1.02]))
    assert "one seed, so no error" in one and "0.900×" in one
    both = depth.init_reading(pd.concat([init_table([0.90, 0.84, 0.84], [1.02, 1.04, 0.97]),
                                         init_table([1.30, 1.32, 1.31], [1.31, 1.29, 1.33], depth.NAMES["grad_qkv_"])]))
    ours, theirs = both.split("\n")[:2]  # one line per definition, each read on its own numbers
    assert ours.startswith(f"- **{depth.NAMES['grad_block_']}.**") and "nearer the input" in ours
    assert theirs.startswith(f"- **{depth.NAMES['grad_qkv_']}.**") and "nearer the output" in theirs


def runs(**val) -> pd.DataFrame:
    return pd.DataFrame([{"run": run, "val_spread": seeds(*v)} for run, v in val.items()])


def test_depth_says_warmup_changed_the_outcome_only_beyond_the_noise():
    same = depth.outcome_reading(runs(**{"E4-post": [309.3, 308.2, 310.4], "E4-post-warm": [309.1, 305.7, 312.5]}))
    assert "- Post-norm, with warmup against without: 309.10 against 309.30" in same and "within the noise" in same
    lower = depth.outcome_reading(runs(**{"E4-post": [309.3, 308.2, 310.4], "E4-post-warm": [57.1, 56.2, 58.0]}))
    assert ": lower." in lower and ": within the noise." not in lower
    assert depth.outcome_reading(runs(**{"E4-post": [309.3]})) == ""


def fit(run: str, val: list, train: list, chapter: float | None) -> dict:
    return {"run": run, "val_spread": seeds(*val), "train_spread": seeds(*train), "chapter_ppl": chapter}


def test_depth_sets_each_runs_gap_and_number_against_the_chapters_only_beyond_the_noise():
    text = depth.fit_reading(pd.DataFrame([
        fit("E4-pre", [51.3, 50.0, 49.3], [9.26, 9.27, 9.36], 37.82),      # 5.4x; above 37.82
        fit("E4-pre-warm", [38.1, 37.0, 37.6], [30.2, 29.8, 30.5], 37.62),  # 1.25x; 37.57 holds 37.62
        fit("E4-post", [30.1, 29.5, 30.4], [10.1, 10.5, 9.8], 308.05),     # 2.98 +- 0.36 holds 2.80; below
        fit("E4-post-warm", [40.0], [10.0], 37.88)]))                      # one seed, no seeds' spread
    pre, warm, post, one = text.split("\n\n")[1].split("\n")
    assert "5.40 ± " in pre and "a wider gap than the chapter's two blocks (2.80×)" in pre and "above it" in pre
    assert "a narrower gap" in warm and "37.57 ± " in warm and "within the noise" in warm.split("Against")[1]
    assert "two blocks' gap (2.80×) within the noise" in post and "below it" in post
    assert one.endswith("no error to judge it by.") and "4.00: no error" in one
    assert text.rstrip().endswith("1 run above it (E4-pre); 1 run within the noise of it (E4-pre-warm); "
                                  "1 run below it (E4-post).")
    assert "Of the 3 runs set against the chapter's validation perplexity (1 run with no error to judge by left " \
           "out)" in text  # one seed, no blocks: no error, counted on no side
    diverged = pd.DataFrame([{**fit("E4-post", [1.0], [1.0], 308.05), "val_spread": None}])
    assert depth.fit_reading(diverged) == ""  # a run with no perplexity is not read


def test_depth_says_a_setting_every_run_shares_once_and_keeps_a_column_that_differs():
    t = pd.DataFrame({"run": ["E4-pre", "E4-post"], "blocks": [12, 12], "steps": [1000, 1000], "lr": [0.003, 0.001],
                      "warmup": [0, 200], "diverged_at": [None, None]})
    said, left = depth.shared(t, depth.RUN_COLUMNS)
    assert said == "Every run: 12 blocks, 1000 steps.\n\n"
    assert "lr" in left and "warmup" in left and not {"blocks", "steps", "diverged_at"} & set(left)
    said, left = depth.shared(t.assign(lr=[0.003, 0.003], steps=[1000, 37], diverged_at=[None, 37]), depth.RUN_COLUMNS)
    assert said == "Every run: 12 blocks, learning rate 0.003.\n\n" and {"steps", "diverged_at"} <= set(left)
    assert depth.shared(t.iloc[:1], depth.RUN_COLUMNS)[0] == ""  # one run: its table says it all


def test_depth_draws_the_chapter_budgets_curves_past_altairs_row_limit():
    c = pd.DataFrame([{"run": run, "seed": seed, "step": step, "train_loss": 7.0 - step / 1000}
                      for run in ("E4-pre", "E4-pre-warm", "E4-post", "E4-post-warm") for seed in (1337, 1338, 1339)
                      for step in range(1, 1001)])  # 12,000 rows: the chapter's 1000 steps at 3 seeds
    spec = depth.curves_chart(c, list(c["run"].unique()))
    assert len(spec["datasets"][next(iter(spec["datasets"]))]) == 12000


# ------------------------------------------------------------------ E6 cost

def errors(favor: list[float], se=None, low=None, rate=None, shrink=None) -> dict:
    e = {"n": 1024, "head_dim": 64, "draws": 3,
         "window": [{"window": w, "relative_error": x} for w, x in ((8, 3.2), (256, 0.5))],
         "favor": [{"features": m, "relative_error": x, "se": se, "min": low if low is not None and m == 256 else x - 0.05,
                    "max": x + 0.05} for m, x in zip((8, 256), favor)]}
    if rate is not None:
        e["favor_rate"] = {"slope": rate, "se": 0.02}
    if shrink is not None:
        e["favor_shrink"] = e["window_shrink"] = {"ratio": shrink, "se": 0.01}
    return e


def test_cost_says_favors_rate_against_the_square_root_only_where_it_can():
    assert "falls more slowly than the square root" in cost.error_reading(errors([2.3, 1.1], rate=-0.21))
    assert "as the square root, within the noise" in cost.error_reading(errors([2.3, 0.4], rate=-0.5))
    assert "falls faster than the square root" in cost.error_reading(errors([2.3, 0.1], rate=-0.8))
    assert "does not judge the rate" in cost.error_reading(errors([2.3, 1.1]))
    assert "(×0.48 ± 0.04 (k·SE), 95 % over the draws: it falls)" in cost.error_reading(errors([2.3, 1.1], shrink=0.48))
    assert "it rises" in cost.error_reading(errors([2.3, 1.1], shrink=1.2))


def test_cost_comments_an_error_above_one_and_only_then():
    above = cost.error_reading(errors([2.3, 1.1]))
    assert "At every feature count measured FAVOR+'s error is above 1 (at every draw)" in above
    some = cost.error_reading(errors([2.3, 0.5]))
    assert "At 1 of 2 feature counts (8)" in some
    assert "above 1" not in cost.error_reading(errors([0.9, 0.5]))
    straddles = cost.error_reading(errors([2.3, 1.1], low=0.95))  # a draw below 1: not above at every draw
    assert "At 1 of 2 feature counts (8)" in straddles
    noisy = cost.error_reading(errors([2.3, 1.1], se=0.2))  # 1.1 ± 0.86 (t at 2 df) holds 1
    assert "At 1 of 2 feature counts (8) FAVOR+'s error is above 1 (beyond the noise)" in noisy


def test_cost_slopes_are_fitted_with_their_error():
    rows = [{"method": "naive", "n": n, "median_ms": n ** 2 * (1 + 0.01 * (-1) ** i), "peak_bytes": n * 100,
             "oom": False} for i, n in enumerate((128, 256, 512, 1024))]
    text = cost.slopes_text({"slopes": {"naive": {}}, "rows": rows, "longest": {"naive": 1024}, "oom": {}})
    assert "time n<sup>1.99 ± 0.04 (k·SE)</sup>, quadratic within the noise" in text
    assert "memory n<sup>1.00 ± 0.00 (k·SE)</sup>, linear within the noise" in text


# ------------------------------------------------------------------ E2 ladder

def test_ladder_says_each_rung_higher_or_lower_only_beyond_the_noise():
    table = pd.DataFrame([{"row": "L1", "val_spread": seeds(68.0, 68.4, 67.8), "train_spread": seeds(50, 51, 50)},
                          {"row": "L6", "val_spread": seeds(73.0, 70.0, 68.3), "train_spread": seeds(56, 55, 54)},
                          {"row": "B2", "val_spread": seeds(51.0, 50.5, 51.9), "train_spread": seeds(38, 37, 38)}])
    text = ladder.steps_table(table)
    l6 = next(line for line in text.splitlines() if line.startswith("| L6 |"))
    assert l6.count("within the noise") == 2  # against L1 (the rung below and the first): +2.37 ± 6.3
    b2 = next(line for line in text.splitlines() if line.startswith("| B2 |"))
    assert b2.count("lower") == 3 and "higher" not in b2
    assert ladder.steps_table(table.iloc[:1]) == ""


# ------------------------------------------------------------------ the dashboard

def seeded(cid: str, mean: str, alone: list[str]) -> Verdict:
    return Verdict(SimpleNamespace(id=cid, experiment="ladder", kind="measured", ours=False), mean,
                   single={1337 + i: x for i, x in enumerate(alone)})


def test_dashboard_groups_say_what_the_seeds_alone_did_and_the_mean_apart():
    site = SimpleNamespace(config=3)
    text = dashboard.seed_noise(site, [
        seeded("C2.1", "reproduced", ["reproduced"] * 3),
        seeded("C2.5", "inconclusive", ["reproduced", "inconclusive", "inconclusive"]),
        seeded("C2.6", "reproduced", ["reproduced", "not reproduced", "reproduced"]),
        seeded("C8.2", "not reproduced", ["not reproduced"] * 3)])
    some = next(line for line in text.splitlines() if "at some seeds" in line)
    assert "hold on the mean" not in text
    assert "inconclusive: [C2.5]" in some and "reproduced: [C2.6]" in some and "C8.2" not in some
    assert "**1** reproduce at no seed alone" in text and "**2** reproduce at some seeds" in text
    assert text.startswith("4 claims read runs trained at 3 seeds.")
    six = seeded("C2.9", "reproduced", ["reproduced"] * 6)  # the ladder's second look beside position's first
    assert dashboard.seed_noise(site, [six, seeded("C5.3", "reproduced", ["reproduced"] * 3)]).startswith(
        "2 claims read runs trained at 3 to 6 seeds.")


# ------------------------------------------------------------------ E5 position

def test_position_says_what_the_runs_trained_on_against_the_profile():
    table = pd.DataFrame({"trained": [64, 64]})
    words = position.method_words(table, ["64", "128", "256"], 128)
    assert words["trained_on"] == "windows of 64 tokens (E5's own setting; the profile's context is 128)"
    assert words["windows_read"] == "64, 128 and 256 tokens (×1, ×2 and ×4 the trained length)"
    assert position.method_words(table, ["64", "128"], 64)["trained_on"] == "windows of 64 tokens"


def test_position_says_a_rise_or_a_fall_only_beyond_the_noise():
    text = position.rise_reading({"learned": Estimate(1.88, 0.02, 2), "alibi": Estimate(0.990, 0.0005, 2),
                                  "none": Estimate(1.01, 0.01, 2)}, 64, "256")
    assert "rises for learned ×1.880 ± 0.086" in text and "falls for alibi" in text
    assert "holds within the noise for none" in text


# ------------------------------------------------------------------ S11 viewer

def test_viewer_counts_models_in_all_and_on_each_sentence():
    examples = [{"models": {"A": [], "B": []}}, {"models": {"C": [], "D": []}, "alternatives": [1]}]
    assert viewer.contents(examples).startswith("2 sentences and 4 models in all (A, B, C, D), 2 of them on each")
    assert viewer.contents(examples).endswith("; 1 sentence carries S9's adversarial rows")
    mixed = viewer.contents([{"models": {"A": []}}, {"models": {"A": [], "B": []}}])
    assert mixed.endswith("1 to 2 of them on each sentence; 0 sentences carry S9's adversarial rows")


# ------------------------------------------------------------------ performance and data

def test_bench_says_faster_or_slower_only_beyond_the_noise():
    ours = [1.0, 1.02, 0.98, 1.01, 0.99]
    same = throughput.speed_reading({"attnlab_step_seconds": ours, "reference_step_seconds": [1.01, 1.0, 0.99, 1.0, 1.0]})
    assert "about as fast as the reference, within the noise" in same
    slow = throughput.speed_reading({"attnlab_step_seconds": [2 * x for x in ours], "reference_step_seconds": ours})
    assert "2.000× slower than the reference" in slow and "0.500" in slow
    fast = throughput.speed_reading({"attnlab_step_seconds": [x / 2 for x in ours], "reference_step_seconds": ours})
    assert "2.000× faster than the reference" in fast
    assert throughput.speed_reading({}) == ""
    assert throughput.tokenizer_reading({"tokenizer_train_seconds": 0.875}, {"n_merges": 768, "n_chars": 1115394}) == \
        " Here 768 merges over 1,115,394 characters took 0.88 s."


def speed_file(fastest: list[float], yard: list[float]) -> dict:
    """A throughput file with the fp32 reference (the yardstick), attnlab fp32 at its speed, and one setting."""
    row = lambda name, model, secs: {"name": name, "model": model, "step_seconds": secs, "tokens_per_s": 1000.0,
                                     "first_step_seconds": 0.5}
    return {"yardstick": "reference fp32", "settings": [row("reference fp32", "reference", yard),
                                                        row("attnlab fp32", "attnlab", yard),
                                                        row("attnlab bf16", "attnlab", fastest)]}


def test_bench_says_the_fastest_setting_reaches_the_goal_only_beyond_the_noise():
    yard = [1.0, 1.02, 0.98, 1.01, 0.99]
    fast = throughput.goal_reading(speed_file([y / 1.5 for y in yard[::-1]], yard))
    assert fast.startswith("The fastest setting, attnlab bf16, trains 1.500× faster than the reference fp32 (95 % "
                           "interval 1.4")
    assert "it reaches the goal of 1.25×" in fast
    slow = throughput.goal_reading(speed_file([y / 1.1 for y in yard[::-1]], yard))
    assert "attnlab bf16" in slow and "it falls short of the goal of 1.25×" in slow
    near = throughput.goal_reading(speed_file([1 / 1.2, 1 / 1.3, 1 / 1.25, 1 / 1.22, 1 / 1.28], [1.0] * 5))
    assert "whether it reaches the goal of 1.25× the noise cannot tell" in near
    assert "one round cannot judge" in throughput.goal_reading(speed_file([0.5], [1.0]))
    assert throughput.goal_reading({"attnlab_step_seconds": yard}) == ""  # a file from before the settings
    assert "predates the speed settings" in throughput.settings_table({})
    table = throughput.settings_table(speed_file([y / 1.5 for y in yard], yard))
    assert "speed against reference fp32" in table and "1 (the yardstick)" in table
    assert "| attnlab bf16 | 1,000 | 1.500× faster (95 % interval 1.500–1.500) | 0.50 |" in table


@pytest.mark.parametrize("ratios, said", [
    ([1.5, 1.52, 1.48], "1.500× faster (95 % interval"),
    ([0.5, 0.51, 0.49], "2.000× slower (95 % interval"),
    ([0.99, 1.02, 0.99], "about the same speed (1.000×, 95 % interval"),
    ([0.8], "1.250× slower (one round: no interval)"),
])
def test_every_speed_ratio_states_its_direction_and_the_interval_decides_about_the_same(ratios, said):
    """'ratio 1.001' (faster) sat beside '0.993 / 0.991' (slower) with no direction: each says which, or 'about the
    same' where its interval holds 1."""
    e = stats.of_values([math.log(r) for r in ratios])
    assert throughput.faster_or_slower(e).startswith(said)


@pytest.mark.parametrize("ratio, said", [(1.001, "1.001: about the same (inside the paired rounds' 95 % interval"),
                                         (1.05, "1.050: attnlab 1.050× faster (outside"),
                                         (0.95, "0.950: attnlab 1.053× slower (outside")])
def test_the_ratios_of_medians_are_said_against_the_paired_rounds_interval(ratio, said):
    ours = [1.0, 1.02, 0.98, 1.01, 0.99]
    b = {"attnlab_step_seconds": ours, "reference_step_seconds": [1.01, 1.0, 0.99, 1.0, 1.0], "ratio": ratio}
    assert throughput.against_paired(ratio, *throughput.paired_interval(b)).startswith(said)
    assert throughput.against_paired(ratio, None, None).endswith("(no interval)")


def test_data_reads_the_merges_and_the_split_from_them():
    text = data.merges_reading([" t", "he", " a", "ou", " the"])
    assert text.startswith("Of the first 5, 2 glue a space to one letter (␣t, ␣a) and 2 join two letters (he, ou)")
    assert "␣the, comes at rank 5 and joins two earlier ones, ␣t and he (ranks 1 and 2)" in text
    assert "joins" not in data.merges_reading([" a", "he", " the"]) and data.merges_reading([]) == ""
    assert data.split_words({"data": {"val_fraction": 0.1}}) == "the first 90 % for training, the rest for validation"


# ------------------------------------------------------------------ E3 scores and trained

def test_scores_name_a_width_whose_variance_is_off_d_beyond_the_noise():
    row = lambda d, var: {"d": d, "var": var, "se_var": 1.0}  # noqa: E731
    assert scores.variance_reading({"variance": [row(4, 4.5), row(16, 15.0)]}).startswith("At every width")
    text = scores.variance_reading({"variance": [row(4, 4.5), row(16, 19.0)]})
    assert "d = 16 (above d)" in text and "at the other widths" in text


def test_scores_readings_follow_the_tables():
    e3 = {"n_keys": 64, "n_rows": 2000, "mass_reference": 0.9575,
          "effective_tokens": [{"d_k": 4, "divided_mean": 42.2, "undivided_mean": 21.3, "undivided_median": 18.6,
                                "undivided_frac_below_1_5": 0.005},
                               {"d_k": 1024, "divided_mean": 40.1, "undivided_mean": 1.18, "undivided_median": 1.2,
                                "undivided_frac_below_1_5": 0.85}],
          "saturation": [{"d_k": 4, "mass_divided": 0.957, "mass_undivided": 0.84, "frozen_divided": 0.0,
                          "frozen_undivided": 0.001},
                         {"d_k": 1024, "mass_divided": 0.961, "mass_undivided": 0.08, "frozen_divided": 0.0,
                          "frozen_undivided": 0.69}]}
    assert "above the median at d_k = 4:" in scores.effective_reading(e3)
    e3["effective_tokens"][1]["undivided_median"] = 1.0
    assert "above the median at every d_k" in scores.effective_reading(e3)
    e3["effective_tokens"][0]["undivided_median"] = e3["effective_tokens"][1]["undivided_median"] = 50
    assert "median" not in scores.effective_reading(e3)
    text = scores.saturation_reading(e3)
    assert "frozen rows is 0.000 at every d_k" in text and "goes from 0.001 at 4 to 0.690 at 1024" in text


def test_scaling_says_the_division_helps_only_beyond_the_noise():
    def table(raw):
        return pd.DataFrame([{"setup": "one head", "d_k": 256, "divided": False, "run": "raw", "val_spread": seeds(*raw)},
                             {"setup": "one head", "d_k": 256, "divided": True, "run": "div", "val_spread": seeds(53, 53.4, 52.9)}])
    assert "undivided higher (the division helps)" in scaling.division_reading(table([67, 67.5, 66.9]))
    assert ": within the noise" in scaling.division_reading(table([54, 52.0, 53.9]))
    assert "undivided lower (the division hurts)" in scaling.division_reading(table([50, 50.4, 49.8]))
    probes = {"raw": {("score_std", "start"): seeds(21.5, 21.4, 21.3), ("score_std", "end"): seeds(89, 93, 92),
                      ("saturated", "start"): seeds(0.59, 0.62, 0.60), ("saturated", "end"): seeds(0.60, 0.59, 0.62)}}
    text = scaling.probe_reading(probes)
    assert "score std 21.400 → 91.333 (+69.933 ± " in text and ": rises)" in text and "within the noise)" in text


def test_scaling_says_at_which_step_c35_was_read_against_the_chapters_1500():
    from types import SimpleNamespace

    def site(*steps):
        by_seed = {run: {1337 + i: {"probes_last": {"step": step}} for i, step in enumerate(steps)}
                   for run in scaling_derive.C35_RUNS}
        return SimpleNamespace(res=SimpleNamespace(by_seed=by_seed))

    assert "step 1500: the chapter's own step" in scaling.c35_step_words(scaling_derive.c35_steps(site(1500, 1500).res))
    assert "step 800: before the chapter's 1500" in scaling.c35_step_words(scaling_derive.c35_steps(site(800).res))
    assert "not at the chapter's 1500" in scaling.c35_step_words(scaling_derive.c35_steps(site(1500, 2000).res))
    assert scaling.c35_step_words(scaling_derive.c35_steps(SimpleNamespace(by_seed={}))) == ""


@pytest.mark.parametrize("pair,total,readers,n,says", [
    # 39 % of the time for 2 of 60 claims (3.3 %): 12 times their share
    (5954.0, 15305.0, ["C3.4", "C3.5"], 60, "took 5,954 s of this version's 15,305 s of run time (39%), and 2 of its 60 "
                                              "claims (C3.4, C3.5) read them. That is 12 times their share of the "
                                              "claims, out of proportion"),
    # 5 % of the time for 2 of 60 claims: 1.5 times, in proportion
    (500.0, 10000.0, ["C3.4", "C3.5"], 60, "(5%), and 2 of its 60 claims (C3.4, C3.5) read them. That is 1.5 times "
                                            "their share of the claims, not out of proportion"),
])
def test_scaling_says_whether_c35s_pair_costs_out_of_proportion_to_its_claims(pair, total, readers, n, says):
    assert says in scaling.c35_cost_words(pair, total, readers, n)


def test_scaling_says_nothing_of_the_pairs_cost_without_run_times():
    assert scaling.c35_cost_words(0, 100.0, ["C3.5"], 60) == "" and scaling.c35_cost_words(5.0, 0, ["C3.5"], 60) == ""


# ------------------------------------------------------------------ E7 params, E9 equivalence, E1 averaging

def test_params_reads_the_shares_from_the_table():
    e7 = {"width_spec": {"vocab_size": 1024, "context": 128, "tie_embeddings": False}, "widths": [64, 1024],
          "gpt2": {"spec": {"vocab_size": 50257}, "n_blocks": 12, "token_embedding_share": 0.3102},
          "shares": [{"d": 64, "mlp_share": 0.6654, "embedding_share": 0.344},
                     {"d": 1024, "mlp_share": 0.6666, "embedding_share": 0.071}]}
    text = params.shares_reading(e7)
    assert "between 0.6654 and 0.6666" in text and "from 0.344 at d = 64 to 0.071 at d = 1024" in text
    assert "49 times that vocabulary and 12 blocks, has 31.0 % of its parameters" in text
    assert params.widths_words(e7) == "at 2 widths (vocabulary 1024, context 128, untied output layer), d from 64 to 1024"


def test_equivalence_counts_rounding_steps_and_sets_them_against_pytorch():
    t = pd.DataFrame({"mha": [1.49e-7, 0.0], "sdpa": [0.0, 0.0], "torch": [1.49e-7, 0.0], "mean": [0.1, 0.07]})
    assert "1.2 rounding steps" in equivalence.agreement_reading(t) and "no larger than" in equivalence.agreement_reading(t)
    t["mha"] = [6e-7, 0.0]
    assert "4× as large as the largest difference between PyTorch's own two paths" in equivalence.agreement_reading(t)
    t["mha"] = [0.0, 0.0]
    assert "equal PyTorch's exactly" in equivalence.agreement_reading(t)


def test_averaging_counts_rounding_steps():
    assert "1 rounding step of" in averaging.rounding_reading({"shuffle_max_abs_diff": 2.0 ** -23})
    assert "exactly the same" in averaging.rounding_reading({"shuffle_max_abs_diff": 0.0})


# ------------------------------------------------------------------ S6 grouping, S4 multi-head, S5 decode

def test_grouping_compares_each_run_paired_by_seed():
    t = pd.DataFrame([
        {"run": "mha", "kv_heads": 4, "heads": 4, "up": False, "steps": 800, "val_spread": seeds(56.5, 58, 55)},
        {"run": "gqa", "kv_heads": 2, "heads": 4, "up": False, "steps": 800, "val_spread": seeds(57.1, 57.6, 56.8)},
        {"run": "gqa-up", "kv_heads": 2, "heads": 4, "up": True, "steps": 40,
         "val_spread": seeds(58.0, 59.5, 56.6)}])
    text = grouping.cost_reading(t)
    assert "**gqa** against mha" in text and "**gqa-up** against mha" in text and "**gqa-up** against gqa" in text
    assert "**gqa-up** against mha: 58.03 against 56.50, a difference of +1.53 ± 0.14 (k·SE): higher" in text
    assert "**gqa** against mha: 57.17 against 56.50, a difference of +0.67 ± 2.74 (k·SE): within the noise" in text
    assert grouping.uptrain_words(t, 800) == "for 40 steps (5 % of the budget's 800)"


def test_multihead_says_h_moves_the_time_only_beyond_the_noise():
    rows = [{"heads": 1, "ms_median": 9.7, "ms_core_median": 3.7}, {"heads": 16, "ms_median": 13.1, "ms_core_median": 7.0}]
    moved = multihead.time_reading({"rows": rows, "time_ratio_max_min": 1.34, "time_ratio_se": 0.05})
    assert "beyond the noise (slowest at h = 16, fastest at h = 1)" in moved
    assert "within the noise" in multihead.time_reading({"rows": rows, "time_ratio_max_min": 1.04, "time_ratio_se": 0.05})
    assert "states no error" in multihead.time_reading({"rows": rows, "time_ratio_max_min": 1.34})


@pytest.mark.parametrize("ratio, words", [
    (1.34, "inside S4's band of 2×, which \"about the same time\" allows"),
    (2.5, "beyond S4's band of 2×, so not \"about the same time\""),
    (2.02, "on S4's band of 2× within the noise")])
def test_multihead_sets_a_real_change_of_time_against_the_claims_band(ratio, words):
    """S4 reads "about the same time" as at most 2×: a change beyond the noise is still inside it, or not."""
    from attnlab.claims.registry import load_registry
    from attnlab.claims.summary import upper_bound

    rows = [{"heads": 1, "ms_median": 9.7}, {"heads": 16, "ms_median": 13.1}]
    band = upper_bound(load_registry(), "S4", "time_ratio_max_min")
    assert band == 2
    text = multihead.time_reading({"rows": rows, "time_ratio_max_min": ratio, "time_ratio_se": 0.05}, band)
    assert f"; {words}." in text
    assert "band" not in multihead.time_reading({"rows": rows, "time_ratio_max_min": ratio})  # no error: no side


def test_decode_says_faster_and_growing_only_beyond_the_noise():
    r = {"settings": {"lengths": [32, 128]}, "speedup_at_longest": {"chapter/4": 2.05, "wide/1": 1.02},
         "speedup_se_at_longest": {"chapter/4": 0.1, "wide/1": 0.1},
         "speedup_slope": {"chapter/4": {"slope": 0.5, "se": 0.1}, "wide/1": {"slope": 0.05, "se": 0.1}}}
    text = decode.reading(r)
    assert "chapter model with 4 kv heads ×2.05 ± 0.20 (k·SE), faster with the cache" in text
    assert "wide model with 1 kv head ×1.02 ± 0.20 (k·SE), no faster within the noise" in text
    assert "0.50 ± 0.20 (k·SE), grows with length" in text and "0.05 ± 0.20 (k·SE), flat within the noise" in text


# ------------------------------------------------------------------ E8 winograd, S1 seq2seq, S8 approximation

def test_winograd_says_a_side_of_chance_only_beyond_the_noise():
    def model(acc):
        return {"accuracy": acc, "accuracy_se": 0.02}
    by_seed = {str(s): {"versions": {"closed": {"models": {"average": model(a), "two_blocks": model(1.0)}}}}
               for s, a in zip((1337, 1338, 1339), (0.45, 0.49, 0.42))}
    r = {"versions": {"closed": {"models": {"average": {}, "two_blocks": {}}}}, "by_seed": by_seed}
    text = winograd.chance_reading(r)
    assert "uniform average 0.453 ± " in text and "at chance within the noise" in text and "two blocks 1.000" in text
    assert "above chance" in text
    for s, a in zip(by_seed, (0.28, 0.27, 0.29)):
        by_seed[s]["versions"]["closed"]["models"]["average"] = model(a)
    assert "below chance" in winograd.chance_reading(r)


def test_seq2seq_says_a_fall_and_a_gain_only_beyond_the_noise():
    drop = {"mean": 0.44, "se": 0.007, "se_from": "held-out rows", "seeds": 3}
    gain = {"mean": 0.75, "se": 0.02, "se_from": "seeds", "seeds": 3}
    small = {"mean": 0.01, "se": 0.02, "se_from": "seeds", "seeds": 3}
    summary = [{"task": "copy", "source_length": n, "variant": "none", "token_accuracy": a} for n, a in ((8, 0.57), (32, 0.13))]
    r = {"summary": summary, "contrasts": {"shortest": 8, "longest": 32, "largest_drop_share": None, "tasks": {
        "copy": {"none_drop": drop, "gain_at_longest": {"dot": gain, "general": small},
                 "drop": {"dot": {**gain, "mean": 0.1}, "general": small}}}}}
    text = seq2seq.reading(r)
    assert "(paired change -0.440 ± 0.014 (k·SE), 95 %, error from the held-out rows: a fall)" in text
    assert "Luong dot +0.750 ± 0.086 (k·SE) (higher)" in text and "Luong general +0.010 ± 0.086 (k·SE) (within the noise)" in text
    assert "a fall beyond the noise for 1 of 2" in text


def test_seq2seq_says_which_wiring_is_ahead_only_beyond_the_noise():
    """Bahdanau's additive against Luong's concat, paired by seed: a direction on each side where the interval
    clears zero, 'within the noise' where it holds it; a version from before the wirings says it has none."""
    def result(*means):
        wiring = [{"task": "copy", "source_length": S, "luong": "concat",
                   "difference": {"mean": m, "se": 0.01, "se_from": "seeds", "seeds": 3}}
                  for S, m in zip((8, 16, 32), means)]
        summary = [{"task": "copy", "source_length": S, "variant": v, "token_accuracy": 0.5}
                   for S in (8, 16, 32) for v in ("bahdanau", "concat")]
        return {"wirings": {"bahdanau": "bahdanau", "concat": "luong"}, "summary": summary,
                "contrasts": {"wiring": wiring}}

    r = result(0.2, -0.2, 0.01)
    text = seq2seq.wiring_reading(r)
    assert "at length 8 0.500 against 0.500, +0.200 ± 0.043 (k·SE) (Bahdanau's wiring higher)" in text
    assert "at length 16 0.500 against 0.500, -0.200 ± 0.043 (k·SE) (Luong's wiring higher)" in text
    assert "+0.010 ± 0.043 (k·SE) (within the noise)" in text and "beyond the noise at 2 of 3 lengths" in text
    table = seq2seq.wiring_table(r)
    assert table.count("Bahdanau's higher") == 1 and table.count("Luong's higher") == 1 and "within the noise" in table
    r["contrasts"]["wiring"][0]["difference"] = {"status": "diverged", "run": "seq2seq x", "diverged_at_step": 3}
    assert "a run diverged or is missing" in seq2seq.wiring_table(r)
    old = {k: v for k, v in r.items() if k != "wirings"}
    assert "predates Bahdanau's wiring" in seq2seq.wiring_table(old) and seq2seq.wiring_reading(old) == ""
    assert seq2seq.names(old)["bahdanau"] == "additive (in Luong's wiring)"
    assert "without input feeding (this version predates" in seq2seq.wirings_said(old)


def test_approximation_says_whether_the_largest_window_covers_the_context():
    assert "stops short of the 128 tokens" in approximation.coverage(64, 4, 128)
    assert "covers the 128 tokens L9 reads, so there it is exact" in approximation.coverage(124, 4, 128)


def unseeded_site(files: dict, runs: dict | None = None):
    from pathlib import Path

    from attnlab.results import Results
    return SimpleNamespace(config={"seeds": [1, 2, 3]}, res=Results(root=Path("."), files=files, by_seed=runs or {}))


def unseeded(cid: str, kind: str = "measured", verdict: str = "reproduced", files=("seq2seq",), rows=()) -> Verdict:
    return Verdict(SimpleNamespace(id=cid, experiment="seq2seq", kind=kind, files=set(files), rows=set(rows),
                                   ours=False), verdict)


@pytest.mark.parametrize("seq2seq, pooled", [
    ({"settings": {"seeds": [1, 2, 3]}, "provenance": {"seed": 1}}, True),   # an analysis that trained at 3 seeds
    ({"by_seed": {"1": {}, "2": {}}, "provenance": {"seed": 1}}, True),      # one that records each seed's entry
    ({"settings": {"seeds": [1]}, "provenance": {"seed": 1}}, False),        # at one seed
    ({"provenance": {"seed": 7}}, False),                                    # a benchmark, made once
])
def test_the_claims_no_seed_alone_judged_are_counted_by_why_from_what_their_files_record(seq2seq, pooled):
    """'The other N claims': computed ones apart, a claim on a file that pooled several seeds is said to, one on a
    file made once at one seed names that seed, one with no value says so; counts and members are computed."""
    site = unseeded_site({"seq2seq": seq2seq})
    text = dashboard.unseeded(site, [unseeded("S1.1"), unseeded("C0.1", kind="computed"),
                                     unseeded("C6.3", verdict="not run")])
    assert text.startswith("The other 3 claims are not judged seed by seed")
    assert "**1** computed (counts and arithmetic), which no seed moves: [C0.1]" in text
    assert "**1** with no value to judge (not run, or diverged): [C6.3]" in text
    s11 = next(line for line in text.splitlines() if "[S1.1]" in line)
    if pooled:
        n = len(seq2seq.get("by_seed") or seq2seq["settings"]["seeds"])
        assert f"trained its models at {n} seeds and states only their mean" in s11
    else:
        assert f"made once, at one seed ({seq2seq['provenance']['seed']})" in s11 and "states only" not in s11


def test_a_claim_on_trained_runs_of_one_seed_is_counted_with_the_runs_made_once():
    site = unseeded_site({}, runs={"L1": {1337: {}}})
    text = dashboard.unseeded(site, [unseeded("C2.1", files=(), rows=("L1",))])
    assert "**1** from run files made once, at one seed (1337): [C2.1]" in text


# ------------------------------------------------------------------ S8: what a window's error is

@pytest.mark.parametrize("errors, above", [([3.23, 1.24, 0.523], "2 of 3 lie above 1"), ([1.24, 0.5], "1 of 2 lies above 1"),
                                           ([0.711, 0.104], None)])
def test_a_windows_error_is_said_as_measured_and_its_size_from_the_numbers(errors, above):
    """Not 'the weight the dropped keys would have had' beside errors of 1.24–3.23: the words say what is measured,
    and the range and the count above 1 come from the errors."""
    text = cost.window_error_words(errors, " (on both)")
    assert "‖approx − exact‖ / ‖exact‖" in text and "not the dropped weight" in text
    assert f"errors (on both) run from {min(errors):.3g} to {max(errors):.3g}" in text
    assert (above in text) if above else text.endswith("all below 1.")
    assert cost.window_error_words([]) == cost.WINDOW_ERROR


# ------------------------------------------------------------------ S10: where the ICL score reads the loss

@pytest.mark.parametrize("ours, early, late", [
    ([0.1, 0.9], "the early position the same as the paper's to two decimals (0.1 against 0.098)",
     "the late one earlier (0.9 against 0.977)"),
    ([50 / 512, 500 / 512], "the early position the same as the paper's", "the late one the same as the paper's"),
    ([0.05, 0.99], "the early position earlier (0.05 against 0.098)", "the late one later (0.99 against 0.977)"),
])
def test_the_icl_positions_are_set_against_the_papers_from_the_run_file(ours, early, late):
    """Not 'the same fractions of the context': 0.1 and 0.9 against 50/512 and 500/512, each said as it lies."""
    from attnlab.experiments.induction import page as induction

    text = induction.icl_positions_words(ours)
    assert "token 500 minus token 50 of 512, at 0.098 and 0.977" in text and early in text and late in text
    assert "not recorded" in induction.icl_positions_words(None)


# ------------------------------------------------------------------ E8: the binomial error's floor

@pytest.mark.parametrize("accuracy, noted", [(1.0, True), (0.0, True), (0.99, False), (0.5, False)])
def test_winograd_says_the_error_at_0_or_100_per_cent_is_a_floor_only_there(accuracy, noted):
    """'± 2 SE' on a 100 % bar is 1/n put in place of a binomial error of 0: said, with the count, only at the ends."""
    n = 256
    se = math.sqrt(max(accuracy * (1 - accuracy), 1 / n) / n)
    rows = pd.DataFrame([{"version": winograd.VERSIONS["closed"], "model": "two blocks", "accuracy": accuracy,
                          "accuracy_se": se, "n": n}])
    note = winograd.floor_note(rows)
    if noted:
        assert f"the two blocks on the closed version, {100 * accuracy:.0f} % of 256 sentences" in note
        assert "(± 2 SE shown: 0.8 %, i.e. 2/256)" in note and "not a spread that was measured" in note
    else:
        assert note == ""
    assert winograd.floor_note(rows.drop(columns="n")) == ""  # a run file that records no count says nothing


# ------------------------------------------------------------------ S8 trained: the sign of the gap, counted

@pytest.mark.parametrize("ratio, said", [(0.90, "1 of 1 below full attention's perplexity"), (1.10, "1 of 1 above it"),
                                         (1.00, "1 of 1 level with it within the noise")])
def test_the_tally_counts_each_approximation_on_its_side_of_full_attention(ratio, said):
    """'Every ratio above 1 is quality paid' sat beside windows that trained better than full attention: the
    tally says, from each run's interval, which side of 1 it lies."""
    from attnlab.experiments.approximate_training import page as at

    t = pd.DataFrame([{"run": at.FULL, "family": "full attention", "estimate": None},
                      {"run": "S8-w16", "family": "sliding window", "estimate": Estimate(ratio, 0.01, 2)},
                      {"run": "S8-favor32", "family": "FAVOR+", "estimate": Estimate(1.07, 0.01, 2)}])
    text = at.tally(t)
    assert f"sliding window, {said}" in text and "FAVOR+, 1 of 1 above it" in text


# ------------------------------------------------------------------ How verdicts work: which error is the larger

@pytest.mark.parametrize("dominant", ["seeds", "sampling", "both"])
def test_about_counts_which_error_source_dominates_from_the_verdicts(dominant):
    """'Between seeds it moves more than the evaluation's sampling error' was said of every claim; the page now
    counts, part by part, which source dominates its error (Part.dominant), over the claims read at several seeds."""
    from attnlab.report.pages import about

    part = Part("x", "measured", 1.0, "reproduced", se=0.1, k=2.0, df=2, dominant=dominant)
    v = Verdict(SimpleNamespace(id="C9.9"), "reproduced", seeds={1: 1.0, 2: 1.1, 3: 0.9}, parts={"x": part})
    text = about.larger_source([v, Verdict(SimpleNamespace(id="C9.8"), "reproduced", parts={"x": part})])
    n = {k: int(k == dominant) for k in ("seeds", "sampling", "both")}
    assert (f"of the 1 part judged on a mean over seeds, the seeds' spread dominates the error of {n['seeds']}, the "
            f"evaluation's sampling error (or the error the run file states) that of {n['sampling']}, and neither "
            f"that of {n['both']} (a source dominates when it holds at least 66.67 % of the variance).") in text
    assert about.larger_source([]) == ""


@pytest.mark.parametrize("tie, said", [(True, "output layer tied to the token embeddings"), (False, "output layer untied")])
def test_params_describes_gpt2_small_from_the_spec_it_built(tie, said):
    spec = {"vocab_size": 50257, "d_model": 768, "context": 1024, "n_blocks": 12, "n_heads": 12,
            "position": "learned", "norm": "pre", "tie_embeddings": tie}
    assert params.gpt2_words(spec) == ("vocabulary 50,257, d = 768, context 1024, 12 blocks of 12 heads, learned "
                                       f"positions, pre-norm, {said}")
    assert "6 blocks of 8 heads" in params.gpt2_words(spec | {"n_blocks": 6, "n_heads": 8})


@pytest.mark.parametrize("T", [6, 9])
def test_averaging_says_the_sequence_length_its_run_file_used(tmp_path, T):
    """'A random sequence of T = 6 vectors' was typed: the page reads T from the run file."""
    import json

    from attnlab.config import load
    from helpers import rendered_page, site_for

    src = REPO / "results" / "2026-12-02-quick-cpu-4303899" / "averaging" / "result.json"
    (tmp_path / "averaging").mkdir()
    doc = json.loads(src.read_text()) | {"T": T}
    (tmp_path / "averaging" / "result.json").write_text(json.dumps(doc))
    text = rendered_page(site_for(tmp_path, load(REPO / "config" / "quick.yaml")), "averaging", averaging.blocks)
    assert f"A random sequence `x` of T = {T} vectors" in text
