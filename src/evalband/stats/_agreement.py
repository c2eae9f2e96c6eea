r"""Does a cheap ranking agree with an expensive one? Correlations with honest intervals.

A cheap ranking (an offline metric per checkpoint, or simulation success rates) is held
against behavioural success rates measured on a robot, which are noisy: seed 004 found that
"we cannot validate any offline metric's fine-grained ordering (the grasp-rate differences
among these models are themselves within overlapping confidence intervals)". So every
agreement statistic here carries an interval that includes the behavioural noise:

* **Rank-set bounds** (Spearman, Kendall): the smallest and largest correlation between the
  cheap values and *any* ordering of the true behavioural rates that the behavioural rank
  sets allow (:mod:`evalband.stats._ranks`: with probability at least ``1 - alpha`` no
  established order is wrong, so the true ordering is among those allowed). Spearman's
  bounds solve two assignment problems (each policy to a rank inside its rank set;
  Kuhn-Munkres via :func:`scipy.optimize.linear_sum_assignment`); Kendall's count the
  established pairs once and every open pair either way. The true rank correlation lies in
  the bounds whenever the rank sets cover: at least ``1 - alpha``, for any number of
  checkpoints (true rates taken as distinct).
* **Two-level bootstrap** (Pearson, Spearman, Kendall, MMRV): resample the checkpoints with
  replacement (outer level) and each chosen checkpoint's episodes or scenes (inner level;
  Davison & Hinkley 1997, *Bootstrap Methods and their Application*, section 3.8, for
  resampling at both levels); the percentile interval. It describes the spread of the
  statistic over checkpoints like these; near a perfect correlation it is not an interval
  for these checkpoints' truth (the bench measures its coverage beside the bounds').
* **MMRV**, SimplerEnv's Mean Maximum Rank Violation (Li et al. 2024, "Evaluating Real-World
  Robot Manipulation Policies in Simulation", CoRL; ``simpler_env/utils/metrics.py``): per
  policy the largest real-rate gap to a policy the cheap ranking orders the other way
  (strict comparisons, as SimplerEnv's code), averaged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from evalband.errors import InvalidInputError

__all__ = [
    "spearman",
    "kendall_tau_b",
    "pearson",
    "mmrv",
    "rank_set_bounds",
    "established_agreement",
    "BootstrapAgreement",
    "two_level_bootstrap",
]

FloatArray = npt.NDArray[np.float64]


def _midranks(x: FloatArray) -> FloatArray:
    from scipy.stats import rankdata

    return np.asarray(rankdata(x), dtype=np.float64)


def pearson(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Pearson's correlation (``nan`` when either side is constant).

    >>> round(pearson([1, 2, 3, 4], [1, 3, 2, 5]), 4)
    0.8315
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    xc, yc = x - x.mean(), y - y.mean()
    den = math.sqrt(float(xc @ xc) * float(yc @ yc))
    return float(xc @ yc / den) if den > 0 else math.nan


def spearman(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Spearman's rank correlation (Pearson on midranks; ``nan`` when a side is constant).

    >>> spearman([1, 2, 3, 4], [10, 30, 20, 40])
    0.8
    """
    return pearson(_midranks(np.asarray(a, dtype=np.float64)),
                   _midranks(np.asarray(b, dtype=np.float64)))


