"""Confidence intervals for one binomial proportion (a success rate ``k / n``).

Five methods, one implementation each. :func:`interval_bounds` evaluates a method's
formula for a whole array of success counts at once (the coverage audit needs every
``k = 0..n``); :func:`interval` is the scalar front door and calls the same code.

Methods (``z`` is the two-sided standard-normal quantile, ``alpha = 1 - confidence``,
``B(q; a, b)`` the ``q`` quantile of a Beta(a, b) distribution):

``wilson`` (default)
    Wilson (1927); Newcombe (1998), method 3. Inverts the score test.
``clopper-pearson``
    Clopper & Pearson (1934). Inverts two one-sided exact binomial tests: conservative.
``jeffreys``
    Equal-tailed Beta(k + 1/2, n - k + 1/2) posterior interval; Brown, Cai & DasGupta
    (2001), section 4.1.2, including their boundary convention.
``agresti-coull``
    Agresti & Coull (1998): add ``z**2 / 2`` successes and failures, then Wald.
``wald``
    Laplace's textbook interval: kept only to show why not (see :func:`interval`).

Every bound is clipped to [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalband._util.validate import (
    as_count,
    check_choice,
    check_confidence,
    check_k_n,
)
from evalband.errors import InvalidCountsError
from evalband.stats._normal import z_value
from evalband.stats._types import Interval

__all__ = ["INTERVAL_METHODS", "interval", "interval_bounds", "intervals"]

INTERVAL_METHODS: tuple[str, ...] = (
    "wilson",
    "clopper-pearson",
    "jeffreys",
    "agresti-coull",
    "wald",
)
"""Names accepted by :func:`interval` and :func:`interval_bounds` (``_`` may stand for ``-``)."""

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    FloatArray = NDArray[np.float64]
    _Bounds = tuple[FloatArray, FloatArray]
    _Trials = int | FloatArray  # one n per k or for every k (never 0: see interval_bounds)

# The closed forms (Wilson, Agresti-Coull, Wald) run on arrays (interval_bounds) and on one
# float (interval: no numpy import for a single band); these two helpers are the only
# operations that differ, and give the same bits on both.


def _sqrt(x: Any) -> Any:
    if isinstance(x, float):
        return math.sqrt(x)
    import numpy as np

    return np.sqrt(x)


def _where(condition: Any, yes: float, no: Any) -> Any:
    if isinstance(condition, bool):
        return yes if condition else no
    import numpy as np

    return np.where(condition, yes, no)


_CLOSED_FORMS = ("wilson", "agresti-coull", "wald")


def _wilson(k: FloatArray, n: _Trials, confidence: float) -> _Bounds:
    # Wilson (1927) eq. for the score interval, written in counts:
    #   (k + z^2/2 -+ z * sqrt(k (n - k) / n + z^2 / 4)) / (n + z^2)
    z = z_value(confidence)
    z2 = z * z
    center = k + z2 / 2.0
    half = z * _sqrt(k * (n - k) / n + z2 / 4.0)
    low = (center - half) / (n + z2)
    high = (center + half) / (n + z2)
    # Exact in real arithmetic: the lower bound is 0 at k = 0 and the upper is 1 at k = n.
    low = _where(k == 0, 0.0, low)
    high = _where(k == n, 1.0, high)
    return low, high


def _beta_bounds(
    k: FloatArray,
    n: _Trials,
    confidence: float,
    low_shape: tuple[FloatArray, FloatArray],
    high_shape: tuple[FloatArray, FloatArray],
) -> _Bounds:
    # [B(alpha/2; *low_shape), B(1 - alpha/2; *high_shape)], with the lower bound 0 at
    # k = 0 and the upper bound 1 at k = n. Beta shapes must be > 0: the edge cells whose
    # shape would be 0 are evaluated at a dummy shape 1 and then overwritten.
    import numpy as np
    from scipy import special

    tail = (1.0 - confidence) / 2.0
    a_low = np.where(k == 0, 1.0, low_shape[0])
    b_high = np.where(k == n, 1.0, high_shape[1])
    low = np.asarray(special.betaincinv(a_low, low_shape[1], tail), dtype=np.float64)
    high = np.asarray(special.betainccinv(high_shape[0], b_high, tail), dtype=np.float64)
    return np.where(k == 0, 0.0, low), np.where(k == n, 1.0, high)


def _clopper_pearson(k: FloatArray, n: _Trials, confidence: float) -> _Bounds:
    # Clopper & Pearson (1934): [B(alpha/2; k, n-k+1), B(1-alpha/2; k+1, n-k)]
    return _beta_bounds(k, n, confidence, (k, n - k + 1.0), (k + 1.0, n - k))


def _jeffreys(k: FloatArray, n: _Trials, confidence: float) -> _Bounds:
    # Brown, Cai & DasGupta (2001) 4.1.2: Beta(k+1/2, n-k+1/2) equal-tailed quantiles,
    # with L(0) = 0 and U(n) = 1.
    shape = (k + 0.5, n - k + 0.5)
    return _beta_bounds(k, n, confidence, shape, shape)


def _agresti_coull(k: FloatArray, n: _Trials, confidence: float) -> _Bounds:
    # Agresti & Coull (1998); general-z form of Brown, Cai & DasGupta (2001), eq. (8):
    #   n~ = n + z^2, p~ = (k + z^2/2) / n~, p~ -+ z sqrt(p~ (1 - p~) / n~)
    z = z_value(confidence)
    n_tilde = n + z * z
    p_tilde = (k + z * z / 2.0) / n_tilde
    half = z * _sqrt(p_tilde * (1.0 - p_tilde) / n_tilde)
    return p_tilde - half, p_tilde + half


def _wald(k: FloatArray, n: _Trials, confidence: float) -> _Bounds:
    # p^ -+ z sqrt(p^ (1 - p^) / n)
    z = z_value(confidence)
    p_hat = k / n
    half = z * _sqrt(p_hat * (1.0 - p_hat) / n)
    return p_hat - half, p_hat + half


_FORMULAS: dict[str, Callable[[FloatArray, _Trials, float], _Bounds]] = {
    "wilson": _wilson,
    "clopper-pearson": _clopper_pearson,
    "jeffreys": _jeffreys,
    "agresti-coull": _agresti_coull,
    "wald": _wald,
}


def _check_method(method: str) -> str:
    return check_choice(str(method).replace("_", "-"), "method", INTERVAL_METHODS,
                        argument=True)


def _check_k_array(k: ArrayLike, n: int | FloatArray) -> FloatArray:
    import numpy as np

    try:
        k_arr = np.asarray(k, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidCountsError(
            f"k (successes) must be whole numbers of episodes, got {k!r}"
        ) from exc
    if np.asarray(k).dtype == np.bool_:
        raise InvalidCountsError("k (successes) must be whole numbers, got booleans")
    if not np.all(np.isfinite(k_arr)):
        raise InvalidCountsError("k (successes) must be finite whole numbers, got NaN or inf")
    if not np.all(k_arr == np.floor(k_arr)):
        raise InvalidCountsError("k (successes) must be whole numbers, got a fractional value")
    if isinstance(n, np.ndarray):
        k_arr, n_b = np.broadcast_arrays(k_arr, n)
        if k_arr.size and (k_arr.min() < 0 or np.any(k_arr > n_b)):
            at = int(np.argmax((k_arr < 0) | (k_arr > n_b)))
            raise InvalidCountsError(
                f"k (successes) must lie in 0..n for each count, got k={k_arr.flat[at]:g} "
                f"with n={n_b.flat[at]:g}"
            )
        return np.array(k_arr)
    if k_arr.size and (k_arr.min() < 0 or k_arr.max() > n):
        raise InvalidCountsError(
            f"k (successes) must lie in 0..n={n}, got values from {k_arr.min():g} "
            f"to {k_arr.max():g}"
        )
    return k_arr


def _check_n_array(n: ArrayLike) -> FloatArray:
    """Trials per count as floats: whole numbers >= 0 (the scalar rules of ``as_count``)."""
    import numpy as np

    raw = np.asarray(n)
    if raw.dtype == np.bool_ or raw.dtype.kind not in "iuf":
        raise InvalidCountsError(
            f"n (trials) must be whole numbers of episodes, got {raw.dtype} values"
        )
    n_arr = raw.astype(np.float64)
    if not np.all(np.isfinite(n_arr)) or not np.all(n_arr == np.floor(n_arr)):
        raise InvalidCountsError("n (trials) must be finite whole numbers of episodes")
    if n_arr.size and n_arr.min() < 0:
        raise InvalidCountsError(f"n (trials) must be >= 0, got {n_arr.min():g}")
    return n_arr


def interval_bounds(
    k: ArrayLike,
    n: int | ArrayLike,
    method: str = "wilson",
    confidence: float = 0.95,
    *,
    allow_empty: bool = False,
) -> tuple[FloatArray, FloatArray]:
    """Lower and upper confidence bounds for many success counts at once.

    The vectorised core behind :func:`interval` and the coverage audit: one formula
    per method, evaluated for every element of ``k`` at once. The formulas are Wilson
    (1927) / Newcombe (1998) method 3, Clopper & Pearson (1934), Jeffreys with the
    Brown, Cai & DasGupta (2001, section 4.1.2) boundary convention, Agresti & Coull
    (1998) and Wald; each is written out with its full reference in :func:`interval`.
    ``n`` is one number of trials for every count, or an array of them broadcast against
    ``k`` (the bands of many slices, suites or prefixes of a run in one call); each
    element's bounds equal :func:`interval`'s for that ``(k, n)``.

    Args:
        k: success counts (any shape), whole numbers in ``0..n``.
        n: trials, a whole number ``>= 1``, or an array of them broadcastable with ``k``.
        method: one of :data:`INTERVAL_METHODS`.
        confidence: two-sided confidence level in (0, 1).
        allow_empty: accept ``n == 0`` (then ``k`` must be 0) and return the vacuous
            bounds ``[0, 1]`` there.

    Returns:
        ``(low, high)``: float arrays shaped like ``k`` (broadcast with an array ``n``),
        clipped to [0, 1].

    Raises:
        InvalidCountsError: non-integer, negative, NaN counts, ``k > n``, or ``n == 0``
            without ``allow_empty``.
        InvalidParameterError: confidence outside (0, 1) or an unknown method.

    >>> low, high = interval_bounds([0, 9, 64], 64)
    >>> [round(float(x), 6) for x in low]
    [0.0, 0.075786, 0.943376]
    >>> low, high = interval_bounds([9, 1], [64, 2])
    >>> [round(float(x), 6) for x in high]
    [0.246163, 0.905469]
    """
    import numpy as np

    name = _check_method(method)
    level = check_confidence(confidence)
    if np.ndim(n) == 0 and not isinstance(n, np.ndarray):
        n_int = as_count(n, "n (trials)")
        k_arr = _check_k_array(k, n_int)
        if n_int == 0:
            check_k_n(0, 0, allow_empty=allow_empty)  # raises with the standard message
            return np.zeros_like(k_arr), np.ones_like(k_arr)
        low, high = _FORMULAS[name](k_arr, n_int, level)
    else:
        n_arr = _check_n_array(n)
        k_arr = _check_k_array(k, n_arr)
        n_arr = np.broadcast_to(n_arr, k_arr.shape)
        empty = n_arr == 0
        if empty.any() and not allow_empty:
            check_k_n(0, 0)  # raises with the standard message
        low, high = _FORMULAS[name](k_arr, np.where(empty, 1.0, n_arr), level)
        low, high = np.where(empty, 0.0, low), np.where(empty, 1.0, high)
    return (
        np.clip(np.asarray(low, dtype=np.float64), 0.0, 1.0),
        np.clip(np.asarray(high, dtype=np.float64), 0.0, 1.0),
    )


def interval(
    k: int | float,
    n: int | float,
    method: str = "wilson",
    confidence: float = 0.95,
    *,
    allow_empty: bool = False,
) -> Interval:
    r"""Two-sided confidence interval for a success probability from ``k`` of ``n`` trials.

    With :math:`\hat p = k/n`, :math:`z = \Phi^{-1}(1 - \alpha/2)`, :math:`\alpha = 1 -`
    ``confidence`` and :math:`B(q; a, b)` the ``q`` quantile of Beta(a, b):

    * ``wilson`` -- Wilson, E. B. (1927), "Probable inference, the law of succession,
      and statistical inference", *JASA* 22:209-212; Newcombe, R. G. (1998), *Statistics
      in Medicine* 17:857-872, method 3:
      :math:`\frac{k + z^2/2 \mp z\sqrt{k(n-k)/n + z^2/4}}{n + z^2}`.
      Never degenerate and always inside [0, 1]; the default.
    * ``clopper-pearson`` -- Clopper, C. J. & Pearson, E. S. (1934), *Biometrika*
      26:404-413: :math:`[B(\alpha/2; k, n-k+1),\ B(1-\alpha/2; k+1, n-k)]`, with 0 at
      ``k = 0`` and 1 at ``k = n``. Coverage is at least nominal for every p (conservative).
    * ``jeffreys`` -- Brown, L. D., Cai, T. T. & DasGupta, A. (2001), "Interval
      estimation for a binomial proportion", *Statistical Science* 16:101-133, section
      4.1.2: :math:`[B(\alpha/2; k+\frac12, n-k+\frac12),\ B(1-\alpha/2; k+\frac12,
      n-k+\frac12)]`, with their convention that the lower bound is 0 at ``k = 0`` and
      the upper bound is 1 at ``k = n`` (statsmodels does not apply this convention).
    * ``agresti-coull`` -- Agresti, A. & Coull, B. A. (1998), "Approximate is better than
      'exact' for interval estimation of binomial proportions", *The American
      Statistician* 52:119-126 (general-z form, Brown et al. 2001 eq. 8):
      :math:`\tilde n = n + z^2`, :math:`\tilde p = (k + z^2/2)/\tilde n`,
      :math:`\tilde p \mp z\sqrt{\tilde p(1-\tilde p)/\tilde n}`.
    * ``wald`` -- the textbook :math:`\hat p \mp z\sqrt{\hat p(1-\hat p)/n}`. **Do not use
      it.** At ``k = 0`` or ``k = n`` it has zero width ("0 of 20, so exactly 0%"), and
      its coverage is erratic and far below nominal for small n or p near 0 or 1 (about
      64% at n = 20, p = 0.05 for a nominal 95%; Brown et al. 2001, section 2). It is
      here so :func:`evalband.stats.coverage` can show why.

    All bounds are clipped to [0, 1].

    Args:
        k: successes, a whole number in ``0..n`` (an integral float such as ``3.0`` is
            accepted; ``3.5`` is not).
        n: trials, a whole number ``>= 1``.
        method: one of :data:`INTERVAL_METHODS` (case-insensitive; ``_`` for ``-`` is ok).
        confidence: two-sided confidence level in (0, 1).
        allow_empty: accept ``n == 0`` and return the vacuous interval ``[0, 1]`` whose
            ``estimate`` is ``nan`` (no episodes, no estimate; serialise with care:
            ``json.dumps`` writes ``NaN``).

    Returns:
        An :class:`~evalband.stats.Interval` with ``estimate = k / n``.

    Raises:
        InvalidCountsError: non-integer, negative or NaN counts, ``k > n``, or ``n == 0``
            without ``allow_empty``.
        InvalidParameterError: confidence outside (0, 1) or an unknown method.

    >>> ci = interval(0, 10)
    >>> round(ci.low, 4), round(ci.high, 4)
    (0.0, 0.2775)
    >>> ci = interval(9, 64, "clopper-pearson")
    >>> round(ci.low, 4), round(ci.high, 4)
    (0.0664, 0.2502)
    """
    name = _check_method(method)
    level = check_confidence(confidence)
    k_int, n_int = check_k_n(k, n, allow_empty=allow_empty)
    if n_int > 0 and name in _CLOSED_FORMS:  # interval_bounds' formula on one float
        closed_form: Any = _FORMULAS[name]
        low, high = closed_form(float(k_int), n_int, level)
        low, high = min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)
    else:
        low, high = interval_bounds(k_int, n_int, name, level, allow_empty=allow_empty)
    estimate = k_int / n_int if n_int > 0 else math.nan
    return Interval(
        estimate=estimate,
        low=float(low),
        high=float(high),
        method=name,
        confidence=level,
        k=k_int,
        n=n_int,
    )


def intervals(
    k: ArrayLike,
    n: int | ArrayLike,
    method: str = "wilson",
    confidence: float = 0.95,
) -> list[Interval]:
    """:func:`interval` for many ``(k, n)`` at once: one formula evaluation for them all.

    Element ``i`` equals ``interval(k[i], n[i], method, confidence)`` exactly (the bounds
    come from :func:`interval_bounds`, the code :func:`interval` runs), at a fraction of
    the cost of a call per count: a report's thousand suites or five hundred prefixes.

    Args:
        k: success counts, a one-dimensional sequence of whole numbers in ``0..n``.
        n: trials, one whole number ``>= 1`` for every count or a sequence like ``k``.
        method: one of :data:`INTERVAL_METHODS`.
        confidence: two-sided confidence level in (0, 1).

    Returns:
        One :class:`~evalband.stats.Interval` per count, in order.

    Raises:
        InvalidCountsError: as :func:`interval_bounds` (``n == 0`` is refused).
        InvalidParameterError: confidence outside (0, 1) or an unknown method.

    >>> [round(ci.high, 4) for ci in intervals([0, 9], [10, 64])]
    [0.2775, 0.2462]
    >>> intervals([9], 64)[0] == interval(9, 64)
    True
    """
    import numpy as np

    name = _check_method(method)
    level = check_confidence(confidence)
    low, high = interval_bounds(k, n, name, level)
    k_arr = np.broadcast_to(np.asarray(k, dtype=np.float64), low.shape)
    n_arr = np.broadcast_to(np.asarray(n, dtype=np.float64), low.shape)
    if low.ndim != 1:
        raise InvalidCountsError(
            f"intervals takes one-dimensional counts; got an array of shape {low.shape}"
        )
    ks, ns = k_arr.astype(np.int64).tolist(), n_arr.astype(np.int64).tolist()
    return [
        Interval(estimate=kk / nn, low=lo, high=hi, method=name, confidence=level, k=kk, n=nn)
        for kk, nn, lo, hi in zip(ks, ns, low.tolist(), high.tolist(), strict=True)
    ]

