r"""Simultaneous confidence sets for the ranks of many policies, from pairwise tests.

The question seed 004 opens with -- "which of our six variants is actually best?" -- has an
honest answer only as a *set* of ranks per policy that holds for all policies at once.
Following Mogstad, Romano, Shaikh & Wilhelm (2024), "Inference for Ranks with Applications
to Mobility across Neighbourhoods and Academic Achievement across Countries", *Review of
Economic Studies* 91(1):476-518, the rank sets come from simultaneous inference on every
pairwise difference :math:`\theta_j - \theta_k`:

1. **One test per pair** that uses the design: the exact McNemar (sign) test on the discordant
   pairs of matched episodes; the sign-flip test over scenes when episodes share a scene
   (:func:`evalband.stats.clustered_paired_test`); Fisher's exact test for independent arms;
   for a declared metric, the sign-flip test of the matched differences. Each is reported
   two-sided as twice its smaller one-sided tail; all are symmetric, so the one-sided p in
   the observed direction is half of it.
2. **Holm over the** :math:`2M` **one-sided hypotheses** :math:`H_{jk}: \theta_j \le \theta_k`
   (:math:`M = K(K-1)/2` pairs, both directions; Holm 1979). "``j`` is established above
   ``k``" is the rejection of :math:`H_{jk}`. Holm keeps the family-wise error of these
   rejections at ``alpha`` under any dependence, so with probability at least ``1 - alpha``
   *no* established order is wrong (a tie counts as wrong either way). This is the stepdown
   of Mogstad et al.'s Section 3.3 with Holm's Bonferroni steps in place of their bootstrap
   critical values (valid for exact tests of any sample size).
3. **Rank sets.** With rank 1 the best, policy ``j``'s set is
   :math:`[1 + \#\{k \text{ established above } j\},\; K - \#\{k \text{ established below } j\}]`.
   When no established order is wrong, every true rank
   :math:`r_j = 1 + \#\{k: \theta_k > \theta_j\}` lies in its set: the sets cover all ranks
   jointly with probability at least ``1 - alpha`` (their Theorem 3.1, by the same
   argument). The same holds for the sets of Klein, Wright & Wieczorek (2020), *JRSS C*
   69(3):589-606, which compare Bonferroni-adjusted marginal intervals; the stepdown here
   rejects at least what their single step does.
4. **Tiers.** Policies are layered by the established orders: a policy's tier is one more
   than the deepest tier of any policy established above it (tier 1: no policy is
   established above it). No two policies of a tier are ordered; every policy below tier 1
   is established below some policy of the tier above.

Each pair's interval is at the level of the Holm step that decided it
(``1 - 2 alpha / (2M - r + 1)`` for the pair established at step ``r``,
``1 - 2 alpha / (2M - s)`` for every pair left open when Holm stopped after ``s``
establishments), so "the interval excludes 0" holds exactly when the pair is established.

Sources: Mogstad, M., Romano, J. P., Shaikh, A. M. & Wilhelm, D. (2024) *Rev. Econ. Stud.*
91:476-518; Klein, M., Wright, T. & Wieczorek, J. (2020) *J. R. Stat. Soc. C* 69:589-606;
Holm, S. (1979) *Scand. J. Statist.* 6:65-70; McNemar, Q. (1947) *Psychometrika* 12:153-157;
Fisher, R. A. (1935) *JRSS* 98:39-82.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from evalband._util.validate import check_probability
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.stats._types import Difference

__all__ = [
    "PairwiseTest",
    "RankSets",
    "directional_holm",
    "rank_intervals",
    "tiers_of",
    "pairwise_tests",
    "rank_policies",
    "pair_level",
    "pair_difference",
]

FloatArray = npt.NDArray[np.float64]
PairProcedure = Callable[[Sequence["PairwiseTest"], float],
                         tuple[npt.NDArray[np.bool_], FloatArray, FloatArray]]
"""Decides a ranking's pair tests at a joint ``alpha``: ``(established, adjusted, levels)``."""


