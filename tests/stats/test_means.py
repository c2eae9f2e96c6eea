"""Metric means and differences against scipy, their p/interval agreement, and coverage.

Oracles: ``scipy.stats.ttest_1samp`` / ``ttest_rel`` / ``ttest_ind(equal_var=False)`` (p-values
and ``confidence_interval``) and ``scipy.stats.bootstrap(method="BCa")``; coverage by small
seeded simulation with a known mean (the big grid is ``bench/bench_metrics.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evalband.errors import InvalidInputError
from evalband.stats._means import (
    bca_mean_difference,
    mean_interval,
    paired_mean_difference,
    skewness,
    t_mean_difference,
    welch_mean_difference,
)


@pytest.mark.parametrize("seed", range(4))
def test_paired_t_is_scipy_ttest_rel(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=25), rng.normal(0.3, size=25)
    ours = t_mean_difference(a - b)
    ref = stats.ttest_rel(a, b)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    for c in (0.8, 0.95, 0.99):
        lo, hi = ref.confidence_interval(c)
        got = ours.interval_at(c)
        assert (got.low, got.high) == pytest.approx((lo, hi), rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_welch_is_scipy_ttest_ind_unequal_variances(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(1.0, 2.0, size=13), rng.normal(0.0, 0.5, size=31)
    ours = welch_mean_difference(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    lo, hi = ref.confidence_interval(0.9)
    assert (ours.interval_at(0.9).low, ours.interval_at(0.9).high) == pytest.approx(
        (lo, hi), rel=1e-9)


def test_skewness_is_scipy_skew() -> None:
    x = np.random.default_rng(0).lognormal(size=40)
    assert skewness(x) == pytest.approx(float(stats.skew(x)), rel=1e-12)


def test_one_run_t_interval_is_scipy_t() -> None:
    x = np.random.default_rng(1).normal(3.0, 2.0, size=17)
    got = mean_interval(x, bounded=False, confidence=0.9)
    lo, hi = stats.ttest_1samp(x, 0.0).confidence_interval(0.9)
    assert (got.method, got.low, got.high) == ("student-t", pytest.approx(lo),
                                               pytest.approx(hi))


@pytest.mark.parametrize("seed", range(3))
def test_bca_difference_is_scipy_bca_up_to_resampling(seed: int) -> None:
    d = np.random.default_rng(seed).lognormal(0.0, 1.0, size=30) - 1.0
    ours = bca_mean_difference(d, seed=seed, reps=40_000).interval_at(0.95)
    ref = stats.bootstrap((d,), np.mean, method="BCa", n_resamples=40_000,
                          random_state=np.random.default_rng(seed + 100)).confidence_interval
    spread = d.std() / np.sqrt(d.size)
    assert ours.low == pytest.approx(ref.low, abs=0.05 * spread)
    assert ours.high == pytest.approx(ref.high, abs=0.05 * spread)


def test_bounded_interval_is_the_bootstrap_t_and_stays_in_the_bounds() -> None:
    """Against the textbook recipe: resample, studentise, take the percentiles (another seed;
    a resample of 25 beta values hardly ever has 1/25 of their variance: the floor is idle)."""
    x = np.random.default_rng(2).beta(0.4, 3.0, size=25)
    got = mean_interval(x, bounded=True, seed=0, reps=40_000)
    t_half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    assert got.high - x.mean() > t_half > x.mean() - got.low  # follows the skew, unlike t
    rng = np.random.default_rng(9)
    se = x.std(ddof=1) / np.sqrt(x.size)
    r = rng.choice(x, size=(40_000, x.size))  # 40,000 resamples, each studentised
    ts = (r.mean(axis=1) - x.mean()) / (r.std(axis=1, ddof=1) / np.sqrt(x.size))
    lo_t, hi_t = np.percentile(ts, [2.5, 97.5])
    assert got.method == "bootstrap-t" and 0.0 <= got.low < got.high <= 1.0
    assert (got.low, got.high) == pytest.approx(
        (x.mean() - hi_t * se, x.mean() - lo_t * se), abs=0.15 * se)  # two seeds' noise


@pytest.mark.parametrize("seed", range(6))
def test_bca_p_value_and_interval_never_disagree(seed: int) -> None:
    """The interval at ``1 - level`` excludes 0 exactly when ``p <= level`` (any level)."""
    rng = np.random.default_rng(seed)
    d = rng.exponential(1.0, size=int(rng.integers(8, 60))) - rng.uniform(0.4, 1.4)
    diff = bca_mean_difference(d, seed=seed)
    for level in [*np.linspace(0.001, 0.6, 40), diff.p_value, diff.p_value * 0.999]:
        if not 0.0 < level < 1.0:
            continue
        i = diff.interval_at(1.0 - level)
        assert (i.low > 0 or i.high < 0) == (diff.p_value <= 1.0 - (1.0 - level)), level


def test_paired_chooses_t_unless_the_differences_are_skewed() -> None:
    rng = np.random.default_rng(3)
    b = rng.normal(size=40)
    assert paired_mean_difference(b + rng.normal(size=40), b, seed=0).method == "paired-t"
    skewed = paired_mean_difference(b + rng.lognormal(0, 1.2, size=40), b, seed=0)
    assert skewed.method == "paired-bootstrap-bca"


def test_bad_inputs_say_what_was_expected() -> None:
    with pytest.raises(InvalidInputError, match="in pairs"):
        paired_mean_difference([1.0, 2.0], [1.0], seed=0)
    with pytest.raises(InvalidInputError, match="at least 2"):
        welch_mean_difference([1.0], [1.0, 2.0])
    with pytest.raises(InvalidInputError, match="finite"):
        t_mean_difference([1.0, float("nan")])


def _coverage(draw, truth: float, reps: int, seed: int) -> float:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        hits += draw(rng).contains(truth)
    return hits / reps


@pytest.mark.parametrize("n", [20, 60])
def test_paired_intervals_reach_their_coverage_on_skewed_differences(n: int) -> None:
    """Skewed (gamma, shape 2) differences: the chosen interval (BCa) covers ~95%.

    400 seeded draws: a binomial 99.9% lower bound under 95% coverage is ~0.915, so the test
    fails if the interval's coverage is really below about 0.92 (measured in the bench).
    """
    truth = 0.0

    def draw(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        base = rng.normal(size=n)
        cand = base + rng.gamma(2.0, 1.0, size=n) - 2.0
        d = paired_mean_difference(cand, base, seed=rng, reps=1999)
        return d.interval_at(0.95)

    cover = _coverage(lambda rng: _Contains(draw(rng)), truth, 400, seed=n)
    assert cover >= 0.90, cover


@pytest.mark.parametrize("n", [20, 100])
def test_bounded_and_welch_intervals_reach_their_coverage(n: int) -> None:
    rng_truth = 0.4 / (0.4 + 3.0)  # Beta(0.4, 3) mean: skewed against the bound 0
    cover_bounded = _coverage(
        lambda rng: mean_interval(rng.beta(0.4, 3.0, size=n), bounded=True, seed=rng,
                                  reps=999), rng_truth, 300, seed=n)
    cover_welch = _coverage(
        lambda rng: _Contains(welch_mean_difference(rng.gamma(2.0, 1.0, size=n),
                                                    rng.normal(1.0, 3.0, size=n))
                              .interval_at(0.95)), 1.0, 400, seed=n + 1)
    assert cover_bounded >= 0.925, cover_bounded  # bootstrap-t ~96% (bench); BCa was 91.7%
    assert cover_welch >= 0.92, cover_welch


class _Contains:
    """A difference interval read as an interval that contains a value."""

    def __init__(self, d) -> None:  # type: ignore[no-untyped-def]
        self.d = d

    def contains(self, value: float) -> bool:
        return bool(self.d.low <= value <= self.d.high)


def test_a_bounded_metric_keeps_its_difference_within_its_range() -> None:
    """A [0, 1] metric's mean difference lies in [-1, 1]: the t interval is cut there."""
    cand, base = np.array([1.0] * 7 + [0.0]), np.array([0.0] * 7 + [1.0])
    free = t_mean_difference(cand - base)
    cut = paired_mean_difference(cand, base, seed=0, bounded=True)
    assert cut.method == "paired-t" and cut.p_value == pytest.approx(
        stats.ttest_rel(cand, base).pvalue)
    assert free.interval_at(0.95).high > 1.0 and cut.interval_at(0.95).high == 1.0
    welch = welch_mean_difference(cand, base, bounded=True).interval_at(0.99)
    assert -1.0 <= welch.low <= welch.high <= 1.0
