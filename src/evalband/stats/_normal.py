"""Standard-normal quantiles and CDF: scipy's values, without importing scipy when known.

Intervals and sample sizes need ``z`` quantiles at a handful of levels (95% confidence,
alpha 0.05, 80% power...). Importing ``scipy.special`` to get them costs a short command
~0.3 s; the values at the common levels are kept here, exactly as
``scipy.special.ndtri`` returns them (``tests/stats/test_normal.py`` checks every entry
bit for bit against scipy), and any other level is computed by scipy. Results never
depend on which path answered.
"""

from __future__ import annotations

import functools

from evalband._util.validate import check_confidence

__all__ = ["ndtri", "ndtr", "z_value"]

# p -> scipy.special.ndtri(p) for the p that common levels give: 0.5 + confidence / 2
# (confidence 0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999), alpha / 2 (alpha 0.2, 0.1,
# 0.05, 0.025, 0.01, 0.005, 0.001), alpha itself, and power 0.8, 0.85, 0.9, 0.95, 0.99.
_KNOWN: dict[float, float] = {
    0.0005: -3.2905267314918945,
    0.001: -3.090232306167813,
    0.0025: -2.8070337683438042,
    0.005: -2.575829303548901,
    0.01: -2.3263478740408408,
    0.0125: -2.241402727604945,
    0.025: -1.9599639845400545,
    0.05: -1.6448536269514729,
    0.1: -1.2815515655446004,
    0.2: -0.8416212335729142,
    0.75: 0.6744897501960817,
    0.8: 0.8416212335729143,
    0.85: 1.0364333894937898,
    0.9: 1.2815515655446004,
    0.95: 1.6448536269514722,
    0.975: 1.959963984540054,
    0.99: 2.3263478740408408,
    0.995: 2.5758293035489004,
    0.9975: 2.807033768343811,
    0.9995: 3.2905267314919255,
}


def ndtri(p: float) -> float:
    """The standard-normal ``p`` quantile, ``scipy.special.ndtri(p)`` as a float.

    ``scipy.stats.norm.ppf(p)`` equals it and ``scipy.stats.norm.isf(q)`` equals
    ``-ndtri(q)``, bit for bit.

    >>> ndtri(0.975)
    1.959963984540054
    >>> round(ndtri(0.3), 6)
    -0.524401
    """
    known = _KNOWN.get(p)
    if known is not None:
        return known
    from scipy.special import ndtri as scipy_ndtri

    return float(scipy_ndtri(p))


def ndtr(x: float) -> float:
    """The standard-normal CDF at ``x``: ``scipy.special.ndtr(x)`` (= ``norm.cdf(x)``).

    >>> round(ndtr(1.959963984540054), 6)
    0.975
    """
    from scipy.special import ndtr as scipy_ndtr

    return float(scipy_ndtr(x))


def z_value(confidence: float) -> float:
    """Two-sided standard-normal quantile for a confidence level.

    The quantile is cached per level (``scipy.special.ndtri``, the inverse normal CDF
    that ``scipy.stats.norm.ppf`` evaluates, without its per-call overhead): a report
    computes thousands of bands at one level.

    >>> f"{z_value(0.95):.12f}"
    '1.959963984540'
    """
    return _z_cached(check_confidence(confidence))


@functools.lru_cache(maxsize=64)
def _z_cached(level: float) -> float:
    return ndtri(0.5 + level / 2.0)
