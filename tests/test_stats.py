"""The shared statistics: a mean, a fraction, a fitted line and a bootstrap, each with its standard error."""
from __future__ import annotations

import math
import random
import statistics

import pytest

from attnlab.stats import binomial_se, bootstrap_se, fit_line, log_fit, mean_se, paired_gap_se, se_median_ratio


def test_mean_se_is_sd_over_root_n():
    mean, se = mean_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and se == pytest.approx(statistics.stdev([1, 2, 3, 4]) / 2)
    assert mean_se([5.0]) == (5.0, 0.0)


def test_binomial_se_is_the_spread_of_a_fraction_and_keeps_an_error_at_zero():
    rng = random.Random(2)
    fractions = [sum(rng.random() < 0.3 for _ in range(400)) / 400 for _ in range(2000)]
    assert binomial_se(0.3, 400) == pytest.approx(statistics.stdev(fractions), rel=0.05)
    assert binomial_se(0.3, 400) == pytest.approx(math.sqrt(0.3 * 0.7 / 400), rel=0.01)
    # none of 2,000: an error near the exact 95 % bound's 3/n over 1.96, not a zero-width interval
    assert binomial_se(0.0, 2000) == pytest.approx(3 / 2000 / 1.96, rel=0.1)
    assert binomial_se(1.0, 2000) == pytest.approx(binomial_se(0.0, 2000))


def test_fit_line_recovers_a_slope_and_its_error_shrinks_with_less_noise():
    rng = random.Random(0)
    xs = [float(x) for x in range(20)]
    noisy = fit_line(xs, [1 + 0.5 * x + rng.gauss(0, 1.0) for x in xs])
    quiet = fit_line(xs, [1 + 0.5 * x + rng.gauss(0, 0.01) for x in xs])
    assert abs(noisy["slope"] - 0.5) < 3 * noisy["se"]
    assert quiet["se"] < noisy["se"] / 10
    assert fit_line([0.0, 1.0, 2.0], [0.0, 2.0, 4.0]) == {"slope": 2.0, "se": 0.0, "intercept": 0.0, "n": 3}
    assert fit_line([0.0, 1.0], [0.0, 1.0])["se"] is None  # two points: no residuals to judge by


def test_log_fit_is_a_power_laws_exponent_over_the_last_positive_points():
    fit = log_fit([1, 2, 4, 8, 16], [99, 4, 16, 64, 256], last=4)  # y = n²; the first point is left out
    assert fit["slope"] == pytest.approx(2.0) and fit["se"] == pytest.approx(0.0, abs=1e-12) and fit["n"] == 4
    assert log_fit([1, 2, 4, 8], [1, 2, 4, 8])["n"] == 4 and log_fit([1, 2, 4], [3, 0, None]) is None
    assert log_fit([1, 2, 4, 8], [2, 0, 8, 32], last=2)["slope"] == pytest.approx(2.0)  # the zero does not count


def test_bootstrap_se_of_a_mean_is_near_the_formula_and_keeps_rounds_paired():
    rng = random.Random(1)
    xs = [rng.gauss(0, 1) for _ in range(200)]
    se = bootstrap_se({"a": xs}, lambda r: sum(r["a"]) / len(r["a"]))
    assert se == pytest.approx(statistics.stdev(xs) / math.sqrt(200), rel=0.2)
    # b is a + 1 in every round: a paired difference has no spread, however noisy a is
    paired = bootstrap_se({"a": xs, "b": [x + 1 for x in xs]}, lambda r: sum(r["b"]) - sum(r["a"]))
    assert paired == pytest.approx(0.0, abs=1e-9)


def agresti_min(n11, n10, n01, n00):
    """The paired gap's error from its 2 x 2 table (right under both, the first only, the second only, neither),
    half an example added to each cell: the difference of the discordant shares over n + 2."""
    m = n11 + n10 + n01 + n00 + 2
    b, c = (n10 + 0.5) / m, (n01 + 0.5) / m
    return math.sqrt((b + c - (b - c) ** 2) / m)


def test_a_paired_gap_of_two_accuracies_has_the_agresti_min_error_and_a_gap_of_zero_keeps_one():
    assert paired_gap_se(49 / 64, 6 / 64, 64, both=6 / 64) == pytest.approx(agresti_min(6, 43, 0, 15))
    assert paired_gap_se(0.5, 0.5, 20, both=0.25) == pytest.approx(agresti_min(5, 5, 5, 5))
    # each example the same under both (here all wrong): the gap is 0, its error not
    zero = paired_gap_se(0.0, 0.0, 8, both=0.0)
    assert zero == pytest.approx(agresti_min(0, 0, 0, 8)) and zero > 0.05
    # with many examples, near the plain error of the mean of the per-example differences
    d = [1] * 430 + [0] * 570
    assert paired_gap_se(0.43, 0.0, 1000, both=0.0) == pytest.approx(mean_se(d)[1], rel=0.01)


@pytest.mark.parametrize("n, right_p, right_q", [(64, 49, 6), (10, 9, 8), (20, 10, 10)])
def test_without_the_pairing_the_gaps_error_is_the_largest_any_pairing_gives(n, right_p, right_q):
    """Two accuracies on the same n examples, every way the examples right under both could fall: the error with
    the pairing unknown is the largest, reached by the pairing with the fewest examples right under both."""
    unknown = paired_gap_se(right_p / n, right_q / n, n)
    errors = [paired_gap_se(right_p / n, right_q / n, n, both / n)
              for both in range(max(0, right_p + right_q - n), min(right_p, right_q) + 1)]
    assert max(errors) == pytest.approx(unknown) == errors[0] and min(errors) < unknown


def test_a_ratio_of_medians_is_bootstrapped_over_paired_examples():
    rng = random.Random(2)
    a, b = [rng.uniform(0, 1) for _ in range(60)], [rng.uniform(0, 1) for _ in range(60)]
    assert se_median_ratio(a, [2 * x for x in a]) == pytest.approx(0.0, abs=1e-12)  # paired: 1/2 in every draw
    assert 0.02 < se_median_ratio(a, b) < 0.5
    # an example without a value drops out of its median; the floor keeps a median of zero from dividing
    a[3], b[5] = None, None
    assert se_median_ratio(a, [0.0 if x is not None else None for x in b], floor=0.5) > 0
    with pytest.raises(ZeroDivisionError):
        se_median_ratio([1.0, 2.0], [0.0, 0.0])
