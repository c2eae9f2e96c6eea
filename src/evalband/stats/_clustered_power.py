r"""Exact power and sample size of the session's scene-level paired test.

The price of a comparison on a rig is a number of scenes. With one matched pair per scene
(one attempt of each policy on each captured scene) the pairs are independent, and
:func:`evalband.stats.clustered_paired_test` rejects exactly when

.. math:: \max\bigl(p_\text{sign-flip}(b, c),\; p_\text{McNemar, asymptotic}(b, c)\bigr)
          \le \alpha,

where :math:`b, c` are the pairs only A / only B won; the sign-flip p-value with one pair
per scene is McNemar's exact conditional p-value. Given :math:`m = b + c` discordant
pairs, :math:`b \sim \mathrm{Bin}(m, p_{10}/\psi)`, and :math:`m \sim \mathrm{Bin}(n, \psi)`
with :math:`\psi = p_{10} + p_{01}` the discordant share; the power is the sum of the
probabilities of the rejected :math:`(m, b)` (Lachin 1992, *Statistics in Medicine*
11:1239-1251, for the exact McNemar test; here the same enumeration of the test actually
used). More attempts per scene measure the flip floor; for the comparison, a scene's
:math:`K` pairs are worth between one and :math:`K` independent pairs (its design effect),
so the one-pair price is what a scene is sure to buy.
"""

from __future__ import annotations

import math
import numbers
from functools import lru_cache

import numpy as np

from evalband._util.validate import as_count, check_probability
from evalband.errors import InvalidParameterError

__all__ = ["clustered_paired_power", "clustered_paired_sample_size"]

_N_MAX = 200_000


