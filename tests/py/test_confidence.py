"""aryl.studies.confidence: Student-t intervals, paired ratios and differences, verdicts."""

import math
import statistics

import numpy as np
import pytest

from aryl.studies import confidence
from aryl.studies.confidence import (
    Estimate,
    difference_interval,
    format_ratio,
    mean_interval,
    ratio_interval,
    reading,
    t_quantile,
    verdict,
)

stats = pytest.importorskip("scipy.stats")


def test_hand_computed_interval():
    # 1..5: mean 3, s = sqrt(2.5), t(4, 0.975) = 2.7764451..., half-width
    # 2.7764451 * 1.5811388 / sqrt(5) = 1.9632432
    e = mean_interval([1, 2, 3, 4, 5])
    assert e.value == 3.0 and e.n == 5
    assert e.low == pytest.approx(3 - 1.9632432, abs=1e-6)
    assert e.high == pytest.approx(3 + 1.9632432, abs=1e-6)


def test_hand_computed_ratio_is_on_the_log_scale():
    # ratios 2 and 8: log-mean log(4), s = log(4) * sqrt(2) / ... ; t(1, .975) = 12.7062
    e = ratio_interval([2.0, 8.0], [1.0, 1.0])
    logs = [math.log(2.0), math.log(8.0)]
    half = 12.706204736 * statistics.stdev(logs) / math.sqrt(2)
    assert e.value == pytest.approx(4.0)  # the geometric mean, not 5
    assert e.low == pytest.approx(4.0 * math.exp(-half), rel=1e-8)
    assert e.high == pytest.approx(4.0 * math.exp(half), rel=1e-8)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 29, 100, 1000, 2.5])
@pytest.mark.parametrize("p", [0.5, 0.6, 0.9, 0.975, 0.995, 0.9995, 0.025])
def test_t_quantile_matches_scipy(p, df):
    assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5, 10, 40])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_mean_interval_matches_scipy_on_random_data(n, level):
    rng = np.random.default_rng(n)
    x = rng.lognormal(3.0, 0.5, size=n)
    e = mean_interval(x, level)
    low, high = stats.t.interval(
        level, n - 1, loc=statistics.fmean(x), scale=stats.sem(x)
    )
    assert e.value == pytest.approx(statistics.fmean(x))
    assert (e.low, e.high) == pytest.approx((low, high), rel=1e-9)


def test_ratio_and_difference_intervals_match_scipy_on_random_data():
    rng = np.random.default_rng(7)
    a, b = rng.uniform(1, 2, size=6), rng.uniform(1, 2, size=6)
    logs = np.log(a / b)
    low, high = stats.t.interval(0.95, 5, loc=logs.mean(), scale=stats.sem(logs))
    r = ratio_interval(a, b)
    assert (r.low, r.high) == pytest.approx((math.exp(low), math.exp(high)))
    # the interval of b / a is the reciprocal of that of a / b
    inverse = ratio_interval(b, a)
    assert (inverse.low, inverse.high) == pytest.approx((1 / r.high, 1 / r.low))
    d = difference_interval(a, b)
    low, high = stats.t.interval(0.95, 5, loc=(a - b).mean(), scale=stats.sem(a - b))
    assert (d.low, d.high) == pytest.approx((low, high))


def test_one_replication_has_no_interval_and_ties_have_a_zero_width_one():
    one = mean_interval([3.0])
    assert one.value == 3.0 and math.isnan(one.low) and math.isnan(one.high)
    tie = ratio_interval([2.0, 2.0, 2.0], [2.0, 2.0, 2.0])
    assert (tie.value, tie.low, tie.high) == (1.0, 1.0, 1.0)


def test_a_ratio_with_a_zero_mean_is_nan():
    assert math.isnan(ratio_interval([1.0, 2.0], [0.0, 1.0]).value)


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="non-empty"):
        mean_interval([])
    with pytest.raises(ValueError, match="level"):
        mean_interval([1.0, 2.0], level=1.0)
    with pytest.raises(ValueError, match="same length"):
        ratio_interval([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="df"):
        t_quantile(0.9, 0)


@pytest.mark.parametrize(
    ("low", "high", "strict", "expected"),
    [
        (-2.0, -1.0, True, "holds"),
        (1.0, 2.0, True, "reversed"),
        (0.0, 0.0, True, "tied"),  # equal in every replication: not "less"
        (0.0, 1.0, True, "not resolved"),
        (0.0, 0.0, False, "holds"),  # but it is "not more"
        (-1.0, 0.0, False, "holds"),
        (-1.0, 1.0, True, "not resolved"),
        (-1.0, 1.0, False, "not resolved"),
        (math.nan, math.nan, True, "not resolved"),
    ],
)
def test_verdict(low, high, strict, expected):
    assert verdict(Estimate((low + high) / 2, low, high, 5), strict) == expected


def test_reading_and_format():
    assert reading(Estimate(1.16, 1.12, 1.20, 5)) == "16.0% faster"
    assert reading(Estimate(0.9, 0.85, 0.95, 5)) == "10.0% slower"
    assert reading(Estimate(1.0, 0.999, 1.001, 5)) == "no detectable gain"
    assert reading(Estimate(0.9999, 0.99985, 0.99995, 5)) == "no gain that matters"
    assert format_ratio(Estimate(1.16, 1.12, 1.2, 5)) == "1.16x [1.12, 1.20]"
    assert format_ratio(Estimate(1.0, 0.9991, 1.0004, 5)) == "1.000x [0.999, 1.000]"
    assert format_ratio(Estimate(1.16, math.nan, math.nan, 1)) == "1.16x"
    assert confidence.LEVEL == 0.95


def test_groups_are_batch_means():
    # windows 0 and 1, two seeds each: the interval is over the two window means
    e = mean_interval([1.0, 3.0, 10.0, 12.0], groups=[0, 0, 1, 1])
    assert e.n == 2
    assert e == mean_interval([2.0, 11.0])
    with pytest.raises(ValueError, match="one label per value"):
        mean_interval([1.0, 2.0], groups=[0])
