"""Confidence intervals for a difference of two success rates, ``p_a - p_b``.

Two designs, two functions:

* :func:`diff_unpaired` -- the two policies ran on *different* episodes (independent
  binomials). Newcombe's hybrid score interval built from the two Wilson intervals.
* :func:`diff_paired` -- the two policies ran on the *same* matched episodes, so each
  episode gives a pair of outcomes. The counts of the four kinds of pair
  (both succeed, only A, only B, neither) go in; Newcombe's paired hybrid score
  interval (default) or Tango's score interval comes out. ``"wald"`` is there only to
  show why not: it collapses to zero width when no pair is discordant.

The Wilson bounds come from :func:`evalband.stats._intervals.interval_bounds`, the one
implementation of the Wilson interval in the package.
"""

from __future__ import annotations

import math

from evalband._util.validate import as_count, check_choice, check_k_n
from evalband.errors import InvalidCountsError
from evalband.stats._normal import z_value
from evalband.stats._types import Difference

__all__ = ["PAIRED_METHODS", "diff_unpaired", "diff_paired"]

#: Methods accepted by :func:`diff_paired`, recommended first.
PAIRED_METHODS: tuple[str, ...] = ("newcombe", "tango", "wald")

_PAIRED_NAMES = {
    "newcombe": "newcombe-paired",
    "tango": "tango-score",
    "wald": "wald-paired",
}


def _wilson(k: list[int], n: int, confidence: float) -> tuple[list[float], list[float]]:
    """Wilson bounds for the counts ``k`` out of ``n``, one float at a time.

    ``_intervals``' formula: the same bits as on arrays, without numpy's per-call overhead.
    """
    from evalband.stats._intervals import _wilson as wilson

    bounds = [wilson(float(x), float(n), confidence) for x in k]  # type: ignore[arg-type]
    return [float(lo) for lo, _ in bounds], [float(hi) for _, hi in bounds]


def _arm(k: object, n: object, arm: str) -> tuple[int, int]:
    """Validate one arm's counts; name the arm in the error message."""
    try:
        return check_k_n(k, n)
    except InvalidCountsError as err:
        raise InvalidCountsError(f"policy {arm}: {err}") from err


def _clip(value: float) -> float:
    """Clamp a difference of proportions to [-1, 1] (guards floating-point overshoot)."""
    return min(1.0, max(-1.0, value))


def diff_unpaired(k_a: int, n_a: int, k_b: int, n_b: int, confidence: float = 0.95) -> Difference:
    """Newcombe's hybrid score interval for ``p_a - p_b`` from independent samples.

    Newcombe, R. G. (1998). Interval estimation for the difference between independent
    proportions: comparison of eleven methods. *Statistics in Medicine* 17:873-890,
    method 10. With ``(l_a, u_a)`` and ``(l_b, u_b)`` the Wilson score intervals of
    ``p_a = k_a/n_a`` and ``p_b = k_b/n_b`` at the same confidence level and
    ``D = p_a - p_b``::

        low  = D - sqrt((p_a - l_a)**2 + (u_b - p_b)**2)
        high = D + sqrt((u_a - p_a)**2 + (p_b - l_b)**2)

    The limits always lie in [-1, 1]. If the interval excludes 0, the ranking of the two
    policies is established at this number of episodes; if it contains 0, it is not,
    however far apart the point estimates look.

    Args:
        k_a: successes of policy A.
        n_a: episodes of policy A (>= 1).
        k_b: successes of policy B.
        n_b: episodes of policy B (>= 1).
        confidence: two-sided confidence level in (0, 1).

    Returns:
        A :class:`~evalband.stats.Difference` with ``paired=False``.

    Raises:
        InvalidCountsError: counts that are not whole, negative, ``k > n`` or ``n == 0``.
        InvalidParameterError: ``confidence`` outside (0, 1).

    Example (Newcombe 1998, Table II, example (a)):

    >>> d = diff_unpaired(56, 70, 48, 80)
    >>> round(d.estimate, 4), round(d.low, 4), round(d.high, 4)
    (0.2, 0.0524, 0.3339)
    >>> d.excludes_zero
    True
    """
    ka, na = _arm(k_a, n_a, "A")
    kb, nb = _arm(k_b, n_b, "B")
    z_value(confidence)  # validates confidence with the shared message
    conf = float(confidence)
    lo_a, hi_a = _wilson([ka], na, conf)
    lo_b, hi_b = _wilson([kb], nb, conf)
    p_a, p_b = ka / na, kb / nb
    est = p_a - p_b
    low = est - math.hypot(p_a - float(lo_a[0]), float(hi_b[0]) - p_b)
    high = est + math.hypot(float(hi_a[0]) - p_a, p_b - float(lo_b[0]))
    return Difference(
        estimate=est,
        low=_clip(low),
        high=_clip(high),
        method="newcombe-hybrid-score",
        confidence=conf,
        paired=False,
        counts={"k_a": ka, "n_a": na, "k_b": kb, "n_b": nb},
    )


