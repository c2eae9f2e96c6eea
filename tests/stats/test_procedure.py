"""The decision procedure's pieces against independent oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom, binomtest, hypergeom

from evalband.stats import diff_unpaired, holm
from evalband.stats._procedure import (
    compatible_difference,
    exact_power,
    holm_decisions,
    paired_exact_p,
    score_interval_unpaired,
    stratified_difference,
    unpaired_exact_p,
    wilson_cc,
)


@pytest.mark.parametrize("b,c", [(0, 0), (1, 7), (12, 2), (30, 31), (0, 9)])
def test_paired_exact_p_is_the_two_sided_binomial_test(b, c) -> None:
    expected = 1.0 if b + c == 0 else min(1.0, 2 * binom.cdf(min(b, c), b + c, 0.5))
    assert paired_exact_p(b, c) == pytest.approx(expected, rel=1e-12)
    if b + c and b != c:
        assert paired_exact_p(b, c) == pytest.approx(binomtest(b, b + c).pvalue, rel=1e-9)


@pytest.mark.parametrize("ka,na,kb,nb", [(9, 10, 3, 10), (0, 5, 5, 5), (12, 40, 20, 33)])
def test_unpaired_exact_p_doubles_the_smaller_hypergeometric_tail(ka, na, kb, nb) -> None:
    t = ka + kb
    lower = hypergeom.cdf(ka, na + nb, t, na)
    upper = hypergeom.sf(ka - 1, na + nb, t, na)
    assert unpaired_exact_p(ka, na, kb, nb) == pytest.approx(min(1, 2 * min(lower, upper)))


def test_holm_levels_make_the_decision() -> None:
    p = [0.001, 0.04, 0.012, 0.2, 0.009]
    d = holm_decisions(p, 0.05)
    assert d.p_adjusted.tolist() == pytest.approx(list(holm(p)))
    assert [pi <= lvl for pi, lvl in zip(p, d.levels, strict=True)] == d.rejected.tolist()


@pytest.mark.parametrize("k,n", [(0, 10), (10, 10), (3, 10), (81, 263), (1, 2)])
def test_wilson_cc_inverts_the_continuity_corrected_score_test(k, n) -> None:
    z = 1.959963984540054

    def gap(p: float) -> float:  # <= 0 inside: |k - n p| - 1/2 <= z sqrt(n p (1 - p))
        return max(abs(k - n * p) - 0.5, 0.0) - z * math.sqrt(n * p * (1 - p))

    lo, hi = wilson_cc(k, n)
    phat = min(max(k / n, 1e-9), 1 - 1e-9)
    low = 0.0 if k == 0 else brentq(gap, 1e-12, phat)
    high = 1.0 if k == n else brentq(gap, phat, 1 - 1e-12)
    assert (lo, hi) == pytest.approx((low, high), abs=1e-9)


def test_score_interval_unpaired_is_the_set_where_the_score_statistic_is_small() -> None:
    """Brute force: the restricted MLE by numerical maximisation on a grid of deltas."""
    from scipy.optimize import minimize_scalar

    ka, na, kb, nb = 7, 20, 14, 25
    d = score_interval_unpaired(ka, na, kb, nb)
    pa, pb = ka / na, kb / nb

    def stat(delta: float) -> float:
        def nll(p2: float) -> float:
            p1 = p2 + delta
            return -(ka * math.log(p1) + (na - ka) * math.log(1 - p1)
                     + kb * math.log(p2) + (nb - kb) * math.log(1 - p2))

        lo, hi = max(1e-9, -delta + 1e-9), min(1 - 1e-9, 1 - delta - 1e-9)
        p2 = minimize_scalar(nll, bounds=(lo, hi), method="bounded",
                             options={"xatol": 1e-12}).x
        p1 = p2 + delta
        var = (p1 * (1 - p1) / na + p2 * (1 - p2) / nb) * (na + nb) / (na + nb - 1)
        return (pa - pb - delta) / math.sqrt(var)

    assert abs(stat(d.low)) == pytest.approx(1.959963984540054, abs=2e-4)
    assert abs(stat(d.high)) == pytest.approx(1.959963984540054, abs=2e-4)


def test_compatible_difference_agrees_with_its_test() -> None:
    for a, b, c, dd in [(20, 12, 2, 16), (5, 0, 3, 2), (10, 4, 4, 10), (0, 0, 0, 9)]:
        p = paired_exact_p(b, c)
        for level in (0.05, 0.01, 0.0025):
            iv = compatible_difference({"both": a, "a_only": b, "b_only": c, "neither": dd},
                                       paired=True, confidence=1 - level, p_value=p)
            assert (iv.low > 0 or iv.high < 0) == (p <= level)
            assert iv.low <= iv.estimate <= iv.high


def test_one_cell_without_correction_is_newcombe_at_n_minus_one() -> None:
    """One cell: Newcombe's hybrid score interval, each arm's Wilson limits (statsmodels)
    taken on n - 1 episodes -- the unbiased variance of the rate."""
    from statsmodels.stats.proportion import proportion_confint

    one = stratified_difference([{"k_a": 56, "n_a": 70, "k_b": 48, "n_b": 80}], [1.0],
                                continuity=False)
    pa, pb = 56 / 70, 48 / 80
    la, ua = proportion_confint(pa * 69, 69, method="wilson")
    lb, ub = proportion_confint(pb * 79, 79, method="wilson")
    low = pa - pb - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2)
    high = pa - pb + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)
    assert (one.low, one.high) == pytest.approx((low, high), abs=1e-12)
    ref = diff_unpaired(56, 70, 48, 80)  # Newcombe at n: a hair narrower
    assert one.low < ref.low < ref.high < one.high


def test_aggregate_misses_each_side_at_most_half_alpha_at_small_n() -> None:
    """Three unpaired cells of 10 at rate 0.5: the plain-Wilson MOVER missed ~3.5% a side."""
    rng = np.random.default_rng(4)
    reps, low_miss, high_miss = 2000, 0, 0
    for _ in range(reps):
        kb, kc = rng.binomial(10, 0.5, 3), rng.binomial(10, 0.5, 3)
        d = stratified_difference([{"k_a": int(x), "n_a": 10, "k_b": int(y), "n_b": 10}
                                   for x, y in zip(kc, kb, strict=True)], [1, 1, 1])
        low_miss += d.low > 0
        high_miss += d.high < 0
    limit = binom.ppf(0.995, reps, 0.025)
    assert low_miss <= limit and high_miss <= limit


def test_exact_power_matches_simulation_of_the_test() -> None:
    rng = np.random.default_rng(9)
    n, p10, p01, alpha = 60, 0.05, 0.2, 0.01
    draws = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=4000)
    hits = sum(paired_exact_p(int(b), int(c)) <= alpha for b, c, _ in draws)
    power = exact_power(n, 0.5, p01 - p10, alpha, paired=True, discordant=p10 + p01)
    sd = math.sqrt(power * (1 - power) / 4000)
    assert abs(hits / 4000 - power) <= 4 * sd
