"""Medians with exact intervals (evalband.stats._location) against scipy and simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evalband.errors import InvalidInputError
from evalband.stats._location import median_difference, median_interval, order_rank


@pytest.mark.parametrize("n", [6, 10, 20, 37, 50, 200])
def test_order_rank_is_the_binomial_quantile(n: int) -> None:
    """k is the largest with P(B <= k - 1) <= 2.5% (scipy's binom), so coverage >= 95%."""
    k = order_rank(n, 0.95)
    assert stats.binom.cdf(k - 1, n, 0.5) <= 0.025 < stats.binom.cdf(k, n, 0.5)
    assert 1 - 2 * stats.binom.cdf(k - 1, n, 0.5) >= 0.95


def test_the_p_value_is_scipys_sign_test_without_zeros() -> None:
    rng = np.random.default_rng(5)
    for n in (7, 20, 51, 200):
        for shift in (0.0, 0.3, -0.6):
            d = rng.lognormal(0.0, 1.0, n) - 1.0 + shift
            positive = int(np.count_nonzero(d > 0))
            expected = stats.binomtest(positive, n, 0.5).pvalue
            assert median_difference(d).p_value == pytest.approx(expected, rel=1e-9)
            assert median_difference(d).estimate == np.median(d)


def test_zeros_count_against_both_directions_conservatively() -> None:
    d = np.array([0.0] * 6 + [1.0] * 14)
    got = median_difference(d).p_value
    dropped = stats.binomtest(14, 14, 0.5).pvalue  # the sign test that drops the zeros
    assert got >= dropped
    assert got == pytest.approx(min(1.0, 2 * stats.binom.cdf(6, 20, 0.5)))


@pytest.mark.parametrize("seed", range(4))
def test_the_interval_excludes_zero_exactly_when_p_is_at_most_the_level(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = np.round(rng.normal(0.4, 1.0, 30), 1)  # ties and zeros on purpose
    md = median_difference(d)
    for level in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 1 - md.p_value, 1 - md.p_value + 1e-12):
        if not 0 < level < 1:
            continue
        i = md.interval_at(level)
        assert (i.low > 0 or i.high < 0) == (md.p_value <= 1 - level), level


def test_one_run_median_interval_is_the_order_statistics() -> None:
    x = np.arange(1.0, 21.0)[::-1]  # 20 values: k = 6, the 6th and 15th
    i = median_interval(x)
    assert (i.estimate, i.low, i.high) == (10.5, 6.0, 15.0)
    assert median_interval([1.0, 2.0, 3.0]).low == -np.inf  # 3 values cannot reach 95%
    with pytest.raises(InvalidInputError):
        median_interval([])
    with pytest.raises(InvalidInputError):
        median_difference([1.0])


def test_coverage_on_skewed_and_ordinal_data_small_mc() -> None:
    """400 draws each: lognormal (median 1), ordinal levels 0-3 (median 1), n = 20.

    Exact coverage is >= 95.86% (n = 20, k = 6); 400 draws fall below 92.5% with
    probability < 0.001 if it holds, so a wrong order statistic (one step narrower:
    ~88.5%) fails.
    """
    rng = np.random.default_rng(29)
    hits_log = hits_ord = hits_diff = 0
    for _ in range(400):
        x = rng.lognormal(0.0, 1.0, 20)
        i = median_interval(x)
        hits_log += i.low <= 1.0 <= i.high
        o = rng.choice(4, 20, p=[0.3, 0.4, 0.2, 0.1]).astype(float)
        i = median_interval(o)
        hits_ord += i.low <= 1.0 <= i.high
        d = median_difference(rng.lognormal(0.0, 1.0, 20) - 1.0).interval_at(0.95)
        hits_diff += d.low <= 0.0 <= d.high
    assert min(hits_log, hits_ord, hits_diff) >= 370, (hits_log, hits_ord, hits_diff)