def diff_paired(
    both: int,
    a_only: int,
    b_only: int,
    neither: int,
    method: str = "newcombe",
    confidence: float = 0.95,
) -> Difference:
    """Interval for ``p_a - p_b`` when both policies ran on the same matched episodes.

    Each matched episode gives a pair of outcomes: ``both`` (a) pairs where both
    policies succeed, ``a_only`` (b) where only A succeeds, ``b_only`` (c) where only B
    succeeds and ``neither`` (d). With ``n = a + b + c + d``, ``p_a = (a + b)/n``,
    ``p_b = (a + c)/n`` and the estimate is ``D = (b - c)/n``.

    ``method="newcombe"`` (default): Newcombe, R. G. (1998). Improved confidence
    intervals for the difference between binomial proportions based on paired data.
    *Statistics in Medicine* 17:2635-2650, method 10 (score based, no continuity
    correction). With ``(l_a, u_a)``, ``(l_b, u_b)`` the Wilson intervals of ``p_a`` and
    ``p_b``::

        low  = D - sqrt((p_a - l_a)**2 - 2*phi*(p_a - l_a)*(u_b - p_b) + (u_b - p_b)**2)
        high = D + sqrt((u_a - p_a)**2 - 2*phi*(u_a - p_a)*(p_b - l_b) + (p_b - l_b)**2)

    where ``phi = (a*d - b*c) / sqrt((a+b)(c+d)(a+c)(b+d))``, its numerator replaced by
    ``max(a*d - b*c - n/2, 0)`` when ``a*d > b*c`` (Newcombe's adjustment), and
    ``phi = 0`` when the denominator is 0.

    ``method="tango"``: Tango, T. (1998). Equivalence test and confidence interval for
    the difference in proportions for the paired-sample design. *Statistics in Medicine*
    17:891-908. The interval is ``{delta : |Z(delta)| <= z}`` with the score statistic::

        Z(delta) = (b - c - n*delta) / sqrt(n * (2*q(delta) + delta*(1 - delta)))

    where ``q(delta)`` is the closed-form constrained maximum-likelihood estimate of
    ``P(only B succeeds)`` given ``delta``: the root ``(sqrt(B**2 - 4*A*C) - B)/(2*A)`` with
    ``A = 2n``, ``B = -b - c + (2n - b + c)*delta``, ``C = -c*delta*(1 - delta)``. Both limits
    are found by Brent's method (:func:`evalband.stats._roots.brentq`, scipy's ``brentq``
    without importing scipy.optimize).

    ``method="wald"``: ``D +- z*sqrt(b + c - (b - c)**2/n)/n``, truncated to [-1, 1]. Only to
    show why not: with no discordant pairs it has zero width, claiming certainty.

    Args:
        both: pairs where both policies succeed (a).
        a_only: pairs where only policy A succeeds (b).
        b_only: pairs where only policy B succeeds (c).
        neither: pairs where both fail (d).
        method: one of :data:`PAIRED_METHODS` (``"newcombe"``, ``"tango"``, ``"wald"``).
        confidence: two-sided confidence level in (0, 1).

    Returns:
        A :class:`~evalband.stats.Difference` with ``paired=True``; its limits lie in
        [-1, 1], and are finite and non-degenerate also with no discordant pairs
        (Newcombe, Tango).

    Raises:
        InvalidCountsError: counts that are not whole or negative, or no pairs at all.
        InvalidParameterError: unknown ``method`` or ``confidence`` outside (0, 1).

    Example (Newcombe 1998b's example with a, b, c, d = 20, 12, 2, 16; method 10 gives
    0.0562 to 0.3292):

    >>> d = diff_paired(20, 12, 2, 16)
    >>> round(d.estimate, 4), round(d.low, 4), round(d.high, 4)
    (0.2, 0.0562, 0.3292)
    >>> t = diff_paired(20, 12, 2, 16, method="tango")
    >>> t.low < 0.2 < t.high
    True
    """
    a = as_count(both, "both (pairs where both policies succeed)")
    b = as_count(a_only, "a_only (pairs where only policy A succeeds)")
    c = as_count(b_only, "b_only (pairs where only policy B succeeds)")
    d = as_count(neither, "neither (pairs where both policies fail)")
    n = a + b + c + d
    if n == 0:
        raise InvalidCountsError(
            "a paired difference needs at least one matched pair; got "
            "both = a_only = b_only = neither = 0"
        )
    chosen = check_choice(method, "method", PAIRED_METHODS)
    z = z_value(confidence)
    conf = float(confidence)
    est = (b - c) / n
    if chosen == "newcombe":
        low, high = _newcombe_paired(a, b, c, d, conf)
    elif chosen == "tango":
        low, high = _tango(b, c, n, z, est)
    else:
        half = z * math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
        low, high = est - half, est + half
    return Difference(
        estimate=est,
        low=_clip(low),
        high=_clip(high),
        method=_PAIRED_NAMES[chosen],
        confidence=conf,
        paired=True,
        counts={"both": a, "a_only": b, "b_only": c, "neither": d},
    )