def kendall_tau_b(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Kendall's tau-b (ties on either side in the denominator; ``nan`` when undefined).

    >>> round(kendall_tau_b([1, 2, 3, 4], [10, 30, 20, 40]), 4)
    0.6667
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    sx = np.sign(x[:, None] - x[None, :])
    sy = np.sign(y[:, None] - y[None, :])
    upper = np.triu(np.ones_like(sx, dtype=bool), 1)
    s = float(np.sum((sx * sy)[upper]))
    nx, ny = float(np.sum((sx != 0)[upper])), float(np.sum((sy != 0)[upper]))
    return s / math.sqrt(nx * ny) if nx > 0 and ny > 0 else math.nan


def mmrv(cheap: npt.ArrayLike, real: npt.ArrayLike) -> float:
    """SimplerEnv's Mean Maximum Rank Violation of the cheap values against the real rates.

    >>> mmrv([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]), round(mmrv([0.3, 0.2, 0.1], [0.1, 0.2, 0.5]), 4)
    (0.0, 0.3667)
    """
    s, r = np.asarray(cheap, dtype=np.float64), np.asarray(real, dtype=np.float64)
    if s.shape != r.shape or s.ndim != 1 or s.size == 0:
        raise InvalidInputError("mmrv needs two equal-length 1-D arrays of values")
    violated = (s[:, None] > s[None, :]) != (r[:, None] > r[None, :])
    gaps = np.where(violated, np.abs(r[:, None] - r[None, :]), 0.0)
    return float(gaps.max(axis=1).mean())


def established_agreement(cheap: npt.ArrayLike,
                          better: npt.NDArray[np.bool_]) -> tuple[int, int, int]:
    """Of the established behavioural orders, how many the cheap values get right.

    Args:
        cheap: one value per policy, higher = better.
        better: ``better[j, k]``: ``j`` is established above ``k`` behaviourally.

    Returns:
        ``(agreeing, disagreeing, tied)`` counts of established pairs.

    >>> b = np.array([[False, True], [False, False]])
    >>> established_agreement([2.0, 1.0], b), established_agreement([1.0, 1.0], b)
    ((1, 0, 0), (0, 0, 1))
    """
    s = np.asarray(cheap, dtype=np.float64)
    j, k = np.nonzero(better)
    diff = s[j] - s[k]
    return int(np.sum(diff > 0)), int(np.sum(diff < 0)), int(np.sum(diff == 0))


def _assignment_extreme(goodness: FloatArray, low: npt.NDArray[np.int64],
                        high: npt.NDArray[np.int64], maximize: bool) -> float | None:
    """Extreme of ``sum_j goodness_j * t_j`` over rank assignments inside the rank sets."""
    from scipy.optimize import linear_sum_assignment

    k = goodness.size
    ranks = np.arange(1, k + 1)
    t = (k + 1 - ranks).astype(np.float64)  # true goodness rank of rank r (K = best)
    allowed = (ranks[None, :] >= low[:, None]) & (ranks[None, :] <= high[:, None])
    value = goodness[:, None] * t[None, :]
    big = 1e6 * (1.0 + float(np.abs(value).max()))
    cost = np.where(allowed, -value if maximize else value, big)
    rows, cols = linear_sum_assignment(cost)
    if not allowed[rows, cols].all():
        return None
    return float(value[rows, cols].sum())


def rank_set_bounds(
    cheap: npt.ArrayLike,
    rank_low: npt.ArrayLike,
    rank_high: npt.ArrayLike,
    better: npt.NDArray[np.bool_],
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Spearman's and Kendall's bounds over every true ordering the rank sets allow.

    Args:
        cheap: one value per policy, higher = better.
        rank_low: each policy's best allowed rank (1 = best).
        rank_high: each policy's worst allowed rank.
        better: the established behavioural orders (``better[j, k]``: j above k).

    Returns:
        ``((spearman_low, spearman_high), (kendall_low, kendall_high))``.

    >>> b = np.zeros((3, 3), dtype=bool)
    >>> rank_set_bounds([3, 2, 1], [1, 1, 1], [3, 3, 3], b)  # nothing established
    ((-1.0, 1.0), (-1.0, 1.0))
    >>> b[0, 1] = b[0, 2] = b[1, 2] = True
    >>> rank_set_bounds([3, 2, 1], [1, 2, 3], [1, 2, 3], b)  # a full order, agreed
    ((1.0, 1.0), (1.0, 1.0))
    """
    s = np.asarray(cheap, dtype=np.float64)
    low = np.asarray(rank_low, dtype=np.int64)
    high = np.asarray(rank_high, dtype=np.int64)
    k = s.size
    g = _midranks(s)
    gc = g - g.mean()
    sd_g = math.sqrt(float(gc @ gc) / k)
    nan2 = (math.nan, math.nan)
    if sd_g == 0 or k < 2:
        return nan2, nan2
    mean_t, sd_t = (k + 1) / 2.0, math.sqrt((k * k - 1) / 12.0)
    out = []
    for maximize in (False, True):
        total = _assignment_extreme(g, low, high, maximize)
        if total is None:
            out.append(1.0 if maximize else -1.0)
            continue
        rho = (total / k - g.mean() * mean_t) / (sd_g * sd_t)
        out.append(float(min(1.0, max(-1.0, round(rho, 12)))))
    sx = np.sign(s[:, None] - s[None, :])
    upper = np.triu(np.ones((k, k), dtype=bool), 1)
    fixed = np.where(better, 1.0, 0.0) - np.where(better.T, 1.0, 0.0)  # +1: j above k
    decided = (better | better.T) & upper
    fixed_sum = float(np.sum((sx * fixed)[decided]))
    open_pairs = float(np.sum(upper & ~(better | better.T) & (sx != 0)))
    den = math.sqrt(float(np.sum((sx != 0)[upper])) * float(upper.sum()))
    tau = ((fixed_sum - open_pairs) / den, (fixed_sum + open_pairs) / den)
    return (out[0], out[1]), (max(-1.0, tau[0]), min(1.0, tau[1]))


class BootstrapAgreement(NamedTuple):
    """Replicates of each statistic (``nan`` where a resample makes it undefined)."""

    pearson: FloatArray
    spearman: FloatArray
    kendall: FloatArray
    mmrv: FloatArray


def _resample_rate(x: FloatArray, clusters: npt.NDArray[np.int64] | None,
                   rng: np.random.Generator) -> float:
    if clusters is None:
        if np.all((x == 0) | (x == 1)):
            return float(rng.binomial(x.size, x.mean()) / x.size)
        return float(rng.choice(x, x.size).mean())
    ids = np.unique(clusters, return_inverse=True)[1]
    sums, counts = np.bincount(ids, weights=x), np.bincount(ids)
    pick = rng.integers(0, sums.size, sums.size)
    return float(sums[pick].sum() / max(counts[pick].sum(), 1))


def two_level_bootstrap(
    cheap: npt.ArrayLike,
    behaviour: Sequence[npt.ArrayLike],
    *,
    clusters: Sequence[npt.ArrayLike] | None = None,
    cheap_samples: Sequence[npt.ArrayLike] | None = None,
    reps: int = 2000,
    seed: int = 0,
) -> BootstrapAgreement:
    """Replicates over checkpoints (outer) and each checkpoint's episodes or scenes (inner).

    Args:
        cheap: the cheap value per checkpoint (higher = better).
        behaviour: per checkpoint, its behavioural outcomes (0/1 or a metric).
        clusters: per checkpoint, a scene label per outcome (scenes are resampled whole).
        cheap_samples: per checkpoint, the cheap side's own outcomes when it is measured
            too (simulation runs): resampled alike, else the cheap values stay fixed.
        reps: replicates.
        seed: the seed.

    Returns:
        A :class:`BootstrapAgreement`.

    >>> rng = np.random.default_rng(1)
    >>> runs = [rng.random(100) < p for p in (0.2, 0.4, 0.6, 0.8)]
    >>> boot = two_level_bootstrap([1, 2, 3, 4], [r.astype(float) for r in runs], reps=200)
    >>> float(np.nanmedian(boot.spearman)) > 0.5
    True
    """
    s = np.asarray(cheap, dtype=np.float64)
    xs = [np.asarray(b, dtype=np.float64) for b in behaviour]
    k = s.size
    if len(xs) != k or k < 2:
        raise InvalidInputError("the two-level bootstrap needs one behaviour sample per cheap "
                                "value, and two or more checkpoints")
    cl = None if clusters is None else [np.asarray(c) for c in clusters]
    cs = None if cheap_samples is None else [np.asarray(c, dtype=np.float64)
                                             for c in cheap_samples]
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 29]))
    out = np.full((4, reps), math.nan)
    for b in range(reps):
        idx = rng.integers(0, k, k)
        real = np.array([_resample_rate(xs[j], None if cl is None else cl[j], rng) for j in idx])
        sim = (np.array([_resample_rate(cs[j], None, rng) for j in idx]) if cs is not None
               else s[idx])
        out[0, b] = pearson(sim, real)
        out[1, b] = spearman(sim, real)
        out[2, b] = kendall_tau_b(sim, real)
        out[3, b] = mmrv(sim, real)
    return BootstrapAgreement(out[0], out[1], out[2], out[3])
