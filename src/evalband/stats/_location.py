"""Medians with distribution-free intervals: one run's, and of matched differences.

A skewed metric (a return with rare large values), an ordinal score (levels 0-3) or a
progress score (0-100) is summarised by its **median**, whose order-statistic interval is
exact for every distribution -- no symmetry, no large sample (Thompson 1936; Hollander, Wolfe
& Chicken 2014, section 3.6). With the sorted values ``x_(1) <= ... <= x_(n)`` and ``B ~
Binomial(n, 1/2)``, ``k`` the largest integer with ``P(B <= k - 1) <= (1 - c) / 2``::

    [x_(k), x_(n - k + 1)]   covers the median with probability >= c

(closed, so ties and discrete values only make it more conservative). For matched episodes
the same interval of the **differences** ``candidate - baseline`` covers their median; its
test is the **sign test**. The two-sided p-value is the interval inverted:

    p = min(1, 2 P(B <= #{d <= 0}), 2 P(B <= #{d >= 0}))

so that the interval at ``1 - a`` excludes 0 exactly when ``p <= a`` (the binomial cdf is
strictly increasing on ``0..n``). Without zero differences it is the exact sign test
(``scipy.stats.binomtest(#{d > 0}, n)``); a zero difference counts against both directions,
so the p-value is never below that of the sign test which drops the zeros (it is
conservative there) and still agrees with the interval. Under two identical policies the matched
differences have median 0, so the test's level holds exactly (discrete: at most ``a``).

With ``k = 0`` (fewer than 6 values at 95%) no order statistic reaches the level: the
interval is the whole line.

References:
    Thompson, W. R. (1936), "On confidence ranges for the median and other expectation
    distributions for populations of unknown distribution form", *Ann. Math. Statist.*
    7:122-128.
    Hollander, M., Wolfe, D. A. & Chicken, E. (2014), *Nonparametric Statistical Methods*,
    3rd ed., sections 3.4-3.6 (the sign test and its interval).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from evalband._util.validate import check_confidence
from evalband.errors import InvalidInputError
from evalband.stats._types import Difference, Interval

__all__ = ["MedianDifference", "median_interval", "median_difference", "order_rank"]

MEDIAN = "order-statistic-median"
"""The method of one run's median interval."""
SIGN = "sign-test-median"
"""The method of the matched differences' median interval (and its sign test)."""


def _data(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} must be finite numbers; got a NaN or an infinity")
    return arr


def _cdf(n: int) -> NDArray[np.float64]:
    """``P(B <= t)`` for ``t = 0..n``, ``B ~ Binomial(n, 1/2)``."""
    return np.asarray(special.bdtr(np.arange(n + 1), n, 0.5), dtype=np.float64)


def order_rank(n: int, confidence: float) -> int:
    """``k``: the interval is ``[x_(k), x_(n - k + 1)]`` (0: no order statistic reaches it).

    >>> order_rank(20, 0.95), order_rank(5, 0.95)
    (6, 0)
    """
    level = check_confidence(confidence)
    return int(np.searchsorted(_cdf(n), (1.0 - level) / 2.0, side="right"))


def _bounds(s: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    k = order_rank(int(s.size), confidence)
    if k == 0:
        return -math.inf, math.inf
    return float(s[k - 1]), float(s[s.size - k])


@dataclass(frozen=True)
class MedianDifference:
    """The median of matched differences, its exact interval and its sign test.

    Follows :class:`evalband.stats.MeanDifference`: ``estimate`` the median difference,
    ``p_value`` the inverted interval's (the module docstring), ``interval_at`` at any level.
    """

    estimate: float
    p_value: float
    n: int
    sorted_values: tuple[float, ...]
    method: str = SIGN
    paired: bool = True

    def interval_at(self, confidence: float) -> Difference:
        """The order-statistic interval of the median difference at ``confidence``."""
        low, high = _bounds(np.asarray(self.sorted_values), confidence)
        return Difference(self.estimate, low, high, self.method, confidence, True,
                          {"n": self.n})


def median_difference(differences: ArrayLike) -> MedianDifference:
    """The median of matched differences with its exact interval and sign test.

    Args:
        differences: ``candidate - baseline`` per matched pair.

    Raises:
        InvalidInputError: fewer than 2 differences, or one that is not a finite number.

    >>> d = median_difference([0.4, 1.2, -0.1, 0.8, 2.5, 0.3, 0.9, 0.2, 1.1, 0.6])
    >>> d.estimate, round(d.p_value, 4)
    (0.7, 0.0215)
    >>> i = d.interval_at(0.95)
    >>> i.low, i.high
    (0.2, 1.2)
    """
    d = np.sort(_data(differences, "differences"))
    if d.size < 2:
        raise InvalidInputError(f"a sign test needs at least 2 pairs; got {d.size}")
    cdf = _cdf(int(d.size))
    below = int(np.count_nonzero(d <= 0.0))
    above = int(np.count_nonzero(d >= 0.0))
    p = min(1.0, 2.0 * float(min(cdf[below], cdf[above])))
    return MedianDifference(float(np.median(d)), p, int(d.size), tuple(d.tolist()))


def median_interval(values: ArrayLike, *, confidence: float = 0.95) -> Interval:
    """One run's median with its exact order-statistic interval.

    >>> i = median_interval([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0])
    >>> i.estimate, i.low, i.high, i.method
    (3.5, 1.0, 6.0, 'order-statistic-median')
    """
    level = check_confidence(confidence)
    x = np.sort(_data(values, "values"))
    if x.size == 0:
        raise InvalidInputError("a median needs at least 1 value; got none")
    low, high = _bounds(x, level)
    return Interval(float(np.median(x)), low, high, MEDIAN, level, n=int(x.size))
