"""The decision procedure behind every per-slice verdict: exact tests, Holm, compatible intervals.

One procedure, stated once, so that a verdict keeps its error rate:

1. **One exact test per slice.** Matched episodes: the exact conditional McNemar (sign) test on
   the discordant pairs (McNemar 1947); independent episodes: Fisher's exact test (Fisher 1935).
   Both two-sided as *twice the smaller one-sided tail* ("central"), so that a rejection in one
   direction has probability at most ``alpha / 2`` under the null: a "regressed" slice and an
   "improved" slice each keep half the error budget.
2. **Holm across the family** (every slice of every candidate of one comparison; Holm 1979).
   Slice ``i`` is rejected exactly when its Holm-adjusted p is at most ``alpha``; under the global
   null the chance of any rejection in a given direction is at most ``alpha / 2`` (Holm's first
   step is Bonferroni's).
3. **A compatible interval.** Each slice's interval is at the level Holm used for that slice:
   ``1 - alpha / (m - r + 1)`` for the slice rejected at step ``r``, ``1 - alpha / (m - k)`` for
   every slice not rejected when Holm stopped after ``k`` rejections (the level of the step that
   stopped it). Matched pairs: the conditional exact interval of
   :mod:`evalband.stats._conditional` (Clopper-Pearson for the share of candidate-only pairs
   among the discordant ones -- the inversion of the exact McNemar test -- times the
   Clopper-Pearson range of the discordance), which excludes 0 exactly when the exact McNemar
   test rejects and keeps its coverage under one-directional discordance; independent arms:
   Miettinen & Nurminen's 1985 score interval, made *compatible* with Fisher's test: where the
   exact test does not reject 0 at that level, the interval is extended to reach 0; where it
   rejects (the score interval then excluded 0 in every table we enumerated: up to 37 per arm,
   levels 0.05 to 0.0025) it would be cut just short of 0. So "the interval excludes 0" holds
   exactly when "Holm rejects", and the printed p, adjusted p and interval come from one
   procedure.

Sources: McNemar, Q. (1947) *Psychometrika* 12:153-157; Fisher, R. A. (1935) *JRSS* 98:39-82;
Holm, S. (1979) *Scand. J. Statist.* 6:65-70; Clopper, C. J. & Pearson, E. S. (1934)
*Biometrika* 26:404-413; Newcombe, R. G. (1998b) *Stat. Med.* 17:2635-2650;
Miettinen, O. & Nurminen, M. (1985) *Stat. Med.* 4:213-226 (closed-form restricted MLE of
Farrington, C. P. & Manning, G. (1990) *Stat. Med.* 9:1447-1454); for the aggregate, the MOVER
of Zou, G. Y. & Donner, A. (2008) *Stat. Med.* 27:1693-1702 and Zou, G. Y., Huang, W. & Zhang, X.
(2009) *Comput. Stat. Data Anal.* 53:3755-3764 (linear functions of proportions), with Newcombe's
(1998b, *Stat. Med.* 17:2635-2650) correlation term for matched pairs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalband.stats._stratified import stratified_difference, wilson_cc
from evalband.stats._types import Difference

__all__ = [
    "HolmDecision",
    "holm_decisions",
    "paired_exact_p",
    "paired_exact_ps",
    "unpaired_exact_p",
    "score_interval_unpaired",
    "compatible_difference",
    "stratified_difference",
    "wilson_cc",
    "exact_power",
    "detectable_drop",
    "episodes_for_drop",
]

_SHORT = 1e-9  # how far short of 0 an interval is cut when the exact test rejects
PAIRED_INTERVAL = ("conditional exact (clopper-pearson on the discordant pairs; compatible with "
                   "mcnemar-exact)")
"""The method of the matched-pair slice interval (:mod:`evalband.stats._conditional`)."""


# --------------------------------------------------------------------------- exact tests


def paired_exact_p(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p: twice the smaller binomial tail of the discordant pairs.

    Equal to :func:`evalband.stats.mcnemar` with ``method="exact"``.

    >>> round(paired_exact_p(1, 7), 4)
    0.0703
    >>> paired_exact_p(0, 0)
    1.0
    """
    return paired_exact_ps([a_only], [b_only])[0]


