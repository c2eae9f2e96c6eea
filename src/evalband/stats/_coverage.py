"""Exact coverage of the one-proportion interval methods.

For a method, ``n`` and a true success probability ``p``, the coverage is the
probability that the interval computed from ``K ~ Binomial(n, p)`` contains ``p``:

    C(p) = sum_{k=0..n} P(K = k) * 1[low_k <= p <= high_k].

It is a finite sum, so it is computed exactly (no simulation), with every interval's
bounds from :func:`~evalband.stats.interval_bounds` (the same code that computes the
intervals users see). Brown, Cai & DasGupta (2001) plot these curves; the Wald
interval's erratic, low coverage (worst near p = 0 or 1) is their section 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from evalband._util.validate import as_count, check_confidence, check_probability
from evalband.errors import InvalidCountsError, InvalidParameterError
from evalband.stats._intervals import _check_method, interval_bounds

__all__ = ["CoverageGrid", "coverage", "coverage_grid"]

FloatArray = NDArray[np.float64]

_CHUNK_ELEMENTS = 1 << 21
_NOMINAL_TOLERANCE = 1e-12  # floating-point slack when comparing coverage with nominal


@dataclass(frozen=True)
class CoverageGrid:
    """Exact coverage of one interval method over a grid of true success probabilities.

    Attributes:
        method: the interval method audited.
        n: trials.
        confidence: nominal confidence level.
        ps: the true success probabilities audited (sorted as given).
        coverage: exact coverage at each ``p`` in ``ps``.
        min_coverage: the smallest coverage on the grid.
        p_at_min: the ``p`` where that minimum occurs (the first, if tied).
        mean_coverage: the grid average (approximates the integral of C(p) over p for an
            even grid; Brown et al. 2001 call it the average coverage).
        share_below_nominal: fraction of grid points whose coverage is below
            ``confidence`` (by more than 1e-12).

    >>> grid = coverage_grid("wald", 20, ps=[0.05, 0.5])
    >>> grid.min_coverage < 0.7
    True
    """

    method: str
    n: int
    confidence: float
    ps: FloatArray
    coverage: FloatArray
    min_coverage: float
    p_at_min: float
    mean_coverage: float
    share_below_nominal: float

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (arrays become lists)."""
        return {
            "method": self.method,
            "n": self.n,
            "confidence": self.confidence,
            "ps": [float(p) for p in self.ps],
            "coverage": [float(c) for c in self.coverage],
            "min_coverage": self.min_coverage,
            "p_at_min": self.p_at_min,
            "mean_coverage": self.mean_coverage,
            "share_below_nominal": self.share_below_nominal,
        }


def _check_n(n: object) -> int:
    n_int = as_count(n, "n (trials)")
    if n_int < 1:
        raise InvalidCountsError("`n` (trials) must be >= 1 for a coverage computation, got 0",
                                 parameters=("n",))
    return n_int


def _coverage_many(method: str, n: int, ps: FloatArray, confidence: float) -> FloatArray:
    ks = np.arange(n + 1, dtype=np.float64)
    low, high = interval_bounds(ks, n, method, confidence)
    out = np.empty(ps.size, dtype=np.float64)
    rows = max(1, _CHUNK_ELEMENTS // (n + 1))
    for start in range(0, ps.size, rows):
        chunk = ps[start : start + rows, None]
        pmf = stats.binom.pmf(ks[None, :], n, chunk)
        covers = (low[None, :] <= chunk) & (chunk <= high[None, :])
        out[start : start + rows] = np.sum(pmf * covers, axis=1)
    return out


def coverage(method: str, n: int, p: float, confidence: float = 0.95) -> float:
    r"""Exact coverage probability of an interval method at true success probability ``p``.

    .. math:: C(p) = \sum_{k=0}^{n} \binom{n}{k} p^k (1-p)^{n-k}\,
              \mathbf 1[L(k) \le p \le U(k)]

    (Brown, L. D., Cai, T. T. & DasGupta, A. (2001), "Interval estimation for a binomial
    proportion", *Statistical Science* 16:101-133, section 2). The bounds
    :math:`L(k), U(k)` come from :func:`~evalband.stats.interval_bounds`.

    Args:
        method: one of :data:`~evalband.stats.INTERVAL_METHODS`.
        n: trials, a whole number ``>= 1``.
        p: true success probability in [0, 1].
        confidence: nominal two-sided confidence level in (0, 1).

    Returns:
        The coverage probability in [0, 1].

    Raises:
        InvalidCountsError: ``n`` not a whole number ``>= 1``.
        InvalidParameterError: ``p`` outside [0, 1], confidence outside (0, 1), or an
            unknown method.

    >>> round(coverage("wald", 20, 0.05), 4)
    0.6389
    >>> coverage("wilson", 20, 0.05) > 0.9
    True
    """
    name = _check_method(method)
    n_int = _check_n(n)
    p_value = check_probability(p, "p")
    level = check_confidence(confidence)
    return float(_coverage_many(name, n_int, np.array([p_value]), level)[0])


def coverage_grid(
    method: str,
    n: int,
    ps: ArrayLike | None = None,
    confidence: float = 0.95,
) -> CoverageGrid:
    """Audit an interval method's exact coverage over a grid of true probabilities.

    Computes :func:`coverage` at every ``p`` of the grid (one vectorised pass) and
    summarises it as Brown, Cai & DasGupta (2001, section 2 and 4) do: the minimum, the
    average, and how much of the grid falls below the nominal level.

    Args:
        method: one of :data:`~evalband.stats.INTERVAL_METHODS`.
        n: trials, a whole number ``>= 1``.
        ps: true success probabilities in [0, 1]; default the 999-point grid
            0.001, 0.002, ..., 0.999.
        confidence: nominal two-sided confidence level in (0, 1).

    Returns:
        A :class:`CoverageGrid`.

    Raises:
        InvalidCountsError: ``n`` not a whole number ``>= 1``.
        InvalidParameterError: an empty grid or a ``p`` outside [0, 1] or NaN, confidence
            outside (0, 1), or an unknown method.

    >>> grid = coverage_grid("clopper-pearson", 30)
    >>> grid.min_coverage >= 0.95
    True
    """
    name = _check_method(method)
    n_int = _check_n(n)
    level = check_confidence(confidence)
    if ps is None:
        grid = np.arange(1, 1000, dtype=np.float64) / 1000.0
    else:
        try:
            grid = np.asarray(ps, dtype=np.float64).ravel()
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(f"ps must be probabilities in [0, 1], got {ps!r}") from exc
        if grid.size == 0:
            raise InvalidParameterError("ps must hold at least one probability, got none")
        if np.any(np.isnan(grid)) or np.any((grid < 0.0) | (grid > 1.0)):
            raise InvalidParameterError("every p in ps must be a probability in [0, 1]")
    cov = _coverage_many(name, n_int, grid, level)
    at_min = int(np.argmin(cov))
    return CoverageGrid(
        method=name,
        n=n_int,
        confidence=level,
        ps=grid,
        coverage=cov,
        min_coverage=float(cov[at_min]),
        p_at_min=float(grid[at_min]),
        mean_coverage=float(np.mean(cov)),
        share_below_nominal=float(np.mean(cov < level - _NOMINAL_TOLERANCE)),
    )
