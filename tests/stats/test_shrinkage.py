"""Cell rates shrunk toward their common rate (beta-binomial empirical Bayes).

Oracles: seeded simulation of beta-binomial cells with a known intra-cell correlation (the
method of moments must recover it), and the posterior mean of a beta prior (conjugacy: scipy's
beta distribution updated by the counts).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta

from evalband.errors import InvalidCountsError
from evalband.stats._shrinkage import shrunken_rates


@pytest.mark.parametrize("rho", [0.05, 0.3])
def test_the_moment_estimate_recovers_the_intra_cell_correlation(rho: float) -> None:
    rng = np.random.default_rng(int(rho * 100))
    a, b = 0.6 * (1 - rho) / rho, 0.4 * (1 - rho) / rho
    estimates = []
    for _ in range(200):
        n = rng.integers(5, 40, size=30)
        k = rng.binomial(n, rng.beta(a, b, size=30))
        estimates.append(shrunken_rates(k.tolist(), n.tolist()).rho)
    sem = np.std(estimates) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - rho) <= 4 * sem + 0.005


def test_each_rate_is_the_beta_posterior_mean() -> None:
    k, n = [0, 9, 5, 2], [3, 10, 6, 12]
    s = shrunken_rates(k, n)
    assert 0 < s.rho < 1 and s.mean == pytest.approx(sum(k) / sum(n))
    a0, b0 = s.kappa * s.mean, s.kappa * (1 - s.mean)
    for rate, ki, ni in zip(s.rates, k, n, strict=True):
        assert rate == pytest.approx(beta(a0 + ki, b0 + ni - ki).mean())
    assert 0 < s.rates[0] < s.mean  # 0 of 3 is not a cell that never succeeds
    few, many = shrunken_rates([0, 30], [3, 40]), shrunken_rates([0, 30], [300, 40])
    assert few.rates[0] - few.raw[0] > many.rates[0] - many.raw[0]  # few episodes: shrunk more


def test_no_extra_spread_pools_and_bad_counts_are_refused() -> None:
    s = shrunken_rates([5, 5, 5], [10, 10, 10])
    assert s.rates == (0.5, 0.5, 0.5) and s.kappa == float("inf")
    with pytest.raises(InvalidCountsError):
        shrunken_rates([4], [3])
