"""Multiplicity adjustments: adjusted p-values across slices, policies and metrics.

Examining many comparisons and reporting the smallest p-value is how evaluations
invent findings (seed 004, section 5: one post-hoc grouping at an uncorrected
p = 0.07 among dozens examined). These functions return *adjusted* p-values: a
hypothesis is rejected at family level ``alpha`` exactly when its adjusted p-value
is ``<= alpha``. Every function keeps the input order, clips at 1, and returns
adjusted values that are monotone in the raw p-values (a smaller raw p-value never
gets a larger adjusted one).

- :func:`bonferroni` and :func:`holm` control the family-wise error rate (FWER)
  under any dependence between the tests; Holm is uniformly more powerful.
- :func:`benjamini_hochberg` controls the false discovery rate (FDR) for
  independent or positively dependent (PRDS) tests.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from evalband.errors import InvalidParameterError

__all__ = ["bonferroni", "holm", "holm_levels", "benjamini_hochberg"]


def _as_p_values(p_values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Validate a one-dimensional array of p-values in [0, 1] and return it as float64."""
    raw = np.asarray(p_values)
    if raw.ndim != 1:
        raise InvalidParameterError(
            f"p_values must be a one-dimensional sequence of p-values, got an array of "
            f"shape {raw.shape}; pass a list such as [0.01, 0.04, 0.2]"
        )
    if raw.size and raw.dtype.kind not in "iuf":
        raise InvalidParameterError(
            f"p_values must be numbers in [0, 1], got values of type {raw.dtype} "
            f"(first: {raw.flat[0]!r})"
        )
    arr = raw.astype(np.float64)
    if np.isnan(arr).any():
        where = int(np.flatnonzero(np.isnan(arr))[0])
        raise InvalidParameterError(
            f"p_values must not contain NaN, got NaN at position {where}; "
            "drop or recompute that comparison first"
        )
    bad = (arr < 0.0) | (arr > 1.0)
    if bad.any():
        where = int(np.flatnonzero(bad)[0])
        raise InvalidParameterError(
            f"p_values must lie in [0, 1], got {arr[where]!r} at position {where}"
        )
    return arr


