"""Tests for evalband.stats._power: sample size, power, MDD and the price list.

Oracles (never our own output):
- statsmodels.stats.proportion.power_proportions_2indep / samplesize_proportions_2indep_onetail
  (same pooled-null z-test formula: to 1e-9) and NormalIndPower + arcsine effect size (a
  different approximation: a sanity band only);
- published worked examples: Dunn & Clark (2009) for the unpaired formula, the
  Connor (1987) paired example as reproduced by powerandsamplesize.com;
- seed 004 (section 4) price list, with the seed's own rounding ("~");
- brute-force enumeration with scipy.stats.fisher_exact and statsmodels' exact McNemar;
- seeded Monte-Carlo simulation of the actual tests.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import (
    power_proportions_2indep,
    proportion_effectsize,
    samplesize_proportions_2indep_onetail,
)

from evalband.errors import InvalidCountsError, InvalidInputError, InvalidParameterError
from evalband.stats import minimum_detectable_difference, power, price_list, sample_size
from evalband.stats._power import PriceRow, discordant_from_correlation

rate = st.floats(min_value=0.02, max_value=0.98)

# --------------------------------------------------------------------------- seed 004


# Seed 004 (grasp benchmark protocol), section 4, "The price list that follows
# (two-proportion test, 80% power)": 60% vs 40% ~100 per model; a 15-point gap
# (30% vs 45%, section 1) ~170; a 10-point gap ~390; a 5-point gap ~1,550; 46 trials per
# model resolve only ~29-point gaps. The seed rounds ("~"), so the tolerances are bands.
@pytest.mark.parametrize(
    ("p_a", "p_b", "seed_n", "rel_tol"),
    [
        (0.60, 0.40, 100, 0.05),
        (0.45, 0.30, 170, 0.05),
        (0.50, 0.40, 390, 0.02),
        (0.55, 0.45, 390, 0.02),
        (0.45, 0.40, 1550, 0.02),
        (0.50, 0.45, 1550, 0.02),
    ],
)
def test_seed_004_price_list(p_a: float, p_b: float, seed_n: int, rel_tol: float) -> None:
    n = sample_size(p_a, p_b, power=0.8, alpha=0.05)
    assert abs(n - seed_n) / seed_n <= rel_tol
    assert sample_size(p_b, p_a) == n  # the test is two-sided: order does not matter


def test_seed_004_price_list_helper_and_inverse_square_law() -> None:
    rows = price_list([(0.6, 0.4), (0.45, 0.3), (0.5, 0.4), (0.45, 0.4)])
    assert [row.n_a for row in rows] == [
        sample_size(*pair) for pair in [(0.6, 0.4), (0.45, 0.3), (0.5, 0.4), (0.45, 0.4)]
    ]
    for row, seed_n in zip(rows, [100, 170, 390, 1550], strict=True):
        assert isinstance(row, PriceRow)
        assert abs(row.n_a - seed_n) / seed_n <= 0.05
        assert row.n_b == row.n_a and row.total == 2 * row.n_a and not row.paired
    # "required trials grow as 1/gap^2": halving the gap costs about four times as much
    by_gap = price_list(gaps=[0.10, 0.05], baseline=0.45)
    assert 3.9 <= by_gap[1].n_a / by_gap[0].n_a <= 4.1
    assert by_gap[0].p_b == 0.45 and math.isclose(by_gap[0].p_a, 0.55)
    assert math.isclose(by_gap[0].gap, 0.10)


@pytest.mark.parametrize("baseline", [0.4, 0.45, 0.5])
def test_seed_004_46_per_model_resolves_about_29_points(baseline: float) -> None:
    mdd = minimum_detectable_difference(46, baseline, power=0.8, alpha=0.05)
    assert abs(mdd - 0.29) <= 0.02
    # and 46 per arm is indeed about what that gap costs
    assert abs(sample_size(baseline + mdd, baseline) - 46) <= 1


# --------------------------------------------------------------------------- statsmodels


@settings(max_examples=80, deadline=None)
@given(
    p_a=rate,
    p_b=rate,
    n=st.integers(min_value=1, max_value=5000),
    ratio=st.sampled_from([0.25, 0.5, 1.0, 1.5, 3.0]),
    alpha=st.sampled_from([0.01, 0.05, 0.1, 0.2]),
)
def test_unpaired_power_matches_statsmodels(
    p_a: float, p_b: float, n: int, ratio: float, alpha: float
) -> None:
    expected = power_proportions_2indep(
        p_a - p_b, p_b, n, ratio=ratio, alpha=alpha, return_results=False
    )
    assert power(p_a, p_b, n, alpha, ratio=ratio) == pytest.approx(float(expected), abs=1e-9)


@settings(max_examples=80, deadline=None)
@given(
    p_a=rate,
    p_b=rate,
    target=st.sampled_from([0.5, 0.8, 0.9, 0.95]),
    ratio=st.sampled_from([0.5, 1.0, 2.0]),
    alpha=st.sampled_from([0.01, 0.05, 0.1]),
)
def test_unpaired_sample_size_matches_statsmodels(
    p_a: float, p_b: float, target: float, ratio: float, alpha: float
) -> None:
    assume(abs(p_a - p_b) >= 0.01)
    n_float = float(
        samplesize_proportions_2indep_onetail(p_a - p_b, p_b, target, ratio=ratio, alpha=alpha)
    )
    assume(abs(n_float - round(n_float)) > 1e-6)  # rounding up is unambiguous
    assert sample_size(p_a, p_b, target, alpha, ratio=ratio) == max(1, math.ceil(n_float))


@pytest.mark.parametrize(("p_a", "p_b"), [(0.6, 0.4), (0.45, 0.3), (0.5, 0.4), (0.45, 0.4)])
def test_arcsine_approximation_sanity_band(p_a: float, p_b: float) -> None:
    # Cohen's arcsine effect size is a different approximation: close, not identical.
    arcsine = NormalIndPower().solve_power(
        effect_size=proportion_effectsize(p_a, p_b), power=0.8, alpha=0.05, ratio=1.0
    )
    assert abs(sample_size(p_a, p_b) - arcsine) / arcsine <= 0.03


# --------------------------------------------------------------------------- published


def test_dunn_clark_2009_worked_example() -> None:
    # Dunn & Clark, "Basic Statistics: A Primer for the Biomedical Sciences", 4th ed.
    # (Wiley 2009), section 10.7: pi_1 = 0.12, pi_2 = 0.20, two-sided alpha 0.05,
    # power 0.80 -> n = 328.6, "rounded up to n = 329 observations in each treatment group";
    # their approximate continuity correction n + 2/|pi_1 - pi_2| gives 351. Fleiss's
    # exact form of the correction is close to (slightly above) that approximation.
    assert sample_size(0.12, 0.20) == 329
    corrected = sample_size(0.12, 0.20, continuity=True)
    assert 351 <= corrected <= 351 * 1.015


@pytest.mark.parametrize(("alpha", "target"), [(0.05, 0.8), (0.10, 0.9)])
def test_connor_1987_paired_example(alpha: float, target: float) -> None:
    # Connor (1987), Biometrics 43:207-211, p. 209, as reproduced with R code by
    # powerandsamplesize.com ("Compare paired proportions: McNemar's Z-test"):
    # p01 = 0.45, p10 = 0.05 -> 23 pairs, both for two-sided alpha 0.05 / power 0.80 and
    # for one-sided alpha 0.05 / power 0.90 (= two-sided alpha 0.10).
    # Margins with p10 - p01 = p_a - p_b = -0.4 and p10 + p01 = 0.5:
    assert sample_size(0.3, 0.7, target, alpha, paired=True, discordant=0.5) == 23


def test_paired_formula_by_hand_from_cell_probabilities() -> None:
    # Connor (1987): n = (z_{.975} sqrt(psi) + z_{.8} sqrt(psi - delta^2))^2 / delta^2,
    # evaluated here with scipy quantiles for p10 = 0.2, p01 = 0.1.
    psi, delta = 0.3, 0.1
    n = (stats.norm.ppf(0.975) * psi**0.5 + stats.norm.ppf(0.8) * (psi - delta**2) ** 0.5) ** 2
    n /= delta**2
    assert sample_size(0.5, 0.4, paired=True, discordant=0.3) == math.ceil(n)


# --------------------------------------------------------------------------- exact power


def _fisher_power_brute_force(n_a: int, n_b: int, p_a: float, p_b: float, alpha: float) -> float:
    total = 0.0
    for x_a, x_b in itertools.product(range(n_a + 1), range(n_b + 1)):
        p_value = stats.fisher_exact([[x_a, n_a - x_a], [x_b, n_b - x_b]]).pvalue
        if p_value <= alpha:
            total += stats.binom.pmf(x_a, n_a, p_a) * stats.binom.pmf(x_b, n_b, p_b)
    return total


@pytest.mark.parametrize(
    ("n_a", "ratio", "p_a", "p_b", "alpha"),
    [
        (12, 0.75, 0.7, 0.2, 0.05),
        (15, 1.0, 0.6, 0.4, 0.05),
        (10, 2.0, 0.1, 0.5, 0.1),
        (8, 1.0, 0.5, 0.5, 0.05),
    ],
)
def test_fisher_exact_power_matches_brute_force(
    n_a: int, ratio: float, p_a: float, p_b: float, alpha: float
) -> None:
    n_b = int(ratio * n_a)
    expected = _fisher_power_brute_force(n_a, n_b, p_a, p_b, alpha)
    got = power(p_a, p_b, n_a, alpha, ratio=ratio, method="exact")
    assert got == pytest.approx(expected, abs=1e-10)


def _mcnemar_power_brute_force(
    n: int, cells: tuple[float, float, float, float], alpha: float
) -> float:
    # enumerate every table (n11, n10, n01, n00) of the multinomial and ask statsmodels
    total = 0.0
    for n11 in range(n + 1):
        for n10 in range(n + 1 - n11):
            for n01 in range(n + 1 - n11 - n10):
                n00 = n - n11 - n10 - n01
                p_value = mcnemar([[n11, n10], [n01, n00]], exact=True).pvalue
                if p_value <= alpha:
                    total += stats.multinomial.pmf([n11, n10, n01, n00], n, cells)
    return total


@pytest.mark.parametrize(
    ("n", "p11", "p10", "p01"),
    [(12, 0.3, 0.3, 0.05), (10, 0.2, 0.05, 0.35), (14, 0.1, 0.15, 0.15)],
)
def test_mcnemar_exact_power_matches_brute_force(
    n: int, p11: float, p10: float, p01: float
) -> None:
    cells = (p11, p10, p01, 1.0 - p11 - p10 - p01)
    expected = _mcnemar_power_brute_force(n, cells, 0.05)
    got = power(p11 + p10, p11 + p01, n, 0.05, paired=True, discordant=p10 + p01, method="exact")
    assert got == pytest.approx(expected, abs=1e-10)


def test_mcnemar_exact_power_matches_monte_carlo() -> None:
    rng = np.random.default_rng(20240604)
    n, reps = 60, 40_000
    cells = np.array([0.35, 0.2, 0.08, 0.37])  # p11, p10, p01, p00
    tables = rng.multinomial(n, cells, size=reps)
    b, c = tables[:, 1], tables[:, 2]
    p_values = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(b, c), b + c, 0.5))
    empirical = float(np.mean(p_values <= 0.05))
    exact = power(0.55, 0.43, n, paired=True, discordant=0.28, method="exact")
    se = math.sqrt(exact * (1 - exact) / reps)
    assert abs(empirical - exact) <= 4 * se


def test_fisher_exact_power_near_target_at_continuity_corrected_n() -> None:
    # The Fleiss-Tytun-Ury continuity-corrected n approximates the Casagrande-Pike-Smith
    # sample size, built to match the exact (Fisher) test: its exact power is near target.
    for p_a, p_b in [(0.5, 0.4), (0.3, 0.15), (0.2, 0.1)]:
        n = sample_size(p_a, p_b, continuity=True)
        assert abs(power(p_a, p_b, n, method="exact") - 0.8) <= 0.02


def test_exact_and_normal_agree_for_large_paired_n() -> None:
    n = sample_size(0.5, 0.45, paired=True, discordant=0.3)
    exact = power(0.5, 0.45, n, paired=True, discordant=0.3, method="exact")
    assert abs(exact - 0.8) <= 0.02


@settings(max_examples=40, deadline=None)
@given(p=rate, n=st.integers(min_value=1, max_value=80), psi=st.floats(0.01, 1.0))
def test_exact_tests_never_exceed_alpha_under_the_null(p: float, n: int, psi: float) -> None:
    # exact tests are conservative: the rejection rate at p_a == p_b is at most alpha
    assert power(p, p, n, method="exact") <= 0.05 + 1e-12
    assume(psi <= min(2 * p, 2 - 2 * p))
    assert power(p, p, n, paired=True, discordant=psi, method="exact") <= 0.05 + 1e-12


# --------------------------------------------------------------------------- Monte Carlo


def test_unpaired_z_test_empirical_power_at_computed_n() -> None:
    rng = np.random.default_rng(1979)
    reps, z = 40_000, stats.norm.ppf(0.975)
    for p_a, p_b in [(0.5, 0.4), (0.6, 0.4)]:
        n = sample_size(p_a, p_b)
        x_a = rng.binomial(n, p_a, size=reps)
        x_b = rng.binomial(n, p_b, size=reps)
        pooled = (x_a + x_b) / (2 * n)
        se = np.sqrt(pooled * (1 - pooled) * 2 / n)
        statistic = np.abs(x_a - x_b) / n / se
        empirical = float(np.mean(statistic > z))
        assert abs(empirical - 0.8) <= 0.02


def test_paired_z_test_empirical_power_at_connor_n() -> None:
    rng = np.random.default_rng(1987)
    reps, z = 40_000, stats.norm.ppf(0.975)
    n = sample_size(0.5, 0.4, paired=True, discordant=0.3)  # p10 = 0.2, p01 = 0.1
    tables = rng.multinomial(n, [0.3, 0.2, 0.1, 0.4], size=reps)
    b, c = tables[:, 1], tables[:, 2]
    statistic = np.abs(b - c) / np.sqrt(np.maximum(b + c, 1))
    empirical = float(np.mean(statistic > z))
    assert abs(empirical - 0.8) <= 0.02


# --------------------------------------------------------------------------- consistency


@settings(max_examples=80, deadline=None)
@given(
    p_a=rate,
    p_b=rate,
    target=st.sampled_from([0.8, 0.9]),
    continuity=st.booleans(),
    paired=st.booleans(),
    slack=st.floats(0.0, 1.0),
)
def test_sample_size_is_the_smallest_n_reaching_target(
    p_a: float, p_b: float, target: float, continuity: bool, paired: bool, slack: float
) -> None:
    assume(abs(p_a - p_b) >= 0.02)
    kwargs: dict[str, object] = {}
    if paired:
        low, high = abs(p_a - p_b), min(p_a + p_b, 2 - p_a - p_b)
        kwargs = {"paired": True, "discordant": low + slack * (high - low)}
        continuity = False
    n = sample_size(p_a, p_b, target, continuity=continuity, **kwargs)  # type: ignore[arg-type]
    assert power(p_a, p_b, n, continuity=continuity, **kwargs) >= target - 1e-9  # type: ignore[arg-type]
    if n > 1:  # the far rejection tail adds at most a sliver to the one-tail formula
        below = power(p_a, p_b, n - 1, continuity=continuity, **kwargs)  # type: ignore[arg-type]
        assert below < target + 1e-4


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=5, max_value=3000), p=st.floats(0.05, 0.95))
def test_mdd_inverts_power(n: int, p: float) -> None:
    found = []
    for direction, sign in [("up", 1.0), ("down", -1.0)]:
        try:
            gap = minimum_detectable_difference(n, p, direction=direction)
        except InvalidParameterError:
            # no gap inside [0, 1] reaches 80%: then even the extreme rate does not
            extreme = 1.0 if sign > 0 else 0.0
            assert power(extreme, p, n) < 0.8
            continue
        assert power(p + sign * gap, p, n) == pytest.approx(0.8, abs=1e-7)
        found.append(gap)
    if len(found) == 2:  # "either": resolvable whichever way the difference goes
        assert minimum_detectable_difference(n, p) == pytest.approx(max(found), abs=1e-12)


def test_mdd_paired_inverts_power_and_shrinks_with_fewer_discordant_pairs() -> None:
    gap = minimum_detectable_difference(200, 0.5, paired=True, discordant=0.3)
    assert power(0.5 + gap, 0.5, 200, paired=True, discordant=0.3) == pytest.approx(0.8, abs=1e-7)
    tighter = minimum_detectable_difference(200, 0.5, paired=True, discordant=0.15)
    assert tighter < gap


@pytest.mark.parametrize("paired", [False, True])
def test_power_increases_with_n_and_gap(paired: bool) -> None:
    kwargs: dict[str, object] = {"paired": True, "discordant": 0.3} if paired else {}
    by_n = [power(0.5, 0.4, n, **kwargs) for n in (10, 50, 100, 200, 400, 800)]  # type: ignore[arg-type]
    assert all(a < b for a, b in zip(by_n, by_n[1:], strict=False))
    by_gap = [power(0.4 + g, 0.4, 150, **kwargs) for g in (0.0, 0.02, 0.05, 0.1, 0.2)]  # type: ignore[arg-type]
    assert all(a < b for a, b in zip(by_gap, by_gap[1:], strict=False))
    assert by_gap[0] == pytest.approx(0.05, abs=1e-12)  # no gap: the type I error rate


def test_paired_with_independent_outcomes_costs_about_the_same_as_unpaired() -> None:
    for p_a, p_b in [(0.5, 0.4), (0.6, 0.4), (0.45, 0.3)]:
        independent = discordant_from_correlation(p_a, p_b, 0.0)
        paired_n = sample_size(p_a, p_b, paired=True, discordant=independent)
        assert abs(paired_n - sample_size(p_a, p_b)) / sample_size(p_a, p_b) <= 0.05
        # shared hard conditions (positive correlation) make matched designs cheaper
        correlated = discordant_from_correlation(p_a, p_b, 0.5)
        assert sample_size(p_a, p_b, paired=True, discordant=correlated) < 0.6 * paired_n


@settings(max_examples=60, deadline=None)
@given(p_a=rate, p_b=rate, rho=st.floats(-1.0, 1.0))
def test_discordant_from_correlation_reproduces_the_phi_coefficient(
    p_a: float, p_b: float, rho: float
) -> None:
    try:
        psi = discordant_from_correlation(p_a, p_b, rho)
    except InvalidParameterError:
        return
    # rebuild the 2x2 joint distribution and compute its phi coefficient by definition
    delta = p_a - p_b
    p10, p01 = (psi + delta) / 2, (psi - delta) / 2
    p11 = p_a - p10
    cells = np.array([p11, p10, p01, 1 - p11 - p10 - p01])
    assert np.all(cells >= -1e-12)
    a_values, b_values = np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0])
    cov = np.sum(cells * a_values * b_values) - p_a * p_b
    phi = cov / math.sqrt(p_a * (1 - p_a) * p_b * (1 - p_b))
    assert phi == pytest.approx(rho, abs=1e-9)


def test_discordant_from_correlation_rejects_impossible_correlation() -> None:
    with pytest.raises(InvalidParameterError, match="impossible"):
        discordant_from_correlation(0.1, 0.9, 0.9)  # margins this far apart cannot agree
    with pytest.raises(InvalidParameterError):
        discordant_from_correlation(0.5, 0.5, 1.5)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: sample_size(1.2, 0.4), r"\[0, 1\]"),
        (lambda: sample_size(-0.1, 0.4), r"\[0, 1\]"),
        (lambda: sample_size(float("nan"), 0.4), "NaN"),
        (lambda: sample_size(0.4, 0.4), "equal"),
        (lambda: sample_size(0.5, 0.4, power=1.0), "power"),
        (lambda: sample_size(0.5, 0.4, power=0.0), "power"),
        (lambda: sample_size(0.5, 0.4, power=0.04), "exceed alpha"),
        (lambda: sample_size(0.5, 0.4, alpha=0.0), "alpha"),
        (lambda: sample_size(0.5, 0.4, alpha=1.5), "alpha"),
        (lambda: sample_size(0.5, 0.4, paired=True), "discordant="),
        (lambda: sample_size(0.5, 0.4, paired=True, discordant=0.05), "at least"),
        (lambda: sample_size(0.5, 0.4, paired=True, discordant=1.2), r"\[0, 1\]"),
        (lambda: sample_size(0.9, 0.8, paired=True, discordant=0.5), "at most"),
        (lambda: sample_size(0.5, 0.4, discordant=0.3), "paired designs only"),
        (lambda: sample_size(0.5, 0.4, ratio=0.0), "ratio"),
        (lambda: sample_size(0.5, 0.4, paired=True, discordant=0.3, ratio=2.0), "ratio"),
        (lambda: sample_size(0.5, 0.4, paired=True, discordant=0.3, continuity=True), "unpaired"),
        (lambda: power(0.5, 0.4, 100, method="wald"), "method"),
        (lambda: power(0.5, 0.4, 100, method="exact", continuity=True), "continuity"),
        (lambda: power(0.5, 0.4, 10, ratio=1.25, method="exact"), "whole number"),
        (lambda: power(0.5, 0.4, 100, alpha=1.0), "alpha"),
        (lambda: power(0.5, 0.4, 100, paired=True), "discordant="),
        (lambda: minimum_detectable_difference(10, 0.98, direction="up"), "no gap up"),
        (lambda: minimum_detectable_difference(10, 0.5, direction="sideways"), "direction"),
        (lambda: minimum_detectable_difference(50, 0.5, paired=True), "discordant="),
        (lambda: minimum_detectable_difference(50, 0.5, paired=True, discordant=0.0), "never"),
        (lambda: price_list(), "exactly one"),
        (lambda: price_list([(0.5, 0.4)], gaps=[0.1]), "exactly one"),
        (lambda: price_list([(0.5, 0.4, 0.3)]), "pair"),
        (lambda: price_list(gaps=[0.7], baseline=0.5), "outside"),
    ],
)
def test_bad_input_raises_named_error(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidParameterError, match=message) as info:
        call()
    assert isinstance(info.value, InvalidInputError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("n", [0, -3, 2.5, "10", float("nan")])
def test_bad_n_raises(n: object) -> None:
    with pytest.raises(InvalidInputError):
        power(0.5, 0.4, n)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        minimum_detectable_difference(n, 0.5)  # type: ignore[arg-type]


def test_degenerate_but_valid_inputs() -> None:
    # certain outcomes: 100% vs 0% is detected with a handful of episodes, never zero
    assert sample_size(1.0, 0.0) >= 1
    assert power(1.0, 0.0, 5) == 1.0
    assert power(1.0, 1.0, 50) == 0.0  # nothing varies, nothing is rejected
    assert power(0.3, 0.3, 40, paired=True, discordant=0.0) == 0.0
    assert power(0.3, 0.3, 40, paired=True, discordant=0.0, method="exact") == 0.0
    assert isinstance(sample_size(0.5, 0.4), int)
    assert isinstance(power(0.5, 0.4, 10), float)
    assert isinstance(InvalidCountsError("x"), InvalidInputError)