def _alpha(alpha: object, comparisons: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < float(alpha) < 1:
        raise InvalidParameterError(f"alpha must be in (0, 1); got {alpha!r}")
    m = as_count(comparisons, "comparisons")
    if m < 1:
        raise InvalidParameterError(f"comparisons must be >= 1; got {comparisons!r}")
    return float(alpha) / m


def _cells(p_a: object, p_b: object, discordant: object) -> tuple[float, float]:
    pa = check_probability(p_a, "p_a")
    pb = check_probability(p_b, "p_b")
    psi = check_probability(discordant, "discordant")
    gap = abs(pa - pb)
    upper = min(pa + pb, 2.0 - pa - pb)
    if psi < gap - 1e-12 or psi > upper + 1e-12:
        raise InvalidParameterError(
            f"discordant={psi!r} is impossible for p_a={pa!r}, p_b={pb!r}: the share of "
            f"pairs only one policy wins lies in [{gap:.4g}, {upper:.4g}]"
        )
    psi = min(max(psi, gap), upper)
    return max((psi + pa - pb) / 2.0, 0.0), max((psi - pa + pb) / 2.0, 0.0)


@lru_cache(maxsize=64)
def _thresholds(m_max: int, alpha: float) -> np.ndarray:
    """``j[m]``: the test rejects ``m`` discordant pairs exactly when ``min(b, m - b) <= j[m]``.

    Given ``m``, both p-values fall as ``j = min(b, m - b)`` falls, so ``j[m]`` is the
    largest ``j`` at which both are ``<= alpha`` (-1: never). Depends on ``alpha`` only.
    """
    from scipy.stats import binom, chi2

    m = np.arange(m_max + 1)
    mm = np.maximum(m, 1)
    # exact: largest j with 2 F(j; m, 1/2) <= alpha (normal guess, then corrected exactly)
    z = float(chi2.isf(alpha, 1)) ** 0.5
    j_exact = np.floor(m / 2.0 - z * np.sqrt(m) / 2.0).astype(np.int64)
    for _ in range(64):
        high = 2.0 * binom.cdf(j_exact, m, 0.5) > alpha
        if not high.any():
            break
        j_exact = np.where(high, j_exact - 1, j_exact)
    for _ in range(64):
        low = (2.0 * binom.cdf(j_exact + 1, m, 0.5) <= alpha) & (2 * (j_exact + 1) < m)
        if not low.any():
            break
        j_exact = np.where(low, j_exact + 1, j_exact)
    # score: (m - 2j)^2 / m >= chi2 quantile, checked on the p-value itself
    crit = float(chi2.isf(alpha, 1))
    j_score = np.floor((m - np.sqrt(m * crit)) / 2.0).astype(np.int64)
    for _ in range(2):
        ok = chi2.sf((m - 2.0 * j_score) ** 2 / mm, 1) <= alpha
        j_score = np.where(ok, j_score, j_score - 1)
    up = chi2.sf((m - 2.0 * (j_score + 1)) ** 2 / mm, 1) <= alpha
    j_score = np.where(up & (2 * (j_score + 1) < m), j_score + 1, j_score)
    j = np.minimum(np.minimum(j_exact, j_score), (m - 1) // 2)
    out = np.asarray(j, dtype=np.int64)
    out[0] = -1
    out.setflags(write=False)
    return out


def _reject_given_m(m_max: int, theta: float, alpha: float) -> np.ndarray:
    """``g[m]`` = P(the test rejects | m discordant pairs), m = 0..m_max."""
    from scipy.stats import binom

    size = 1 << max(6, (m_max).bit_length())  # cached per power of two
    j = _thresholds(size, alpha)[: m_max + 1]
    m = np.arange(m_max + 1)
    g = np.where(j >= 0, binom.cdf(j, m, theta) + binom.sf(m - j - 1, m, theta), 0.0)
    return np.asarray(g, dtype=np.float64)


def _power_from(g: np.ndarray, n: int, psi: float) -> float:
    from scipy.stats import binom

    m = np.arange(n + 1)
    return float(np.clip(np.dot(binom.pmf(m, n, psi), g[: n + 1]), 0.0, 1.0))


def clustered_paired_power(
    scenes: int,
    p_a: float,
    p_b: float,
    discordant: float,
    alpha: float = 0.05,
    *,
    comparisons: int = 1,
) -> float:
    r"""Exact power of the session's paired test with one matched pair per scene.

    Enumerates :math:`m \sim \mathrm{Bin}(n, \psi)` and :math:`b \mid m \sim
    \mathrm{Bin}(m, p_{10}/\psi)` and sums the probability of the outcomes that
    :func:`evalband.stats.clustered_paired_test` rejects at ``alpha / comparisons``
    (Bonferroni, the first step of Holm: a lower bound on the power of one comparison
    among ``comparisons`` under Holm).

    Args:
        scenes: scenes, one matched pair each.
        p_a: success rate of policy A.
        p_b: success rate of policy B.
        discordant: expected share of pairs won by exactly one policy.
        alpha: family-wise two-sided level.
        comparisons: comparisons in the family.

    Returns:
        The probability of rejecting.

    Raises:
        InvalidParameterError: bad rates, an impossible ``discordant``, bad levels.
        InvalidCountsError: ``scenes`` not a whole number.

    >>> round(clustered_paired_power(100, 0.6, 0.4, 0.4), 3)
    0.878
    >>> round(clustered_paired_power(100, 0.6, 0.4, 0.4, comparisons=6), 3)
    0.681
    """
    level = _alpha(alpha, comparisons)
    n = as_count(scenes, "scenes")
    p10, p01 = _cells(p_a, p_b, discordant)
    psi = p10 + p01
    if n == 0 or psi <= 0.0:
        return 0.0
    return _power_from(_reject_given_m(n, p10 / psi, level), n, psi)


def clustered_paired_sample_size(
    p_a: float,
    p_b: float,
    discordant: float,
    power: float = 0.8,
    alpha: float = 0.05,
    *,
    comparisons: int = 1,
) -> int:
    """Fewest scenes (one matched pair each) at which the exact power reaches ``power``.

    The smallest ``n`` with :func:`clustered_paired_power` ``>= power`` (exact power is a
    saw-tooth in ``n``; this is its first crossing, found by computing it at every ``n``
    from half the normal-approximation size, where the exact power is far below any target:
    the distribution of the discordant count is updated one pair at a time).

    Args:
        p_a: success rate of policy A.
        p_b: success rate of policy B (must differ from ``p_a``).
        discordant: expected share of pairs won by exactly one policy.
        power: target power in (0, 1).
        alpha: family-wise two-sided level.
        comparisons: comparisons in the family (the level is ``alpha / comparisons``).

    Returns:
        Scenes needed.

    Raises:
        InvalidParameterError: equal rates, bad inputs, or more than 200,000 scenes needed.

    >>> clustered_paired_sample_size(0.6, 0.4, 0.4)
    84
    """
    level = _alpha(alpha, comparisons)
    target = check_probability(power, "power", open_interval=True)
    p10, p01 = _cells(p_a, p_b, discordant)
    psi = p10 + p01
    if abs(p10 - p01) < 1e-12:
        raise InvalidParameterError("p_a and p_b must differ: equal rates need no sample size")
    from scipy.stats import norm

    z = float(norm.isf(level / 2.0) + norm.isf(1.0 - target))
    guess = z**2 * psi / (p10 - p01) ** 2  # Connor-type size: the first window to search
    cap = max(64, int(math.ceil(2.0 * guess)) + 64)
    from scipy.stats import binom

    # start below half the normal-approximation size (the exact power there is far below
    # any target), then add one pair at a time
    n = max(0, int(guess / 2.0) - 1)
    pmf = np.zeros(cap + 1)  # distribution of the discordant count after n pairs
    pmf[: n + 1] = binom.pmf(np.arange(n + 1), n, psi)
    while cap <= _N_MAX:
        g = _reject_given_m(cap, p10 / psi, level)
        if pmf.size < cap + 1:
            pmf = np.concatenate((pmf, np.zeros(cap + 1 - pmf.size)))
        while n < cap:
            step = pmf[: n + 1] * psi  # one more pair: discordant with probability psi
            pmf[: n + 1] *= 1.0 - psi
            pmf[1 : n + 2] += step
            n += 1
            if float(pmf[: n + 1] @ g[: n + 1]) >= target:
                return n
        cap *= 2
    raise InvalidParameterError(
        f"more than {_N_MAX} scenes would be needed for p_a={p_a!r}, p_b={p_b!r}"
    )
