"""Tests for evalband.stats._intervals: one-proportion confidence intervals.

Oracles: published worked examples (Brown, Cai & DasGupta 2001; Newcombe 1998 Table II;
the seed documents), statsmodels' ``proportion_confint`` (property tests), and the beta
quantile formula written out with scipy.stats where statsmodels' edge convention differs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalband.errors import InvalidCountsError, InvalidParameterError
from evalband.stats import Interval, interval, interval_bounds, intervals
from evalband.stats._intervals import INTERVAL_METHODS

STATSMODELS_NAME = {
    "wilson": "wilson",
    "clopper-pearson": "beta",
    "jeffreys": "jeffreys",
    "agresti-coull": "agresti_coull",
    "wald": "normal",
}


# ----------------------------------------------------------------- published values


def test_wilson_zero_of_ten_matches_brown_cai_dasgupta() -> None:
    # Brown, Cai & DasGupta (2001), Statistical Science 16:101-133; quoted in seed 000
    # (PushT harness self-check): Wilson 95% for 0/10 is [0, 0.2775].
    ci = interval(0, 10)
    assert ci.low == 0.0
    assert ci.high == pytest.approx(0.2775, abs=1e-4)


def test_wilson_pooled_strong_policy_seed_000() -> None:
    # Seed 000 ("Two roads, one band"): 45/200 pooled strong policy, Wilson [0.173, 0.288].
    ci = interval(45, 200)
    assert ci.estimate == 0.225
    assert ci.low == pytest.approx(0.173, abs=5e-4)
    assert ci.high == pytest.approx(0.288, abs=5e-4)


@pytest.mark.parametrize(
    ("k", "low_pct", "high_pct"),
    [
        # Seed 002 (reaching lab), expected output: baseline 9/64 and damped 50/64.
        (9, 7.578573, 24.616282),
        (50, 66.567216, 86.497681),
    ],
)
def test_wilson_reaching_lab_seed_002(k: int, low_pct: float, high_pct: float) -> None:
    ci = interval(k, 64, "wilson", 0.95)
    assert 100 * ci.low == pytest.approx(low_pct, abs=5e-7)
    assert 100 * ci.high == pytest.approx(high_pct, abs=5e-7)


@pytest.mark.parametrize(
    ("k", "n", "method", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, Table II; method 1 (Wald),
        # method 3 (Wilson score), method 5 (Clopper-Pearson "exact"); 4 decimals.
        (81, 263, "wald", 0.2522, 0.3638),
        (15, 148, "wald", 0.0527, 0.1500),
        (0, 20, "wald", 0.0, 0.0),
        (81, 263, "wilson", 0.2553, 0.3662),
        (15, 148, "wilson", 0.0624, 0.1605),
        (0, 20, "wilson", 0.0, 0.1611),
        (1, 29, "wilson", 0.0061, 0.1718),
        (81, 263, "clopper-pearson", 0.2527, 0.3676),
        (15, 148, "clopper-pearson", 0.0578, 0.1617),
        (0, 20, "clopper-pearson", 0.0, 0.1684),
        (1, 29, "clopper-pearson", 0.0009, 0.1776),
    ],
)
def test_newcombe_1998_table_ii(k: int, n: int, method: str, low: float, high: float) -> None:
    ci = interval(k, n, method)
    assert ci.low == pytest.approx(low, abs=5e-5)
    assert ci.high == pytest.approx(high, abs=5e-5)


def test_wald_is_clipped_where_newcombe_shows_it_overshooting() -> None:
    # Newcombe (1998) Table II: Wald for 1/29 gives a negative lower limit (-0.0301);
    # ours is clipped to [0, 1].
    ci = interval(1, 29, "wald")
    assert ci.low == 0.0
    assert ci.high == pytest.approx(0.1009, abs=5e-5)


# ------------------------------------------------------------ statsmodels as oracle


@st.composite
def counts_and_confidence(draw: st.DrawFn) -> tuple[int, int, float]:
    n = draw(st.integers(min_value=1, max_value=2000))
    k = draw(st.integers(min_value=0, max_value=n))
    confidence = draw(st.floats(min_value=0.5, max_value=0.999))
    return k, n, confidence


@pytest.mark.parametrize("method", INTERVAL_METHODS)
@settings(max_examples=150, deadline=None)
@given(case=counts_and_confidence())
def test_agrees_with_statsmodels(method: str, case: tuple[int, int, float]) -> None:
    k, n, confidence = case
    ours = interval(k, n, method, confidence)
    low, high = proportion_confint(k, n, alpha=1 - confidence, method=STATSMODELS_NAME[method])
    # statsmodels applies no Brown-Cai-DasGupta boundary convention for Jeffreys and
    # does not clip beta intervals: compare those edge bounds against the formula below.
    if not (method == "jeffreys" and k == 0):
        assert ours.low == pytest.approx(low, abs=1e-9)
    if not (method == "jeffreys" and k == n):
        assert ours.high == pytest.approx(high, abs=1e-9)
    assert 0.0 <= ours.low <= ours.estimate <= ours.high <= 1.0


@pytest.mark.parametrize("n", [1, 2, 7, 40, 500])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_jeffreys_boundary_convention(n: int, confidence: float) -> None:
    # Brown, Cai & DasGupta (2001), section 4.1.2: lower bound 0 at k = 0, upper 1 at k = n;
    # the other bound is the Beta(k + 1/2, n - k + 1/2) quantile.
    tail = (1 - confidence) / 2
    at_zero = interval(0, n, "jeffreys", confidence)
    assert at_zero.low == 0.0
    assert at_zero.high == pytest.approx(stats.beta.ppf(1 - tail, 0.5, n + 0.5), abs=1e-12)
    at_n = interval(n, n, "jeffreys", confidence)
    assert at_n.high == 1.0
    assert at_n.low == pytest.approx(stats.beta.ppf(tail, n + 0.5, 0.5), abs=1e-12)
    # statsmodels' Jeffreys does not apply the convention: its bounds are strictly inside.
    sm_low, _ = proportion_confint(0, n, alpha=1 - confidence, method="jeffreys")
    assert sm_low > 0.0


@pytest.mark.parametrize("n", [1, 10, 20, 64, 1000, 99_999])
def test_wilson_edges_are_exact(n: int) -> None:
    # Wilson (1927): (k + z^2/2 -+ z sqrt(k(n-k)/n + z^2/4)) / (n + z^2) is exactly 0 at
    # k = 0 and exactly 1 at k = n. statsmodels' center-minus-half form rounds (e.g. upper
    # 1 - 2**-53 at 20/20, lower 2e-19 at 0/1000); ours returns the exact values, which
    # matters when the coverage audit asks whether p = 0 or p = 1 is covered.
    assert interval(0, n).low == 0.0
    assert interval(n, n).high == 1.0
    sm_low, _ = proportion_confint(0, n, method="wilson")
    _, sm_high = proportion_confint(n, n, method="wilson")
    assert sm_low == pytest.approx(0.0, abs=1e-15)
    assert sm_high == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("method", INTERVAL_METHODS)
@pytest.mark.parametrize("n", [1, 5, 64, 333])
def test_vectorised_bounds_match_scalar_interval(method: str, n: int) -> None:
    ks = np.arange(n + 1)
    low, high = interval_bounds(ks, n, method, 0.9)
    assert low.shape == high.shape == ks.shape
    for k in (0, n // 3, n // 2, n):
        ci = interval(int(k), n, method, 0.9)
        assert (low[k], high[k]) == (ci.low, ci.high)
    sm_low, sm_high = proportion_confint(ks, n, alpha=0.1, method=STATSMODELS_NAME[method])
    inner = slice(1, n) if method == "jeffreys" else slice(None)
    np.testing.assert_allclose(low[inner], np.asarray(sm_low)[inner], atol=1e-9, rtol=0)
    np.testing.assert_allclose(high[inner], np.asarray(sm_high)[inner], atol=1e-9, rtol=0)


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_bounds_with_an_array_of_n_match_scalar_interval_and_statsmodels(method: str) -> None:
    # One (k, n) per element, as a report's suites, slices and prefixes need them.
    rng = np.random.default_rng(20240607)
    n = rng.integers(1, 400, size=300)
    k = rng.integers(0, n + 1)
    k[:3], n[:3] = (0, 5, 7), (1, 5, 9)  # both edges and an interior pair, always present
    low, high = interval_bounds(k, n, method, 0.9)
    assert low.shape == high.shape == k.shape
    for i in range(0, 300, 7):
        ci = interval(int(k[i]), int(n[i]), method, 0.9)
        assert (low[i], high[i]) == (ci.low, ci.high), (i, k[i], n[i])
    sm_low, sm_high = proportion_confint(k, n, alpha=0.1, method=STATSMODELS_NAME[method])
    inner = (k > 0) & (k < n) if method == "jeffreys" else slice(None)
    np.testing.assert_allclose(low[inner], np.asarray(sm_low)[inner], atol=1e-9, rtol=0)
    np.testing.assert_allclose(high[inner], np.asarray(sm_high)[inner], atol=1e-9, rtol=0)


def test_bounds_broadcast_k_against_n_and_allow_empty_cells() -> None:
    low, high = interval_bounds([[0], [2]], [2, 4])  # k as a column, n as a row
    assert low.shape == (2, 2)
    assert high[1, 0] == 1.0 and low[0, 1] == 0.0
    assert (low[1, 1], high[1, 1]) == (interval(2, 4).low, interval(2, 4).high)
    low, high = interval_bounds([0, 3], [0, 10], allow_empty=True)
    assert (low[0], high[0]) == (0.0, 1.0)
    assert (low[1], high[1]) == (interval(3, 10).low, interval(3, 10).high)


@pytest.mark.parametrize(
    "k, n",
    [([0, 3], [2, 2]), ([0, 0], [0, 2]), ([0, 1], [2, 2.5]), ([0, 1], [2, -1]),
     ([0, 1], [2, math.nan]), ([0, 1], np.array([True, True])), ([0, 1], ["2", "3"])],
)
def test_bad_arrays_of_n_raise(k: object, n: object) -> None:
    with pytest.raises(InvalidCountsError):
        interval_bounds(k, n)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_intervals_equal_one_interval_call_per_count(method: str) -> None:
    rng = np.random.default_rng(7)
    n = rng.integers(1, 120, size=60)
    k = rng.integers(0, n + 1)
    got = intervals(k, n, method, 0.8)
    assert got == [interval(int(a), int(b), method, 0.8) for a, b in zip(k, n, strict=True)]
    assert intervals(k[:5], 200, method) == [interval(int(a), 200, method) for a in k[:5]]
    assert intervals([], 10) == []
    with pytest.raises(InvalidCountsError):
        intervals([[1, 2]], 3)
    with pytest.raises(InvalidCountsError):
        intervals([0, 1], [0, 2])


def test_interval_bounds_keeps_shape_of_k() -> None:
    low, high = interval_bounds([[0, 1], [2, 3]], 3)
    assert low.shape == (2, 2)
    assert high[1, 1] == 1.0


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_intervals_nest_as_confidence_grows(method: str) -> None:
    narrow = interval(7, 30, method, 0.8)
    wide = interval(7, 30, method, 0.99)
    assert wide.low <= narrow.low and narrow.high <= wide.high


def test_wald_collapses_at_zero_successes_wilson_does_not() -> None:
    # The exercise in seed 000: Wald says "0% +- 0%" on 0/20.
    wald = interval(0, 20, "wald")
    assert wald.low == wald.high == 0.0
    assert interval(0, 20, "wilson").high > 0.15


def test_symmetry_k_versus_n_minus_k() -> None:
    for method in INTERVAL_METHODS:
        a = interval(3, 17, method)
        b = interval(14, 17, method)
        assert a.low == pytest.approx(1 - b.high, abs=1e-12)
        assert a.high == pytest.approx(1 - b.low, abs=1e-12)


# -------------------------------------------------------------------- n == 0 and I/O


def test_empty_is_refused_by_default() -> None:
    with pytest.raises(InvalidCountsError, match="allow_empty"):
        interval(0, 0)


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_empty_allowed_gives_vacuous_interval_with_nan_estimate(method: str) -> None:
    ci = interval(0, 0, method, allow_empty=True)
    assert (ci.low, ci.high) == (0.0, 1.0)
    assert math.isnan(ci.estimate)
    assert (ci.k, ci.n) == (0, 0)
    low, high = interval_bounds([0, 0], 0, method, allow_empty=True)
    assert list(low) == [0.0, 0.0] and list(high) == [1.0, 1.0]


def test_result_is_an_interval_and_serialises() -> None:
    ci = interval(9, 64, "Clopper_Pearson", 0.9)
    assert isinstance(ci, Interval)
    assert ci.method == "clopper-pearson"
    assert ci.confidence == 0.9
    payload = json.loads(json.dumps(ci.as_dict()))
    assert payload["k"] == 9 and payload["n"] == 64


def test_integral_floats_are_accepted() -> None:
    assert interval(9.0, 64.0) == interval(9, 64)


# ------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("k", "n"),
    [
        (1.5, 10),
        (-1, 10),
        (11, 10),
        (math.nan, 10),
        (3, math.nan),
        (3, 10.5),
        ("3", 10),
        (True, 10),
        (3, -4),
        (math.inf, 10),
    ],
)
def test_bad_counts_raise(k: object, n: object) -> None:
    with pytest.raises(InvalidCountsError):
        interval(k, n)  # type: ignore[arg-type]


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, math.nan, "0.95", 95])
def test_bad_confidence_raises(confidence: object) -> None:
    with pytest.raises(InvalidParameterError, match="confidence"):
        interval(3, 10, confidence=confidence)  # type: ignore[arg-type]


def test_unknown_method_raises_and_lists_choices() -> None:
    with pytest.raises(InvalidParameterError, match="wilson"):
        interval(3, 10, "bayes")


@pytest.mark.parametrize(
    "k",
    [[0, 1.5], [0, -1], [0, 11], [0, math.nan], np.array([True, False])],
)
def test_bad_count_arrays_raise(k: object) -> None:
    with pytest.raises(InvalidCountsError):
        interval_bounds(k, 10)  # type: ignore[arg-type]


def test_bad_n_in_bounds_raises() -> None:
    with pytest.raises(InvalidCountsError):
        interval_bounds([0, 1], 2.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidCountsError):
        interval_bounds([0], 0)


def test_errors_are_value_errors_for_callers_catching_broadly() -> None:
    with pytest.raises(ValueError):
        interval(5, 4)
