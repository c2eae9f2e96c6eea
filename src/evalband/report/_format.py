"""Numbers for reading: the one place that decides how a rate, a difference or a p looks.

Every renderer (terminal, Markdown, HTML) and the commands that print results format through
these functions, so one number reads the same everywhere. An interval may be given as a
mapping (``{"estimate", "low", "high"}``, as ``as_dict()`` writes it) or as any object with
those attributes (:class:`evalband.stats.Interval`, :class:`evalband.stats.Difference`).

>>> rate({"estimate": 0.45, "low": 0.381, "high": 0.521})
'45.0% [38.1, 52.1]'
>>> points({"estimate": 0.12, "low": 0.031, "high": 0.202})
'+12.0 [+3.1, +20.2]'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "percent",
    "rate",
    "points",
    "signed_points",
    "ordered",
    "p_value",
    "seconds",
    "signed_seconds",
    "level",
    "gap",
    "split_band",
]


def _triple(band: Any) -> tuple[float, float, float]:
    """``(estimate, low, high)`` of a mapping or an interval object."""
    if isinstance(band, Mapping):
        return float(band["estimate"]), float(band["low"]), float(band["high"])
    return float(band.estimate), float(band.low), float(band.high)


def percent(x: float | None, digits: int = 1) -> str:
    """A proportion as a percentage (``-`` for none or NaN).

    >>> percent(0.140625, 6), percent(0.5), percent(None), percent(float("nan"))
    ('14.062500%', '50.0%', '-', '-')
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{100 * x:.{digits}f}%"


def rate(band: Any) -> str:
    """A rate with its band in points: ``45.0% [38.1, 52.1]`` (``-`` for none).

    >>> rate(None)
    '-'
    """
    if not band:
        return "-"
    est, low, high = _triple(band)
    return f"{100 * est:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def points(band: Any) -> str:
    """A difference in points with its interval: ``+12.0 [+3.1, +20.2]`` (``-`` for none).

    A bound that lies on one side of 0 but rounds to 0 prints as ``<0`` / ``>0`` (never
    ``-0.0``): an interval that excludes 0 reads as excluding it.

    >>> points(None), points({"estimate": -0.05, "low": -0.12, "high": -1e-9})
    ('-', '-5.0 [-12.0, <0]')
    """
    if not band:
        return "-"
    est, low, high = _triple(band)
    return f"{100 * est:+.1f} [{_bound(low)}, {_bound(high)}]"


def _bound(x: float) -> str:
    """One bound of a difference in points; ``<0`` / ``>0`` where it would read ``-0.0``."""
    text = f"{100 * x:+.1f}"
    if text in ("+0.0", "-0.0") and x != 0:
        return "<0" if x < 0 else ">0"
    return text


def ordered(a: float, b: float, digits: int = 2) -> tuple[str, str]:
    """``a`` and ``b`` printed with the fewest digits (from ``digits``) that keep their order.

    Rounding may print two different numbers alike; then more digits (up to 12) are used, so
    a statistic printed beside its boundary reads as reaching it exactly when it does.

    >>> ordered(2.995, 2.9957), ordered(3.2, 2.9957), ordered(1.0, 1.0)
    (('2.995', '2.996'), ('3.20', '3.00'), ('1.00', '1.00'))
    """
    for d in range(digits, 13):
        sa, sb = f"{a:.{d}f}", f"{b:.{d}f}"
        if (float(sa) < float(sb)) == (a < b) and (float(sa) > float(sb)) == (a > b):
            return sa, sb
    return f"{a:.12f}", f"{b:.12f}"


def signed_points(x: float) -> str:
    """One difference in points, signed: ``+1.2``.

    >>> signed_points(0.0123), signed_points(-0.2)
    ('+1.2', '-20.0')
    """
    return f"{100 * x:+.1f}"


def p_value(value: float | None) -> str:
    """A p value: three significant figures, ``< 0.001`` below that (``-`` for none).

    >>> p_value(0.0496), p_value(1.0), p_value(7.3e-12), p_value(None)
    ('0.0496', '1', '< 0.001', '-')
    """
    if value is None:
        return "-"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def seconds(value: float | None) -> str:
    """A time for reading: three significant figures at most, ``No successes`` for none.

    >>> seconds(2.238017), seconds(13.64), seconds(136.4), seconds(0.0042)
    ('2.24 s', '13.6 s', '136 s', '4.2 ms')
    >>> seconds(None)
    'No successes'
    """
    if value is None:
        return "No successes"
    if value >= 100:
        return f"{value:,.0f} s"
    if value >= 10:
        return f"{value:.1f} s"
    if value >= 0.01 or value == 0:
        return f"{value:.2f} s"
    return f"{1000 * value:.2g} ms"


def signed_seconds(band: Any) -> str:
    """A difference of times with its interval, in seconds: ``-0.40 [-0.61, -0.19]``.

    Two decimals (``-`` for none).

    >>> signed_seconds({"estimate": -0.4, "low": -0.612, "high": -0.188})
    '-0.40 [-0.61, -0.19]'
    >>> signed_seconds(None)
    '-'
    """
    if not band:
        return "-"
    est, low, high = _triple(band)
    return f"{est:+.2f} [{low:+.2f}, {high:+.2f}]"


def level(confidence: float) -> str:
    """``95%`` from ``0.95``; ``99.9%`` keeps its decimal.

    >>> level(0.95), level(0.999)
    ('95%', '99.9%')
    """
    return f"{100 * confidence:.4g}%"


def gap(value: float) -> str:
    """A gap in points: whole points, or one decimal under five.

    >>> gap(0.123), gap(0.0123)
    ('12', '1.2')
    """
    return f"{100 * value:.1f}" if value < 0.05 else f"{100 * value:.0f}"


def split_band(text: str) -> tuple[str, str]:
    """``45.0% [38.1, 52.1]`` -> ``("45.0%", "[38.1, 52.1]")``: a value and its band.

    >>> split_band("45.0% [38.1, 52.1]"), split_band("-")
    (('45.0%', '[38.1, 52.1]'), ('-', ''))
    """
    head, _, band = text.partition(" ")
    return head, band
