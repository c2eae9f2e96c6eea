"""Cell rates shrunk toward their common rate: the beta-binomial empirical Bayes estimate.

A cell with few episodes estimates its rate badly: 0 of 3 does not mean the cell never
succeeds, and a simulation that plugs in 0% there finds it can never show a drop. Treat the
cells' true rates as draws from a beta distribution with mean ``mu`` and intra-cell
correlation ``rho`` (so a cell's count is beta-binomial); the posterior mean of a cell's rate
is

    ``(k + kappa mu) / (n + kappa)``,  ``kappa = (1 - rho) / rho``,

which moves a cell with few episodes most of the way to ``mu`` and leaves a cell with many
where its own data put it. ``mu`` is the pooled rate ``sum k / sum n``; ``rho`` the method of
moments estimate of Kleinman (1973) from the weighted spread of the cells' rates,
``S = sum n_i (p_i - mu)^2``, whose expectation under the model is
``mu (1 - mu) [(I - 1) + rho (N - I + 1 - sum n_i^2 / N)]`` for ``I`` cells and ``N``
episodes; clipped to ``[0, 1)``. ``rho = 0`` (no more spread than binomial noise) pools the
cells completely; one cell is left as it is.

Source: Kleinman, J. C. (1973) "Proportions with extraneous variance: single and independent
samples", *JASA* 68:46-54; the empirical Bayes reading as in Efron, B. & Morris, C. (1975)
*JASA* 70:311-319.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalband.errors import InvalidCountsError

__all__ = ["Shrinkage", "shrunken_rates"]


@dataclass(frozen=True)
class Shrinkage:
    """Shrunken cell rates and what they were shrunk with.

    Attributes:
        rates: per cell, ``(k + kappa mu) / (n + kappa)``.
        raw: per cell, ``k / n``.
        mean: the pooled rate ``mu``.
        rho: the intra-cell correlation estimate.
        kappa: the prior's weight in episodes (``inf``: cells pooled completely).
    """

    rates: tuple[float, ...]
    raw: tuple[float, ...]
    mean: float
    rho: float
    kappa: float


def shrunken_rates(successes: Sequence[int], episodes: Sequence[int]) -> Shrinkage:
    """Each cell's rate shrunk toward the pooled rate (see the module docstring).

    >>> s = shrunken_rates([0, 9, 5], [3, 10, 6])
    >>> 0 < s.rates[0] < s.mean and s.raw[0] == 0.0
    True
    >>> shrunken_rates([3], [4]).rates
    (0.75,)
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(episodes, dtype=np.float64)
    if k.shape != n.shape or not len(n) or (n < 1).any() or (k < 0).any() or (k > n).any():
        raise InvalidCountsError(
            f"shrinkage needs 0 <= successes <= episodes, at least one episode per cell; got "
            f"{list(successes)} of {list(episodes)}")
    raw = k / n
    total = float(n.sum())
    mu = float(k.sum() / total)
    cells = len(n)
    if cells == 1:
        return Shrinkage(tuple(raw.tolist()), tuple(raw.tolist()), mu, 0.0, 0.0)
    spread = float(np.sum(n * (raw - mu) ** 2))
    denominator = total - cells + 1.0 - float(np.sum(n * n)) / total
    rho = 0.0
    if mu * (1.0 - mu) > 0 and denominator > 0:
        rho = (spread / (mu * (1.0 - mu)) - (cells - 1.0)) / denominator
    rho = float(min(max(rho, 0.0), 1.0 - 1e-9))
    if rho <= 0.0:
        return Shrinkage(tuple([mu] * cells), tuple(raw.tolist()), mu, 0.0, float("inf"))
    kappa = (1.0 - rho) / rho
    rates = (k + kappa * mu) / (n + kappa)
    return Shrinkage(tuple(rates.tolist()), tuple(raw.tolist()), mu, rho, float(kappa))