def paired_exact_ps(a_only: Sequence[int], b_only: Sequence[int]) -> list[float]:
    """:func:`paired_exact_p` of many tables at once: one binomial call for all of them.

    (The binomial tail is elementwise, so each p is the same float as one table's alone.)

    >>> [round(p, 4) for p in paired_exact_ps([1, 0, 3], [7, 0, 3])]
    [0.0703, 1.0, 1.0]
    """
    if len(a_only) != len(b_only):
        raise ValueError(f"{len(a_only)} a_only counts but {len(b_only)} b_only counts")
    m: list[int] = []
    low: list[int] = []
    for i in range(len(a_only)):  # one pass (each p elementwise, as before)
        a, b = int(a_only[i]), int(b_only[i])
        m.append(a + b)
        low.append(a if a < b else b)
    out: list[float] = []
    for i, tail in enumerate(_bdtr()(low, m, 0.5).tolist()):
        double = 2.0 * tail
        out.append((double if double < 1.0 else 1.0) if m[i] else 1.0)  # min(1.0, double)
    return out


_SPECIAL: dict[str, Any] = {}


def _bdtr() -> Any:
    """``scipy.special.bdtr``, imported on first use and kept (no import statement per call)."""
    found = _SPECIAL.get("bdtr")
    if found is None:
        from scipy.special import bdtr

        found = _SPECIAL["bdtr"] = bdtr
    return found


def _log_choose(n: int, k: NDArray[np.int64]) -> NDArray[np.float64]:
    from scipy.special import gammaln

    return np.asarray(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1), dtype=np.float64)