class PairwiseTest(NamedTuple):
    r"""One pair's test: policy ``a`` against policy ``b`` (indices).

    ``estimate`` is :math:`\hat\theta_a - \hat\theta_b` on the data the test used (matched
    episodes when paired); ``p_value`` two-sided (twice the smaller one-sided tail);
    ``counts`` what the test counted (``a_only``/``b_only``/``both``/``neither`` matched,
    ``k_a``/``n_a``/``k_b``/``n_b`` independent, ``pairs``/``scenes`` for a metric).
    """

    a: int
    b: int
    estimate: float
    p_value: float
    method: str
    counts: dict[str, int]
    clusters: npt.NDArray[np.int64] | None = None


class RankSets(NamedTuple):
    """What :func:`rank_policies` decides (policies by index, rank 1 the best).

    ``better[j, k]``: ``j`` is established above ``k``. ``adjusted`` and ``levels`` are per
    test, in the order of ``tests``; ``established`` is the same decision per test.
    """

    estimates: FloatArray
    tests: tuple[PairwiseTest, ...]
    established: npt.NDArray[np.bool_]
    adjusted: FloatArray
    levels: FloatArray
    better: npt.NDArray[np.bool_]
    rank_low: npt.NDArray[np.int64]
    rank_high: npt.NDArray[np.int64]
    tiers: tuple[tuple[int, ...], ...]
    alpha: float


def _check_alpha(alpha: object) -> float:
    value = check_probability(alpha, "alpha", open_interval=True)
    if value >= 0.5:
        raise InvalidParameterError(f"alpha must be below 0.5 (a joint error rate); got {alpha!r}")
    return value


def directional_holm(
    p_values: Sequence[float] | FloatArray, alpha: float = 0.05
) -> tuple[npt.NDArray[np.bool_], FloatArray, FloatArray]:
    r"""Holm over both one-sided hypotheses of each pair, given each pair's two-sided p.

    Each pair ``i`` contributes :math:`H_i^+` and :math:`H_i^-`; the one-sided p in the
    observed direction is :math:`p_i/2` (symmetric tests), the other side's is at least
    :math:`1/2` and is taken as 1 (a valid, never-rejected p-value). Holm's step ``r`` over
    the :math:`2M` hypotheses rejects when :math:`p_{(r)}/2 \le \alpha / (2M - r + 1)`.

    Args:
        p_values: one two-sided p-value per pair.
        alpha: the family-wise error rate of the established orders.

    Returns:
        ``(established, adjusted, levels)``: per pair, whether its order is established,
        its Holm-adjusted one-sided p (established exactly when ``<= alpha``), and the
        two-sided confidence level of its compatible interval.

    >>> est, adj, lev = directional_holm([0.001, 0.024, 0.6], alpha=0.05)
    >>> est.tolist(), adj.round(4).tolist(), lev.round(4).tolist()
    ([True, False, False], [0.003, 0.06, 1.0], [0.9833, 0.98, 0.98])
    """
    level = _check_alpha(alpha)
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InvalidInputError("p_values must be a 1-D array of numbers in [0, 1]")
    m = p.size
    one = p / 2.0
    order = np.argsort(one, kind="stable")
    factors = 2 * m - np.arange(m)  # 2M, 2M - 1, ..., M + 1 for the first M steps
    raw = np.minimum(1.0, factors * one[order])
    adjusted_sorted = np.maximum.accumulate(raw) if m else raw
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    established = adjusted <= level
    steps = int(established.sum())
    levels = np.empty(m)
    step_of = np.empty(m, dtype=np.int64)
    step_of[order] = np.arange(1, m + 1)
    for i in range(m):
        if established[i]:
            levels[i] = 1.0 - 2.0 * level / (2 * m - step_of[i] + 1)
        else:
            levels[i] = 1.0 - 2.0 * level / (2 * m - steps)
    return established, adjusted, levels