def bonferroni(p_values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Bonferroni-adjusted p-values (family-wise error rate, any dependence).

    Source: the Bonferroni inequality, as the single-step procedure in Holm, S. (1979),
    "A simple sequentially rejective multiple test procedure", *Scandinavian Journal of
    Statistics* 6(2):65-70, section 1. For ``m`` tests::

        p_adj_i = min(1, m * p_i)

    Args:
        p_values: one-dimensional sequence of raw p-values in [0, 1].

    Returns:
        Adjusted p-values in the input order.

    Raises:
        InvalidParameterError: for NaN, values outside [0, 1], non-numbers, or a
            non-1-D input.

    >>> bonferroni([0.01, 0.04, 0.5]).tolist()
    [0.03, 0.12, 1.0]
    """
    p = _as_p_values(p_values)
    return np.minimum(1.0, p * p.size)


def holm(p_values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm step-down adjusted p-values (family-wise error rate, any dependence).

    Source: Holm, S. (1979), "A simple sequentially rejective multiple test procedure",
    *Scandinavian Journal of Statistics* 6(2):65-70 (the sequentially rejective
    Bonferroni procedure); adjusted-p-value form as in Wright, S. P. (1992), "Adjusted
    P-values for simultaneous inference", *Biometrics* 48:1005-1013. With the raw
    p-values sorted ``p_(1) <= ... <= p_(m)``::

        p_adj_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))

    Args:
        p_values: one-dimensional sequence of raw p-values in [0, 1].

    Returns:
        Adjusted p-values in the input order; never smaller than the raw values and
        never larger than Bonferroni's.

    Raises:
        InvalidParameterError: for NaN, values outside [0, 1], non-numbers, or a
            non-1-D input.

    >>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = _as_p_values(p_values)
    return _holm(p, np.argsort(p, kind="mergesort"))


def _holm(p: npt.NDArray[np.float64], order: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """:func:`holm` of validated p-values, given their stable ascending ``order``."""
    m = p.size
    if m == 0:
        return p.copy()
    factors = np.arange(m, 0, -1, dtype=np.float64)  # m - j + 1 for j = 1..m
    stepped = np.maximum.accumulate(p[order] * factors)
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(1.0, stepped)
    return adjusted


def holm_levels(
    p_values: npt.ArrayLike, alpha: float = 0.05
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """Holm's decisions with, for each hypothesis, the level of the step that decided it.

    Holm (1979) tests the sorted p-values ``p_(1) <= ... <= p_(m)`` against
    ``alpha / (m - j + 1)`` and stops at the first ``j*`` that fails. A hypothesis rejected
    at step ``j`` gets level ``alpha / (m - j + 1)``; every hypothesis not rejected gets the
    level of the step where the procedure stopped, ``alpha / (m - j* + 1)``. An interval
    that inverts the hypothesis's own test at that level therefore excludes the null value
    exactly when Holm rejects it (its p-value is at most that level exactly then): the
    printed interval, the adjusted p-value and the verdict agree. (Rejected hypotheses are
    also inside Bonferroni's ``alpha / m`` family only when they are decided at step 1;
    compatible simultaneous bounds for Holm are Strassburger & Bretz 2008, *Statistics in
    Medicine* 27:4914-4927; these are the per-step levels of the decisions, not
    simultaneous bounds.)

    Args:
        p_values: one-dimensional sequence of raw p-values in [0, 1].
        alpha: family-wise level in (0, 1).

    Returns:
        ``(adjusted, rejected, levels)`` in the input order: :func:`holm`'s adjusted
        p-values, ``adjusted <= alpha``, and each hypothesis's decision level (a raw p-value
        is ``<= level`` exactly when the hypothesis is rejected).

    Raises:
        InvalidParameterError: bad p-values or ``alpha`` outside (0, 1).

    >>> adjusted, rejected, levels = holm_levels([0.01, 0.04, 0.03, 0.005])
    >>> rejected.tolist(), levels.tolist()
    ([True, False, False, True], [0.016666666666666666, 0.025, 0.025, 0.0125])
    """
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise InvalidParameterError(f"alpha must be in (0, 1); got {alpha!r}")
    p = _as_p_values(p_values)
    order = np.argsort(p, kind="mergesort")
    adjusted = _holm(p, order)
    rejected = adjusted <= a
    m = p.size
    levels = [0.0] * m
    raw, decided = p.tolist(), rejected.tolist()
    stop: float | None = None
    for rank, i in enumerate(order.tolist()):
        step = a / (m - rank)
        if decided[i] and stop is None:
            levels[i] = max(step, raw[i])  # p <= level even at the last ulp
        else:
            stop = step if stop is None else stop
            levels[i] = min(stop, math.nextafter(raw[i], -math.inf))
    return adjusted, rejected, np.array(levels, dtype=np.float64)


def benjamini_hochberg(p_values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Benjamini-Hochberg step-up adjusted p-values (false discovery rate).

    Source: Benjamini, Y. & Hochberg, Y. (1995), "Controlling the false discovery rate:
    a practical and powerful approach to multiple testing", *Journal of the Royal
    Statistical Society, Series B* 57(1):289-300, section 3 (the step-up procedure);
    FDR control under positive regression dependence: Benjamini & Yekutieli (2001),
    *Annals of Statistics* 29(4):1165-1188. With ``p_(1) <= ... <= p_(m)``::

        p_adj_(i) = min(1, min_{j >= i} m * p_(j) / j)

    Args:
        p_values: one-dimensional sequence of raw p-values in [0, 1].

    Returns:
        Adjusted p-values (q-values in the sense of the BH procedure) in the input order.

    Raises:
        InvalidParameterError: for NaN, values outside [0, 1], non-numbers, or a
            non-1-D input.

    >>> benjamini_hochberg([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.02, 0.04, 0.04, 0.02]
    """
    p = _as_p_values(p_values)
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="mergesort")
    ranks = np.arange(1, m + 1, dtype=np.float64)
    raw = p[order] * m / ranks
    stepped = np.minimum.accumulate(raw[::-1])[::-1]
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(1.0, stepped)
    return adjusted
