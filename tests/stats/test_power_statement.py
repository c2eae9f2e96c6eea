"""A slice's power statement: true under the assumptions it prints, and not a loose quote.

Oracles: the exact power of the printed test by brute-force enumeration of every outcome with
scipy's binomial and hypergeometric distributions (the test's two-sided p as twice the smaller
tail), and seeded Monte Carlo of the printed test (``paired_exact_p``) under the stated
assumptions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, hypergeom, multinomial

from evalband.stats._power_statement import joint_pair, pair_correlation, power_statement
from evalband.stats._procedure import paired_exact_p


def mcnemar_power(n: int, p: float, x: float, phi: float, level: float) -> float:
    """Enumerate (candidate only, baseline only) for n pairs; reject on 2 min tail <= level."""
    _, p10, p01, _ = joint_pair(p, p - x, phi)
    b = np.arange(n + 1)[:, None]
    c = np.arange(n + 1)[None, :]
    ok = b + c <= n
    bb, cc = np.broadcast_to(b, ok.shape)[ok], np.broadcast_to(c, ok.shape)[ok]
    pr = multinomial.pmf(np.stack([bb, cc, n - bb - cc], 1), n, [p01, p10, 1 - p01 - p10])
    m = bb + cc
    pv = np.where(m > 0, np.minimum(1.0, 2 * binom.cdf(np.minimum(bb, cc), np.maximum(m, 1),
                                                       0.5)), 1.0)
    return float(pr[pv <= level * (1 + 1e-12)].sum())


def fisher_power(n_c: int, n_b: int, p: float, x: float, level: float) -> float:
    total = 0.0
    for kc in range(n_c + 1):
        for kb in range(n_b + 1):
            t = kc + kb
            lower = hypergeom.cdf(kc, n_c + n_b, t, n_c)
            upper = hypergeom.sf(kc - 1, n_c + n_b, t, n_c)
            if min(1.0, 2 * min(lower, upper)) <= level * (1 + 1e-12):
                total += binom.pmf(kc, n_c, p - x) * binom.pmf(kb, n_b, p)
    return total


@pytest.mark.parametrize(("n", "p", "phi", "level"), [
    (60, 0.7, 0.5, 0.05), (150, 0.9, 0.0, 0.005), (100, 0.5, 0.9, 0.0125), (40, 0.2, 0.3, 0.05)])
def test_paired_statement_is_exact_and_tight(n: int, p: float, phi: float, level: float) -> None:
    s = power_statement(n, p, level, 0.1, paired=True, correlation=phi)
    assert s.base_rate == p and s.correlation == phi and s.test == "exact McNemar"
    x = s.detectable_drop
    assert x is not None and x <= p  # counted from the stated base: no drop beyond it
    assert mcnemar_power(n, p, x, phi, level) >= 0.8
    assert mcnemar_power(n, p, x / 1.2, phi, level) < 0.8  # not more than 20% above the need
    need = s.episodes_for_effect
    if need is not None and need <= 400:
        assert mcnemar_power(need, p, 0.1, phi, level) >= 0.8
        assert mcnemar_power(int(need / 1.2), p, 0.1, phi, level) < 0.8


def test_simulating_the_printed_test_delivers_the_statement() -> None:
    """Pairs drawn under the stated assumptions (base rate, phi), the printed test run on
    each: it rejects at least 80% of the time at the stated drop and n."""
    rng = np.random.default_rng(2)
    for n, p, phi, level in ((80, 0.7, 0.4, 0.01), (120, 0.85, 0.0, 0.05)):
        s = power_statement(n, p, level, 0.1, paired=True, correlation=phi)
        x = s.detectable_drop
        assert x is not None
        reps = 2000
        draws = rng.multinomial(n, joint_pair(p, p - x, phi), size=reps)
        hits = sum(paired_exact_p(int(d[2]), int(d[1])) <= level for d in draws)
        assert hits / reps >= 0.8 - 3 * math.sqrt(0.16 / reps)


@pytest.mark.parametrize(("n_c", "n_b", "p"), [(30, 30, 0.8), (25, 35, 0.5)])
def test_unpaired_statement_is_the_central_fisher_tests(n_c: int, n_b: int, p: float) -> None:
    s = power_statement(n_c, p, 0.05, 0.1, paired=False, n_baseline=n_b)
    x = s.detectable_drop
    assert x is not None and s.correlation is None
    assert fisher_power(n_c, n_b, p, x, 0.05) >= 0.8
    assert fisher_power(n_c, n_b, p, x / 1.2, 0.05) < 0.8


def test_a_slice_observed_low_is_counted_from_its_own_rate() -> None:
    """The audit: a slice observed at 20% read ">= 29 points" (counted from the top of a
    Wilson band). Now the base is the observed rate, and no drop exceeds it."""
    s = power_statement(50, 0.2, 0.05, 0.1, paired=True, correlation=0.3)
    assert s.detectable_drop is None or s.detectable_drop <= 0.2
    tiny = power_statement(10, 0.2, 0.005, 0.1, paired=True, correlation=0.0)
    assert tiny.detectable_drop is None  # no drop down to 0% reaches 80% here


def test_pair_correlation_is_the_phi_coefficient() -> None:
    a, b, c, d = 30, 5, 8, 20
    x = np.repeat([1, 1, 0, 0], [a, b, c, d])  # candidate
    y = np.repeat([1, 0, 1, 0], [a, b, c, d])  # baseline
    assert pair_correlation(a, b, c, d) == pytest.approx(float(np.corrcoef(x, y)[0, 1]))
