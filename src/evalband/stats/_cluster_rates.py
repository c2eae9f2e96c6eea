r"""Rates over clusters: a proportion over scenes, and a change between two clustered samples.

* :func:`cluster_proportion_interval` -- a proportion over clustered trials (a flip rate
  over scenes or conditions, a success rate over scenes): Wilson's score interval on the
  Korn-Graubard effective sample size with a degrees-of-freedom correction.
* :func:`clustered_diff_unpaired` -- two independent clustered samples (a policy's rate in
  two sessions): the Miettinen-Nurminen score test and its compatible interval on
  design-effect adjusted counts (Rao & Scott 1992).

Both take one count per cluster; see :mod:`evalband.stats._clustered` for the tests that
compare policies within scenes and for how the intervals are made compatible with the tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from evalband._util.validate import check_confidence
from evalband.errors import InvalidCountsError, InvalidInputError, InvalidParameterError
from evalband.stats._clustered import IntArray, _as_counts, _invert, _normal_p
from evalband.stats._types import Difference, Interval, TestResult

__all__ = ["cluster_proportion_interval", "clustered_diff_unpaired"]


def _design_effect(k: IntArray, n: IntArray) -> tuple[float, float, int]:
    """``(estimate, design effect >= 1, clusters)`` of a ratio-of-sums proportion."""
    used = n > 0
    k, n = k[used].astype(np.float64), n[used].astype(np.float64)
    g = int(k.size)
    total = float(n.sum())
    p = float(k.sum()) / total
    if g < 2 or p <= 0.0 or p >= 1.0:
        return p, float(max(total / max(g, 1), 1.0)), g
    # linearised (ratio-estimator) variance with the G/(G-1) small-sample factor (CR1)
    var = g / (g - 1) * float(np.sum((k - p * n) ** 2)) / total**2
    deff = var / (p * (1.0 - p) / total)
    return p, max(deff, 1.0), g


def cluster_proportion_interval(
    successes: ArrayLike, trials: ArrayLike, confidence: float = 0.95
) -> Interval:
    r"""A proportion over clustered trials: Wilson on the effective sample size, t-corrected.

    The estimate is :math:`\hat p = \sum_g k_g / \sum_g n_g` over clusters :math:`g`. Its
    variance is the linearised (ratio-estimator) cluster variance
    :math:`\hat V = \frac{G}{G-1} \sum_g (k_g - \hat p n_g)^2 / (\sum_g n_g)^2`; the design
    effect :math:`D = \hat V / (\hat p(1-\hat p)/\sum n_g)` is floored at 1 and the
    effective sample size is :math:`n^* = \sum n_g / D` (Kish 1965, *Survey Sampling*;
    Korn & Graubard 1998, *Survey Methodology* 24:193-201). The band is Wilson's score
    interval for :math:`\hat p` at :math:`n^*` with the normal quantile replaced by
    Student's :math:`t_{G-1}` (Korn & Graubard's degrees-of-freedom correction; Dean &
    Pagano 2015, *J. Survey Statistics and Methodology* 3:484-503, found this modified
    Wilson among the best for clustered binary data). With :math:`\hat p \in \{0, 1\}` the
    design effect cannot be estimated and the mean cluster size is used (one cluster worth
    one trial: conservative). Never of zero width.

    For a flip rate, a cluster is a scene or condition, :math:`k_g` its flipped pairs and
    :math:`n_g` its pairs; pairs that share an attempt or a scene are then not counted as
    independent.

    Args:
        successes: per cluster, successes (e.g. flipped pairs).
        trials: per cluster, trials (e.g. pairs).
        confidence: two-sided level in (0, 1).

    Returns:
        An :class:`~evalband.stats.Interval` (method ``"cluster-wilson"``; ``k`` and ``n`` the
        totals).

    Raises:
        InvalidCountsError: bad counts, more successes than trials, or no trial.

    >>> ci = cluster_proportion_interval([1, 0, 1, 0, 1, 1, 0, 0], [1] * 8)
    >>> ci.estimate, round(ci.low, 3), round(ci.high, 3)
    (0.5, 0.167, 0.833)
    """
    from scipy.special import stdtrit

    level = check_confidence(confidence)
    k = _as_counts(successes, "successes")
    n = _as_counts(trials, "trials")
    if k.size != n.size:
        raise InvalidInputError(f"successes and trials differ in length: {k.size} vs {n.size}")
    if np.any(k > n):
        raise InvalidCountsError("a cluster has more successes than trials")
    total = int(n.sum())
    if total == 0:
        raise InvalidCountsError("no trials: every cluster has 0 trials")
    p, deff, g = _design_effect(k, n)
    n_eff = total / deff
    q = float(stdtrit(max(g - 1, 1), 1.0 - (1.0 - level) / 2.0))
    low, high = _wilson(p, n_eff, q)
    return Interval(p, low, high, "cluster-wilson", level, int(k.sum()), total)


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    z2 = z * z
    centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n)
    half = z / (1.0 + z2 / n) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# --------------------------------------------------------------------------- two samples


def _mn_p(k1: float, n1: float, k2: float, n2: float, df: int | None) -> Callable[[float], float]:
    """Miettinen-Nurminen score p-value of ``p1 - p2 = delta`` (effective counts allowed)."""
    from scipy.special import stdtr

    p1, p2 = k1 / n1, k2 / n2
    scale = (n1 + n2) / max(n1 + n2 - 1.0, 1e-12)

    def p(delta: float) -> float:
        t1, t2 = _mn_constrained(p1, n1, p2, n2, delta)
        var = (t1 * (1.0 - t1) / n1 + t2 * (1.0 - t2) / n2) * scale
        num = p1 - p2 - delta
        if var <= 1e-300:
            return 1.0 if abs(num) <= 1e-12 else 0.0
        z = abs(num) / math.sqrt(var)
        return _normal_p(z) if df is None else float(2.0 * stdtr(df, -z))

    return p


def _mn_constrained(
    p1: float, n1: float, p2: float, n2: float, delta: float
) -> tuple[float, float]:
    """Constrained MLE of (p1, p2) with p1 - p2 = delta (Farrington & Manning 1990)."""
    theta = n2 / n1
    a = 1.0 + theta
    b = -(1.0 + theta + p1 + theta * p2 + delta * (theta + 2.0))
    c = delta * delta + delta * (2.0 * p1 + theta + 1.0) + p1 + theta * p2
    d = -p1 * delta * (1.0 + delta)
    v = b**3 / (3.0 * a) ** 3 - b * c / (6.0 * a * a) + d / (2.0 * a)
    u2 = b * b / (3.0 * a) ** 2 - c / (3.0 * a)
    u = math.copysign(math.sqrt(max(u2, 0.0)), v) if v != 0.0 else math.sqrt(max(u2, 0.0))
    if u == 0.0:
        t1 = -b / (3.0 * a)
    else:
        w = (math.pi + math.acos(max(-1.0, min(1.0, v / u**3)))) / 3.0
        t1 = 2.0 * u * math.cos(w) - b / (3.0 * a)
    t1 = min(max(t1, max(0.0, delta)), min(1.0, 1.0 + delta))
    return t1, t1 - delta


def clustered_diff_unpaired(
    k_a: ArrayLike,
    n_a: ArrayLike,
    k_b: ArrayLike,
    n_b: ArrayLike,
    confidence: float = 0.95,
    *,
    equality_p: float | None = None,
) -> tuple[Difference, TestResult]:
    r"""Difference of two independent clustered proportions (one policy in two sessions).

    Each side's clusters (scenes) give its rate and its design effect
    (:func:`cluster_proportion_interval`'s :math:`D \ge 1`); the counts are divided by it
    (Rao, J. N. K. & Scott, A. J. (1992), "A simple method for the analysis of clustered
    binary data", *Biometrics* 48:577-585), and the Miettinen-Nurminen score test of
    :math:`p_A - p_B = \delta` (Miettinen & Nurminen 1985, *Statistics in Medicine*
    4:213-226; constrained MLE in closed form, Farrington & Manning 1990, *Statistics in
    Medicine* 9:1447-1454) is referred to Student's :math:`t` with
    :math:`\min(G_A, G_B) - 1` degrees of freedom. The interval inverts that test.

    ``equality_p`` (e.g. Fisher's exact p-value on the raw counts) joins the test of
    :math:`\delta = 0` only: the reported p-value is the larger of the two, and the interval
    reaches 0 exactly when that p-value exceeds ``1 - confidence`` (the hull of a valid
    confidence set, so still valid).

    Args:
        k_a: per cluster, successes of side A.
        n_a: per cluster, trials of side A.
        k_b: per cluster, successes of side B.
        n_b: per cluster, trials of side B.
        confidence: two-sided level in (0, 1).
        equality_p: another valid p-value of equal rates to combine at 0.

    Returns:
        ``(difference, test)``: the interval (method ``"clustered-score"``) and the test
        whose p-value it agrees with (``details``: ``score_p``, ``design_effect_a``,
        ``design_effect_b``, ``df``).

    Raises:
        InvalidCountsError: bad counts or a side without trials.
        InvalidParameterError: ``confidence`` outside (0, 1) or ``equality_p`` outside [0, 1].

    >>> d, t = clustered_diff_unpaired([2, 2, 1, 2], [2] * 4, [0, 1, 0, 0], [2] * 4)
    >>> d.estimate, round(t.p_value, 4), d.low < 0 < d.high
    (0.75, 0.0735, True)
    """
    level = check_confidence(confidence)
    ka, na = _as_counts(k_a, "k_a"), _as_counts(n_a, "n_a")
    kb, nb = _as_counts(k_b, "k_b"), _as_counts(n_b, "n_b")
    if ka.size != na.size or kb.size != nb.size:
        raise InvalidInputError("successes and trials need one count per cluster on each side")
    if np.any(ka > na) or np.any(kb > nb):
        raise InvalidCountsError("a cluster has more successes than trials")
    if na.sum() == 0 or nb.sum() == 0:
        raise InvalidCountsError("each side needs at least one trial")
    if equality_p is not None and not 0.0 <= float(equality_p) <= 1.0:
        raise InvalidParameterError(f"equality_p must be a p-value in [0, 1]; got {equality_p!r}")
    pa, deff_a, ga = _design_effect(ka, na)
    pb, deff_b, gb = _design_effect(kb, nb)
    df = max(min(ga, gb) - 1, 1)
    ea, eb = float(na.sum()) / deff_a, float(nb.sum()) / deff_b
    score = _mn_p(pa * ea, ea, pb * eb, eb, df)
    p_zero = score(0.0) if equality_p is None else max(score(0.0), float(equality_p))

    def p_of(delta: float) -> float:
        return p_zero if delta == 0.0 else score(delta)

    low, high = _invert(p_of, pa - pb, 1.0 - level)
    counts = {"k_a": int(ka.sum()), "n_a": int(na.sum()), "k_b": int(kb.sum()),
              "n_b": int(nb.sum())}
    diff = Difference(pa - pb, low, high, "clustered-score", level, False, counts)
    details = {"score_p": score(0.0), "design_effect_a": deff_a, "design_effect_b": deff_b,
               "df": df}
    return diff, TestResult(pa - pb, p_zero, "clustered-score", details)
