"""The matched-pair slice interval (conditional exact inversion) against independent oracles.

Oracles: scipy's exact binomial test and its Clopper-Pearson interval (``binomtest``), and
exact enumeration of the trinomial distribution of the discordant counts (scipy's ``binom`` /
``multinomial`` pmfs) for coverage.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, binomtest, multinomial

from evalband.stats._conditional import conditional_paired_limits
from evalband.stats._procedure import compatible_difference, paired_exact_p


def scipy_limits(b: int, c: int, n: int, level: float) -> tuple[float, float]:
    """The corners of scipy's Clopper-Pearson rectangle for (discordance, share)."""
    m = b + c
    share = (0.0, 1.0) if m == 0 else binomtest(b, m).proportion_ci(level, "exact")
    psi = binomtest(m, n).proportion_ci(level, "exact")
    corners = [s * (2 * p - 1) for s in (psi[0], psi[1]) for p in (share[0], share[1])]
    return min(corners), max(corners)


@pytest.mark.parametrize(("b", "c", "n"), [(0, 0, 100), (12, 2, 50), (0, 9, 100), (30, 31, 400),
                                           (5, 0, 5), (3, 1, 8)])
def test_limits_are_the_image_of_the_clopper_pearson_rectangle(b: int, c: int, n: int) -> None:
    for level in (0.95, 0.995):
        assert conditional_paired_limits(b, c, n, level) == pytest.approx(
            scipy_limits(b, c, n, level), abs=1e-9)


def test_excludes_zero_exactly_when_the_exact_mcnemar_test_rejects() -> None:
    """Every table with up to 40 discordant pairs, three levels; the oracle is scipy's
    binomial cdf (twice the smaller tail)."""
    for m in range(0, 41):
        for b in range(m + 1):
            p = 1.0 if m == 0 else min(1.0, 2 * binom.cdf(min(b, m - b), m, 0.5))
            assert p == pytest.approx(paired_exact_p(b, m - b), rel=1e-9)
            for level in (0.05, 0.01, 0.0025):
                lo, hi = conditional_paired_limits(b, m - b, 60, 1 - level)
                assert (lo > 0 or hi < 0) == (p <= level), (b, m - b, level)


def coverage(n: int, p_cand_only: float, p_base_only: float, level: float) -> float:
    """Exact coverage of the printed (compatible) interval: enumeration of (b, c)."""
    delta = p_cand_only - p_base_only
    covered = 0.0
    rest = 1.0 - p_cand_only - p_base_only
    for b in range(n + 1):
        if p_cand_only == 0 and b:
            break
        cs = np.arange(n - b + 1) if p_base_only > 0 else np.array([0])
        probs = multinomial.pmf(np.stack([np.full_like(cs, b), cs, n - b - cs], axis=1), n,
                                [p_cand_only, p_base_only, rest])
        for c, pr in zip(cs, probs, strict=True):
            d = compatible_difference({"both": 0, "a_only": b, "b_only": int(c),
                                       "neither": n - b - int(c)}, paired=True,
                                      confidence=level, p_value=paired_exact_p(b, int(c)))
            covered += pr * (d.low <= delta <= d.high)
    return covered


@pytest.mark.parametrize("n", [20, 60, 120, 200])
def test_coverage_under_one_directional_discordance(n: int) -> None:
    """Common random numbers: the candidate fails wherever the baseline does and on a share
    ``delta`` more. Exact coverage at 95% over a grid of drops is at least 95%."""
    worst = min(coverage(n, 0.0, d, 0.95) for d in np.linspace(0.005, 0.4, 40))
    assert worst >= 0.95


def test_coverage_two_directional_and_at_holm_levels() -> None:
    for n, b, c in ((30, 0.2, 0.35), (40, 0.05, 0.1), (25, 0.4, 0.4)):
        assert coverage(n, b, c, 0.95) >= 0.95
        assert coverage(n, b, c, 0.995) >= 0.995


def test_the_score_interval_it_replaces_missed_under_one_directional_discordance() -> None:
    """Newcombe's method 10 made compatible (the previous slice interval) covers less than
    94.5% at some drop under common random numbers: the check above could fail."""
    from evalband.stats import diff_paired

    def old(n: int, p_base: float, delta: float) -> float:
        """Exact coverage: (both, baseline only, neither) trinomial, candidate only = 0."""
        total = 0.0
        for c in range(n + 1):
            both = np.arange(n - c + 1)
            probs = multinomial.pmf(np.stack([both, np.full_like(both, c), n - c - both], 1),
                                    n, [p_base - delta, delta, 1 - p_base])
            for a, pr in zip(both, probs, strict=True):
                d = diff_paired(int(a), 0, c, n - c - int(a))
                lo, hi = d.low, d.high
                if paired_exact_p(0, c) > 0.05:
                    lo, hi = min(lo, 0.0), max(hi, 0.0)
                total += pr * (lo <= -delta <= hi)
        return total

    assert min(old(20, 0.7, d) for d in (0.15, 0.2, 0.25)) < 0.945


def test_no_discordant_pair_is_as_wide_as_the_bound_on_discordance() -> None:
    lo, hi = conditional_paired_limits(0, 0, 100, 0.95)
    assert hi == pytest.approx(1 - 0.025 ** (1 / 100)) and lo == -hi
    assert math.isclose(binom.pmf(0, 100, 0.02), 0.98 ** 100)  # a 2-point drop: 13% silent
