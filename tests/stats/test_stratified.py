"""The aggregate's interval (per-arm Wilson at the effective sample size, MOVER across arms).

Oracles: statsmodels' Wilson interval, the continuity-corrected score test inverted by
brute-force root finding, the binomial distribution of a count of misses (scipy), and seeded
Monte Carlo of the cells' counts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom

from evalband.stats._stratified import stratified_difference

Z = 1.959963984540054


def test_one_matched_cell_is_newcombes_method_10_at_n_minus_one() -> None:
    from statsmodels.stats.proportion import proportion_confint

    a, b, c, d = 20, 12, 2, 16
    n = a + b + c + d
    pa, pb = (a + b) / n, (a + c) / n
    la, ua = proportion_confint(pa * (n - 1), n - 1, method="wilson")
    lb, ub = proportion_confint(pb * (n - 1), n - 1, method="wilson")
    phi = (a * d - b * c - n / 2) / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    low = pa - pb - math.sqrt((pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2)
    high = pa - pb + math.sqrt((ua - pa) ** 2 - 2 * phi * (ua - pa) * (pb - lb) + (pb - lb) ** 2)
    got = stratified_difference([{"both": a, "a_only": b, "b_only": c, "neither": d}], [1.0],
                                continuity=False)
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-12)


def cc_score_limits(p: float, n: float) -> tuple[float, float]:
    """Brute force: the continuity-corrected score test |p - t| - 1/(2n) <= z sqrt(t(1-t)/n)."""
    def gap(t: float) -> float:
        return max(abs(p - t) - 0.5 / n, 0.0) - Z * math.sqrt(t * (1 - t) / n)

    low = 0.0 if p == 0 else brentq(gap, 1e-12, max(p, 1e-9))
    high = 1.0 if p == 1 else brentq(gap, min(p, 1 - 1e-9), 1 - 1e-12)
    return low, high


def test_each_arm_is_the_score_interval_at_its_effective_size() -> None:
    """Three unequally weighted cells: the candidate arm's limits are the continuity-corrected
    score interval at n_eff = T(1 - T) / V, V the unbiased variance of the weighted rate (the
    baseline arm is all successes, so the interval's lower side is the candidate's alone)."""
    k, n, w = np.array([3, 7, 1]), np.array([10, 12, 4]), np.array([0.5, 0.3, 0.2])
    p = k / n
    t = float(w @ p)
    var = float(np.sum(w**2 * p * (1 - p) / (n - 1)))
    n_eff = min(t * (1 - t) / var, 1 / float(np.sum(w**2 / n)))
    low, high = cc_score_limits(t, n_eff)
    cells = [{"k_a": int(x), "n_a": int(y), "k_b": int(y), "n_b": int(y)} for x, y in zip(k, n,
                                                                                          strict=True)]
    got = stratified_difference(cells, list(w))
    assert got.low == pytest.approx(low - 1.0, abs=1e-9)
    assert got.estimate == pytest.approx(t - 1.0)


def per_cell_mover(kc: np.ndarray, kb: np.ndarray, n: int) -> float:
    """The previous aggregate (each cell's continuity-corrected Wilson limits, MOVER over cells):
    its lower limit, equal weights. The reference the check below must beat."""
    table = np.array([cc_score_limits(x / n, n) for x in range(n + 1)])
    lc, ub = table[kc, 0], table[kb, 1]
    w = 1.0 / len(kc)
    est = w * float(np.sum(kc - kb)) / n
    return est - math.sqrt(float(np.sum(w * w * ((kc / n - lc) ** 2 + (ub - kb / n) ** 2))))


@pytest.mark.parametrize(("cells", "n", "rate"), [(36, 3, 0.5), (20, 5, 0.7), (24, 4, 0.5)])
def test_many_tiny_unpaired_cells_keep_the_one_sided_level(cells: int, n: int,
                                                           rate: float) -> None:
    """Identical rates in 20-36 cells of 3-5 independent episodes: the lower limit is above 0
    (the aggregate says "improves") in at most 2.5% of panels (99.5% binomial quantile)."""
    rng = np.random.default_rng(cells * 100 + n)
    reps = 3000
    kc = rng.binomial(n, rate, size=(reps, cells))
    kb = rng.binomial(n, rate, size=(reps, cells))
    above = sum(stratified_difference([{"k_a": int(a), "n_a": n, "k_b": int(b), "n_b": n}
                                       for a, b in zip(kc[r], kb[r], strict=True)],
                                      [1.0] * cells).low > 0 for r in range(reps))
    assert above <= binom.ppf(0.995, reps, 0.025), above


def test_the_per_cell_mover_it_replaces_was_anti_conservative_there() -> None:
    rng = np.random.default_rng(3)
    reps, cells, n = 1500, 36, 3
    kc = rng.binomial(n, 0.5, size=(reps, cells))
    kb = rng.binomial(n, 0.5, size=(reps, cells))
    above = sum(per_cell_mover(kc[r], kb[r], n) > 0 for r in range(reps))
    assert above > binom.ppf(0.995, reps, 0.025), above


def test_matched_tiny_cells_stay_within_the_level() -> None:
    rng = np.random.default_rng(11)
    reps, cells, n = 2000, 30, 4
    probs = [0.5, 0.2, 0.2, 0.1]  # both, candidate only, baseline only, neither
    draws = rng.multinomial(n, probs, size=(reps, cells))
    above = sum(stratified_difference([{"both": int(x[0]), "a_only": int(x[1]),
                                        "b_only": int(x[2]), "neither": int(x[3])}
                                       for x in draws[r]], [1.0] * cells).low > 0
                for r in range(reps))
    assert above <= binom.ppf(0.995, reps, 0.025), above