def unpaired_exact_p(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """Two-sided central Fisher exact p: twice the smaller hypergeometric tail of ``k_a``.

    Conditional on the total number of successes, ``k_a`` is hypergeometric under equal
    rates; the p-value doubles the tail on the observed side (capped at 1).

    >>> p = unpaired_exact_p(9, 10, 3, 10)
    >>> round(p, 4)
    0.0198
    >>> unpaired_exact_p(5, 10, 5, 10)
    1.0
    """
    total = k_a + k_b
    lo, hi = max(0, total - n_b), min(n_a, total)
    x = np.arange(lo, hi + 1, dtype=np.int64)
    log_h = _log_choose(n_a, x) + _log_choose(n_b, total - x)
    h = np.exp(log_h - log_h.max())
    h /= h.sum()
    i = k_a - lo
    lower = float(h[: i + 1].sum())
    upper = float(h[i:].sum())
    return min(1.0, 2.0 * min(lower, upper))


# --------------------------------------------------------------------------- Holm


@dataclass(frozen=True)
class HolmDecision:
    """Holm's step-down procedure applied at level ``alpha``.

    Attributes:
        p_adjusted: Holm-adjusted p-values, input order.
        levels: the per-hypothesis test level Holm used (``alpha / (m - r + 1)`` for the one
            rejected at step ``r``; ``alpha / (m - k)`` for those left when it stopped after
            ``k`` rejections); an interval at confidence ``1 - level`` is compatible.
        rejected: ``p_adjusted <= alpha``.
        alpha: the family-wise level.
    """

    p_adjusted: NDArray[np.float64]
    levels: NDArray[np.float64]
    rejected: NDArray[np.bool_]
    alpha: float


def holm_decisions(p_values: Sequence[float] | NDArray[np.float64], alpha: float) -> HolmDecision:
    """Holm's procedure with the compatible per-hypothesis levels.

    >>> d = holm_decisions([0.01, 0.04, 0.03, 0.005], 0.05)
    >>> d.rejected.tolist(), d.levels.tolist()
    ([True, False, False, True], [0.016666666666666666, 0.025, 0.025, 0.0125])
    """
    from evalband.stats._multiplicity import holm_levels

    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        empty = np.empty(0, dtype=np.float64)
        return HolmDecision(empty, empty.copy(), np.empty(0, dtype=np.bool_), float(alpha))
    adjusted, rejected, levels = holm_levels(p, alpha)
    return HolmDecision(adjusted, levels, rejected, float(alpha))


# --------------------------------------------------------------------------- score intervals


def _mn_restricted(p_a: float, p_b: float, n_a: int, n_b: int, delta: float) -> tuple[float, float]:
    """Restricted MLE of ``(p_a, p_b)`` under ``p_a - p_b = delta`` (Farrington & Manning 1990)."""
    from evalband.stats._cluster_rates import _mn_constrained

    return _mn_constrained(p_a, float(n_a), p_b, float(n_b), delta)


def _mn_gap(delta: float, k_a: int, n_a: int, k_b: int, n_b: int, z: float) -> float:
    """``(D - delta)**2 - z**2 var(delta)``: <= 0 inside the Miettinen-Nurminen interval."""
    p_a, p_b = k_a / n_a, k_b / n_b
    ra, rb = _mn_restricted(p_a, p_b, n_a, n_b, delta)
    total = n_a + n_b
    var = (ra * (1.0 - ra) / n_a + rb * (1.0 - rb) / n_b) * total / (total - 1.0)
    return (p_a - p_b - delta) ** 2 - z * z * max(var, 0.0)


def score_interval_unpaired(
    k_a: int, n_a: int, k_b: int, n_b: int, confidence: float = 0.95
) -> Difference:
    """Miettinen & Nurminen's (1985) score interval for ``p_a - p_b`` (independent arms).

    The set of ``delta`` whose score statistic, with the variance at the restricted maximum
    likelihood estimate under ``p_a - p_b = delta`` and the ``N / (N - 1)`` factor, stays
    within the normal quantile.

    >>> d = score_interval_unpaired(56, 70, 48, 80)
    >>> round(d.low, 4), round(d.high, 4)
    (0.0528, 0.3382)
    """
    from evalband.stats._normal import z_value
    from evalband.stats._roots import brentq

    z = z_value(confidence)
    est = k_a / n_a - k_b / n_b

    def gap(delta: float) -> float:
        return _mn_gap(delta, k_a, n_a, k_b, n_b, z)

    def limit(edge: float) -> float:
        if est == edge or gap(edge) <= 0.0:
            return edge
        inner, step = est, edge - est
        while gap(inner) >= 0.0 and abs(step) > 1e-300:
            step /= 2.0
            inner = est + step
        if gap(inner) >= 0.0:
            return est
        return brentq(gap, min(inner, edge), max(inner, edge), xtol=1e-14)

    return Difference(
        estimate=est,
        low=max(-1.0, limit(-1.0)),
        high=min(1.0, limit(1.0)),
        method="miettinen-nurminen-score",
        confidence=float(confidence),
        paired=False,
        counts={"k_a": k_a, "n_a": n_a, "k_b": k_b, "n_b": n_b},
    )


def compatible_difference(
    counts: Mapping[str, int], *, paired: bool, confidence: float, p_value: float
) -> Difference:
    """The score interval made compatible with the exact test whose p is ``p_value``.

    ``counts``: ``both, a_only, b_only, neither`` for matched pairs; ``k_a, n_a, k_b, n_b``
    otherwise. The interval at ``confidence`` excludes 0 exactly when
    ``p_value <= 1 - confidence`` (see the module docstring).

    >>> d = compatible_difference({"both": 20, "a_only": 12, "b_only": 2, "neither": 16},
    ...                           paired=True, confidence=0.95, p_value=paired_exact_p(12, 2))
    >>> d.low > 0, d.method == PAIRED_INTERVAL
    (True, True)
    """
    if paired:
        from evalband.stats._conditional import conditional_paired_limits

        b, c = int(counts["a_only"]), int(counts["b_only"])
        n = int(counts["both"]) + b + c + int(counts["neither"])
        estimate = (b - c) / n if n else 0.0
        low, high = conditional_paired_limits(b, c, n, float(confidence))
        name = PAIRED_INTERVAL
    else:
        base = score_interval_unpaired(counts["k_a"], counts["n_a"], counts["k_b"], counts["n_b"],
                                       confidence)
        name = "miettinen-nurminen-score (compatible with fisher-exact)"
        estimate, low, high = base.estimate, base.low, base.high
    rejects = p_value <= 1.0 - confidence
    if not rejects:
        low, high = min(low, 0.0), max(high, 0.0)
    elif low <= 0.0 <= high:  # the exact test rejects where the interval does not
        if estimate > 0:
            low = min(_SHORT, high)
        else:
            high = max(-_SHORT, low)
    return Difference(estimate, min(low, estimate), max(high, estimate), name,
                      float(confidence), paired, dict(counts))


# --------------------------------------------------------------------------- power


def _fisher_central_power(n_a: int, n_b: int, p_a: float, p_b: float, alpha: float) -> float:
    """Exact power of the two-sided central Fisher test (enumeration over both binomials)."""
    from scipy.special import xlog1py, xlogy

    from evalband.stats._power import _support

    xa = np.arange(n_a + 1)
    xb = np.arange(n_b + 1)
    fa = np.exp(_log_choose(n_a, xa) + xlogy(xa, p_a) + xlog1py(n_a - xa, -p_a))
    fb = np.exp(_log_choose(n_b, xb) + xlogy(xb, p_b) + xlog1py(n_b - xb, -p_b))
    lo_a, hi_a = _support(fa)
    lo_b, hi_b = _support(fb)
    total = 0.0
    for t in range(lo_a + lo_b, hi_a + hi_b + 1):
        lo, hi = max(0, t - n_b), min(n_a, t)
        x = np.arange(lo, hi + 1)
        log_h = _log_choose(n_a, x) + _log_choose(n_b, t - x)
        h = np.exp(log_h - log_h.max())
        h /= h.sum()
        lower = np.cumsum(h)
        upper = np.cumsum(h[::-1])[::-1]
        reject = 2.0 * np.minimum(lower, upper) <= alpha * (1.0 + 1e-12)
        keep = reject & (x >= lo_a) & (x <= hi_a) & (t - x >= lo_b) & (t - x <= hi_b)
        if keep.any():
            xs = x[keep]
            total += float(np.sum(fa[xs] * fb[t - xs]))
    return min(1.0, max(0.0, total))


@lru_cache(maxsize=64)
def _mcnemar_critical(alpha: float, size: int) -> NDArray[np.int64]:
    """``c_m`` for ``m = 0..size``: the largest ``b`` with ``2 P[Bin(m, 1/2) <= b] <= alpha``.

    -1 where no outcome rejects. Cached per level (the sizes grow in powers of two).
    """
    from scipy.special import bdtr, ndtri

    m = np.arange(size + 1, dtype=np.int64)
    z = float(-ndtri(alpha / 2.0))
    c = np.floor(m / 2.0 - z * np.sqrt(m) / 2.0).astype(np.int64)
    c = np.clip(c, -1, None)
    for _ in range(64):  # walk each guess to the exact boundary
        ok_c = np.where(c >= 0, 2.0 * bdtr(np.maximum(c, 0), m, 0.5) <= alpha, True)
        up = 2.0 * bdtr(c + 1, m, 0.5) <= alpha
        step = np.where(~ok_c, -1, np.where(up & (c + 1 < m / 2.0), 1, 0))
        if not step.any():
            break
        c = c + step
    return c


def _mcnemar_power(n: int, p10: float, p01: float, alpha: float) -> float:
    """Exact power of the two-sided exact McNemar test (sum over the discordant count)."""
    from scipy.special import bdtr, bdtrc, gammaln, xlog1py, xlogy

    psi = min(1.0, p10 + p01)
    if psi <= 0.0:
        return 0.0
    size = 1 << max(4, int(n).bit_length())
    sd = math.sqrt(n * psi * (1.0 - psi))
    lo = max(0, int(n * psi - 9.0 * sd - 2))
    hi = min(n, int(n * psi + 9.0 * sd + 2))
    crit = _mcnemar_critical(float(alpha), size)[lo : hi + 1]
    m = np.arange(lo, hi + 1, dtype=np.int64)
    weight = np.exp(gammaln(n + 1) - gammaln(m + 1) - gammaln(n - m + 1)
                    + xlogy(m, psi) + xlog1py(n - m, -psi))
    share = min(max(p10 / psi, 0.0), 1.0)
    has = crit >= 0
    c = np.maximum(crit, 0)
    reject = np.where(has, bdtr(c, m, share) + bdtrc(m - c - 1, m, share), 0.0)
    return float(np.clip(np.sum(weight * reject), 0.0, 1.0))


def exact_power(
    n: int, p_base: float, drop: float, alpha: float, *, paired: bool, discordant: float = 0.0
) -> float:
    """Exact power of the printed test to reject when the candidate's rate is ``drop`` lower.

    Paired: the exact McNemar test with ``discordant`` = P(pair disagrees) (at least ``drop``);
    unpaired: the central Fisher test with ``n`` episodes per arm.

    >>> round(exact_power(100, 0.8, 0.2, 0.05, paired=True, discordant=0.3), 3)
    0.961
    """
    p_c = p_base - drop
    if paired:
        psi = min(1.0, max(discordant, drop))
        p01 = (psi + drop) / 2.0  # baseline only succeeds
        p10 = (psi - drop) / 2.0  # candidate only succeeds
        return _mcnemar_power(int(n), p10, p01, alpha)
    return _fisher_central_power(int(n), int(n), p_c, p_base, alpha)


def detectable_drop(
    n: int, p_base: float, alpha: float, *, paired: bool, discordant: float = 0.0,
    power: float = 0.8,
) -> float | None:
    """The smallest drop from ``p_base`` the printed test catches with ``power`` at ``n``.

    None when no drop down to a rate of 0 reaches the power.

    >>> round(detectable_drop(100, 0.9, 0.05, paired=False), 2)
    0.16
    """
    if exact_power(n, p_base, p_base, alpha, paired=paired, discordant=discordant) < power:
        return None
    lo, hi = 0.0, p_base
    for _ in range(30):
        mid = (lo + hi) / 2.0
        if exact_power(n, p_base, mid, alpha, paired=paired, discordant=discordant) >= power:
            hi = mid
        else:
            lo = mid
        if hi - lo < 5e-4:
            break
    return hi


def episodes_for_drop(
    p_base: float, drop: float, alpha: float, *, paired: bool, discordant: float = 0.0,
    power: float = 0.8, limit: int = 20_000,
) -> int | None:
    """Episodes per arm (pairs when paired) for the printed test to catch ``drop`` with ``power``.

    The exact power is not monotone in ``n`` (discreteness); the smallest ``n`` found by
    bisection on the exact power is returned (None when beyond ``limit``).

    >>> episodes_for_drop(0.8, 0.2, 0.05, paired=True, discordant=0.3)
    61
    """
    if drop <= 0 or drop > p_base:
        return None

    def ok(n: int) -> bool:
        return exact_power(n, p_base, drop, alpha, paired=paired, discordant=discordant) >= power

    from evalband.stats._power import sample_size

    try:  # the normal approximation brackets the exact answer
        guess = sample_size(p_base, p_base - drop, power, alpha, paired=paired,
                            discordant=max(discordant, drop) if paired else None)
    except Exception:  # noqa: BLE001 - an unusable guess only costs a longer search
        guess = 16
    hi = max(4, int(guess * 0.9))
    while not ok(hi):
        hi *= 2
        if hi > limit:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
