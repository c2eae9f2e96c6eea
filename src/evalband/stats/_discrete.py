"""What an exact test can attain: the null distribution a discrete multiplicity step spends.

A slice's exact test (McNemar's on its ``m`` discordant pairs, Fisher's on its two arms given
their margins) can only return a finite set of p-values. Under the null hypothesis the chance
that it returns a p-value ``<= t`` is not ``t`` but the largest attainable p-value ``<= t``
(Westfall & Wolfinger 1997): a slice with four discordant pairs can never reach ``p <= 0.125``,
so it spends nothing of a family's error budget at any smaller level. :class:`McNemarNull` and
:class:`FisherNull` give, for any ``t``, that largest attainable p-value (:meth:`at_most`),
with the p-values computed by the very functions that print them
(:func:`~evalband.stats._procedure.paired_exact_p`,
:func:`~evalband.stats._procedure.unpaired_exact_p`), so a slice's own p-value is always one
of its attainable values.

Both tests are two-sided as twice the smaller tail. An outcome in one tail with p-value
``p < 1`` has null probability ``p / 2`` of being that extreme on its side, so ``P(P <= t,
rejecting downwards) = at_most_down(t) / 2``: for each direction, the chance of a rejection at
``t`` is at most ``at_most(t) / 2`` (McNemar's null is symmetric; Fisher's tails are bounded
each on its own side), which is what keeps "half the budget per direction" of the procedure
that sums them.

Sources: Westfall, P. H. & Wolfinger, R. D. (1997) *Am. Stat.* 51:3-8 ("Multiple tests with
discrete distributions"); Tarone, R. E. (1990) *Biometrics* 46:515-522; Hommel, G. &
Krummenauer, F. (1998) *Biometrical J.* 40:3-15 (the step-down procedure that uses them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from evalband.stats._procedure import _log_choose, paired_exact_p

__all__ = ["McNemarNull", "FisherNull"]


@dataclass(frozen=True)
class McNemarNull:
    """The exact McNemar test's attainable p-values with ``m`` discordant pairs.

    >>> McNemarNull(4).at_most(0.2), McNemarNull(4).at_most(0.1)
    (0.125, 0.0)
    >>> McNemarNull(0).at_most(0.5), McNemarNull(10).at_most(1.0)
    (0.0, 1.0)
    """

    m: int

    def at_most(self, t: float) -> float:
        """The largest p-value the test can return that is ``<= t`` (0.0 when none)."""
        return _mcnemar_at_most(int(self.m), float(t))


@lru_cache(maxsize=65_536)
def _mcnemar_at_most(m: int, t: float) -> float:
    if t >= 1.0 and m >= 0:
        return 1.0
    if m <= 0:
        return 0.0
    # p(k) = paired_exact_p(k, m - k) rises with k up to m // 2 (symmetric beyond)
    lo, hi = -1, m // 2  # p(lo) <= t (sentinel), look for the largest k with p(k) <= t
    if paired_exact_p(0, m) > t:
        return 0.0
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if paired_exact_p(mid, m - mid) <= t:
            lo = mid
        else:
            hi = mid
    top = paired_exact_p(hi, m - hi)
    return top if top <= t else paired_exact_p(lo, m - lo)


@dataclass(frozen=True)
class FisherNull:
    """The central Fisher test's attainable p-values given both arms' sizes and successes.

    ``n_a``, ``n_b``: the arms' episodes; ``total``: their successes together (the margins
    the conditional test fixes).

    >>> round(FisherNull(5, 5, 5).at_most(0.05), 6)  # k_a = 0 or 5 of 5: p = 2 / 252
    0.007937
    """

    n_a: int
    n_b: int
    total: int

    def at_most(self, t: float) -> float:
        """The largest p-value the test can return that is ``<= t`` (0.0 when none)."""
        return _fisher_at_most(int(self.n_a), int(self.n_b), int(self.total), float(t))


@lru_cache(maxsize=4096)
def _fisher_tails(n_a: int, n_b: int, total: int) -> tuple[tuple[float, ...], ...]:
    """Each table's p-value, the first arm's successes from the smallest.

    As :func:`~evalband.stats._procedure.unpaired_exact_p` computes it, term for term.
    """
    lo, hi = max(0, total - n_b), min(n_a, total)
    x = np.arange(lo, hi + 1, dtype=np.int64)
    log_h = _log_choose(n_a, x) + _log_choose(n_b, total - x)
    h = np.exp(log_h - log_h.max())
    h /= h.sum()
    values = []
    for i in range(h.size):  # the same sums, term for term, as unpaired_exact_p
        lower = float(h[: i + 1].sum())
        upper = float(h[i:].sum())
        values.append(min(1.0, 2.0 * min(lower, upper)))
    return (tuple(values),)


_MAX_TABLES = 2000
"""Beyond this many tables the Fisher null is bounded by ``t`` itself (Holm's bound)."""


def _fisher_at_most(n_a: int, n_b: int, total: int, t: float) -> float:
    if t >= 1.0:
        return 1.0
    if min(n_a, total) - max(0, total - n_b) + 1 > _MAX_TABLES:
        return t  # a continuous bound: never below what the test can attain
    (values,) = _fisher_tails(n_a, n_b, total)
    below = [v for v in values if v <= t]
    return max(below) if below else 0.0