def _newcombe_phi(a: int, b: int, c: int, d: int) -> float:
    """Newcombe's (1998b) adjusted phi coefficient of the paired 2x2 table."""
    n = a + b + c + d
    denominator = (a + b) * (c + d) * (a + c) * (b + d)  # exact integer arithmetic
    if denominator == 0:
        return 0.0
    numerator: float = a * d - b * c
    if numerator > 0:
        numerator = max(numerator - n / 2.0, 0.0)
    return float(numerator) / math.sqrt(denominator)


def _newcombe_paired(a: int, b: int, c: int, d: int, confidence: float,
                     weight: float = 1.0) -> tuple[float, float]:
    """Newcombe (1998b) method 10 limits of ``p_a - weight * p_b``.

    ``weight`` 1: the paired difference. Another weight scales ``p_b``'s Wilson limits (the
    MOVER of Zou & Donner 2008 for a weighted difference of correlated proportions); 0 leaves
    ``p_a``'s Wilson interval.
    """
    n = a + b + c + d
    lows, highs = _wilson([a + b, a + c], n, confidence)
    p_a, p_b = (a + b) / n, (a + c) / n
    l_a, l_b = float(lows[0]), float(lows[1])
    u_a, u_b = float(highs[0]), float(highs[1])
    phi = _newcombe_phi(a, b, c, d)
    dl_a, du_a = p_a - l_a, u_a - p_a
    dl_b, du_b = weight * (p_b - l_b), weight * (u_b - p_b)
    down = math.sqrt(max(dl_a**2 - 2.0 * phi * dl_a * du_b + du_b**2, 0.0))
    up = math.sqrt(max(du_a**2 - 2.0 * phi * du_a * dl_b + dl_b**2, 0.0))
    est = p_a - weight * p_b
    return est - down, est + up


def _tango_q(delta: float, b: int, c: int, n: int) -> float:
    """Tango's (1998) closed-form constrained MLE of P(only B succeeds) at ``delta``."""
    quad_a = 2.0 * n
    quad_b = -b - c + (2.0 * n - b + c) * delta
    quad_c = -c * delta * (1.0 - delta)
    root = math.sqrt(max(quad_b * quad_b - 4.0 * quad_a * quad_c, 0.0))
    if quad_b <= 0.0:
        return (root - quad_b) / (2.0 * quad_a)
    # Same root, written without cancellation when quad_b > 0 (then quad_c <= 0).
    return -2.0 * quad_c / (quad_b + root)


def _tango_gap(delta: float, b: int, c: int, n: int, z: float) -> float:
    """``(b - c - n*delta)**2 - z**2 * n * var(delta)``: <= 0 exactly inside Tango's interval.

    The squared form stays finite at delta = +-1, where the variance vanishes.
    """
    var = 2.0 * _tango_q(delta, b, c, n) + delta * (1.0 - delta)
    return (b - c - n * delta) ** 2 - z * z * n * max(var, 0.0)


def _tango(b: int, c: int, n: int, z: float, est: float) -> tuple[float, float]:
    """Tango's score interval by root finding on each side of the estimate."""
    from evalband.stats._roots import brentq

    def gap(delta: float) -> float:
        return _tango_gap(delta, b, c, n, z)

    def limit(edge: float) -> float:
        if est == edge:
            return edge
        # A point strictly inside the interval: the estimate itself, unless the variance
        # vanishes there (no discordant pairs, or all pairs discordant one way); then
        # step from the estimate towards ``edge`` until inside.
        inner = est
        step = edge - est
        while gap(inner) >= 0.0 and abs(step) > 1e-300:
            step /= 2.0
            inner = est + step
        if gap(inner) >= 0.0:
            return est
        return brentq(gap, min(inner, edge), max(inner, edge), xtol=1e-15)

    return limit(-1.0), limit(1.0)