def pair_level(policies: int, alpha: float = 0.05) -> float:
    """The two-sided level of the first Holm step: each pair tested at ``alpha / M``.

    A pair's power at this level is a lower bound on its power under the stepdown (Holm
    rejects at least what its first, Bonferroni, step rejects).

    >>> pair_level(6)
    0.0033333333333333335
    """
    k = int(policies)
    if k < 2:
        raise InvalidParameterError(f"ranking needs at least 2 policies; got {policies!r}")
    return _check_alpha(alpha) / (k * (k - 1) / 2)


def rank_intervals(
    better: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Each policy's rank set from the established orders (rank 1 the best).

    >>> b = np.array([[False, True, True], [False, False, False], [False, False, False]])
    >>> [x.tolist() for x in rank_intervals(b)]
    [[1, 2, 2], [1, 3, 3]]
    """
    k = better.shape[0]
    low = 1 + better.sum(axis=0).astype(np.int64)
    high = k - better.sum(axis=1).astype(np.int64)
    return low, high


def tiers_of(better: npt.NDArray[np.bool_], estimates: FloatArray) -> tuple[tuple[int, ...], ...]:
    """Policies layered by the established orders, each tier by estimate (best first).

    A policy's tier is one more than the deepest tier of any policy established above it.

    >>> b = np.zeros((4, 4), dtype=bool); b[0, 2] = b[0, 3] = b[1, 3] = True
    >>> tiers_of(b, np.array([0.9, 0.7, 0.5, 0.2]))
    ((0, 1), (2, 3))
    """
    k = better.shape[0]
    depth = np.zeros(k, dtype=np.int64)
    for _ in range(k):  # longest path from the top; K rounds settle any acyclic relation
        above = np.where(better, depth[:, None] + 1, 0).max(axis=0) if k else depth
        new = np.maximum(depth, above)
        if np.array_equal(new, depth):
            break
        depth = new
    out = []
    for t in range(int(depth.max()) + 1 if k else 0):
        members = [int(i) for i in np.flatnonzero(depth == t)]
        members.sort(key=lambda i: (-float(estimates[i]), i))
        out.append(tuple(members))
    return tuple(out)


def _binary(values: FloatArray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(np.all((finite == 0.0) | (finite == 1.0)))


def _pair_test(
    ya: FloatArray,
    yb: FloatArray,
    clusters: npt.NDArray[np.int64] | None,
    *,
    paired: bool,
    binary: bool,
    seed: int,
    a: int,
    b: int,
) -> PairwiseTest:
    from evalband.stats._clustered import clustered_paired_test, sign_flip_test
    from evalband.stats._procedure import paired_exact_p, unpaired_exact_p

    if not paired:
        if not binary:
            raise InvalidInputError(
                "a declared metric ranks matched episodes only (runs on one panel or a "
                "session's policies); rank independent runs by success rate")
        fa, fb = ya[np.isfinite(ya)], yb[np.isfinite(yb)]
        k_a, n_a, k_b, n_b = int(fa.sum()), fa.size, int(fb.sum()), fb.size
        if n_a == 0 or n_b == 0:
            return PairwiseTest(a, b, 0.0, 1.0, "none", {"k_a": k_a, "n_a": n_a, "k_b": k_b,
                                                         "n_b": n_b})
        p = unpaired_exact_p(k_a, n_a, k_b, n_b)
        return PairwiseTest(a, b, k_a / n_a - k_b / n_b, p, "fisher-exact",
                            {"k_a": k_a, "n_a": n_a, "k_b": k_b, "n_b": n_b})
    mask = np.isfinite(ya) & np.isfinite(yb)
    xa, xb = ya[mask], yb[mask]
    if xa.size == 0:
        counts = ({"both": 0, "a_only": 0, "b_only": 0, "neither": 0} if binary
                  else {"pairs": 0, "scenes": 0})
        return PairwiseTest(a, b, 0.0, 1.0, "none", counts)
    if binary:
        a_only = (xa > xb)
        b_only = (xb > xa)
        both = int(np.sum((xa == 1) & (xb == 1)))
        counts = {"both": both, "a_only": int(a_only.sum()), "b_only": int(b_only.sum()),
                  "neither": int(xa.size - both - a_only.sum() - b_only.sum())}
        estimate = float((a_only.sum() - b_only.sum()) / xa.size)
        if clusters is None:
            p = paired_exact_p(counts["a_only"], counts["b_only"])
            return PairwiseTest(a, b, estimate, p, "mcnemar-exact", counts)
        ids = np.unique(clusters[mask], return_inverse=True)[1]
        per_a = np.bincount(ids, weights=a_only).astype(np.int64)
        per_b = np.bincount(ids, weights=b_only).astype(np.int64)
        per_n = np.bincount(ids).astype(np.int64)
        result = clustered_paired_test(per_a, per_b, per_n)
        counts["scenes"] = int(per_n.size)
        return PairwiseTest(a, b, estimate, result.p_value, "clustered-sign-flip", counts,
                            clusters[mask])
    diff = xa - xb
    if clusters is None:
        x, w, scenes = diff, np.ones_like(diff), diff.size
    else:
        ids = np.unique(clusters[mask], return_inverse=True)[1]
        x = np.bincount(ids, weights=diff).astype(np.float64)
        w = np.bincount(ids).astype(np.float64)
        scenes = x.size
    result = sign_flip_test(x, w, seed=seed)
    return PairwiseTest(a, b, float(diff.mean()), result.p_value, "sign-flip",
                        {"pairs": int(diff.size), "scenes": int(scenes)})


def pairwise_tests(
    values: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    paired: bool = True,
    seed: int = 0,
) -> tuple[PairwiseTest, ...]:
    """Every pair's test (``a < b`` by index) on a policies x episodes matrix.

    Args:
        values: ``K x N``: policy ``j``'s value on episode (matching key) ``i``; ``nan`` where
            it has none (not played, an error). 0/1 values are success; others a metric.
        clusters: ``N`` cluster ids (a scene): matched episodes of one scene are one unit.
        paired: whether column ``i`` is the same condition for every policy.
        seed: Monte Carlo seed of a sign-flip test beyond 16 non-integer clusters.

    Returns:
        One :class:`PairwiseTest` per pair.

    >>> y = np.array([[1, 1, 1, 1, 1, 1, 1, 0], [0, 0, 0, 0, 0, 0, 1, 0]], float)
    >>> t, = pairwise_tests(y)
    >>> t.method, t.counts["a_only"], round(t.p_value, 4)
    ('mcnemar-exact', 6, 0.0312)
    """
    y = np.asarray(values, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] < 2:
        raise InvalidInputError(f"values must be policies x episodes with >= 2 policies; got "
                                f"shape {y.shape}")
    cl = None
    if clusters is not None:
        cl = np.asarray(clusters, dtype=np.int64)
        if cl.shape != (y.shape[1],):
            raise InvalidInputError(f"clusters must give one id per episode ({y.shape[1]}); "
                                    f"got shape {cl.shape}")
    binary = _binary(y)
    k = y.shape[0]
    return tuple(
        _pair_test(y[a], y[b], cl, paired=paired, binary=binary, seed=seed, a=a, b=b)
        for a in range(k) for b in range(a + 1, k)
    )


def rank_policies(
    values: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    paired: bool = True,
    alpha: float = 0.05,
    seed: int = 0,
    procedure: PairProcedure | None = None,
) -> RankSets:
    """Rank sets, established orders and tiers of ``K`` policies, jointly at ``1 - alpha``.

    Args:
        values: ``K x N`` as :func:`pairwise_tests` takes it.
        clusters: cluster (scene) id per column, or ``None``.
        paired: columns are matched conditions.
        alpha: the joint error rate (every rank set covers with probability ``1 - alpha``).
        seed: passed to :func:`pairwise_tests`.
        procedure: decides the pairs' tests at ``alpha``: ``(established, adjusted, levels)``
            as :func:`directional_holm` returns them (its default; ``evalband rank`` passes
            the decision engine's, ``evalband.analysis.decide`` with the same procedure).

    Returns:
        A :class:`RankSets`.

    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random((3, 200)) < np.array([[0.8], [0.5], [0.45]])).astype(float)
    >>> r = rank_policies(y)
    >>> r.rank_low.tolist(), r.rank_high.tolist(), r.tiers
    ([1, 2, 2], [1, 3, 3], ((0,), (1, 2)))
    """
    y = np.asarray(values, dtype=np.float64)
    tests = pairwise_tests(y, clusters=clusters, paired=paired, seed=seed)
    k = y.shape[0]
    with np.errstate(invalid="ignore"):
        estimates = np.array([np.nanmean(row) if np.isfinite(row).any() else math.nan
                              for row in y])
    if procedure is None:
        established, adjusted, levels = directional_holm([t.p_value for t in tests], alpha)
    else:
        established, adjusted, levels = procedure(tests, alpha)
    better = np.zeros((k, k), dtype=np.bool_)
    for t, done in zip(tests, established, strict=True):
        if done and t.estimate != 0.0:
            if t.estimate > 0:
                better[t.a, t.b] = True
            else:
                better[t.b, t.a] = True
    low, high = rank_intervals(better)
    order_key = np.where(np.isfinite(estimates), estimates, -np.inf)
    return RankSets(estimates, tests, established, adjusted, levels, better, low, high,
                    tiers_of(better, order_key), float(alpha))


def pair_difference(
    values: npt.ArrayLike,
    test: PairwiseTest,
    confidence: float,
    *,
    clusters: npt.ArrayLike | None = None,
    flip: bool = False,
) -> Difference | None:
    """The interval of ``test``'s difference at ``confidence``, compatible with its p-value.

    Matched episodes: Newcombe's paired score interval made compatible with the exact
    McNemar test; independent arms: the Miettinen-Nurminen score interval made compatible
    with Fisher's test (:func:`evalband.stats.compatible_difference`); matched scenes: the
    inverted scene-level test (:func:`evalband.stats.clustered_paired_interval`). The
    interval excludes 0 exactly when ``test.p_value <= 1 - confidence``. ``flip``: for
    ``b - a`` instead of ``a - b``. ``None`` for a declared metric (its test is printed
    without an interval).

    >>> y = np.array([[1, 1, 1, 1, 1, 1, 1, 0], [0, 0, 0, 0, 0, 0, 1, 0]], float)
    >>> t, = pairwise_tests(y)
    >>> d = pair_difference(y, t, 0.95)
    >>> round(d.estimate, 3), d.low > 0
    (0.75, True)
    """
    from evalband.stats._clustered import clustered_paired_interval
    from evalband.stats._procedure import compatible_difference

    y = np.asarray(values, dtype=np.float64)
    counts = dict(test.counts)
    if test.method == "fisher-exact":
        if flip:
            counts = {"k_a": counts["k_b"], "n_a": counts["n_b"], "k_b": counts["k_a"],
                      "n_b": counts["n_a"]}
        return compatible_difference(counts, paired=False, confidence=confidence,
                                     p_value=test.p_value)
    if test.method == "mcnemar-exact":
        if flip:
            counts["a_only"], counts["b_only"] = counts["b_only"], counts["a_only"]
        return compatible_difference(counts, paired=True, confidence=confidence,
                                     p_value=test.p_value)
    if test.method == "clustered-sign-flip":
        if clusters is None:
            raise InvalidInputError("a clustered test's interval needs the clusters")
        cl = np.asarray(clusters, dtype=np.int64)
        ya, yb = (y[test.b], y[test.a]) if flip else (y[test.a], y[test.b])
        mask = np.isfinite(ya) & np.isfinite(yb)
        ids = np.unique(cl[mask], return_inverse=True)[1]
        per_a = np.bincount(ids, weights=ya[mask] > yb[mask]).astype(np.int64)
        per_b = np.bincount(ids, weights=yb[mask] > ya[mask]).astype(np.int64)
        return clustered_paired_interval(per_a, per_b, np.bincount(ids), confidence)
    return None
