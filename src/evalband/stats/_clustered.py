r"""Tests and intervals that treat a cluster (a scene, a condition) as the unit of dependence.

Attempts that share a scene share its fate: two attempts of one policy on one captured
start state, or two policies on the same scene, are not independent draws. Counting them
as independent makes every band too narrow and every test too eager (seed 004's 27% flip
floor is exactly this dependence). The functions here work on **per-cluster** counts.

* :func:`sign_flip_test` -- the randomization (sign-flip) test that per-cluster statistics
  are symmetric about ``delta * weight`` (Fisher 1935, *The Design of Experiments*, §21;
  Pitman 1937, *JRSS Suppl.* 4:119-130). Exact: for integer statistics the null
  distribution of :math:`\sum_s \varepsilon_s x_s` over all :math:`2^S` sign vectors is a
  convolution (one step per cluster, any number of clusters); otherwise it is enumerated
  (up to 16 clusters) or drawn by seeded Monte Carlo.
* :func:`clustered_paired_test`, :func:`clustered_paired_interval` -- two policies on
  matched pairs grouped in scenes (*clustered matched-pair data*). The statistic is the
  net discordance per scene, :math:`x_s = b_s - c_s` (pairs only A won minus pairs only B
  won); under the null the policy labels are exchangeable within a scene, so every
  :math:`x_s` is symmetric about 0 and the sign-flip test is exact. Its normal
  approximation, :math:`(\sum x_s)^2 / \sum x_s^2`, is the clustered McNemar statistic of
  Durkalski, Palesch, Lipsitz & Rust (2003), *Statistics in Medicine* 22:2417-2428
  (Obuchowski 1998, *Statistics in Medicine* 17:1495-1507, for its variance); with one
  pair per scene it is McNemar's exact test. The interval inverts the same family of tests.
* :mod:`evalband.stats._cluster_rates` holds the rates: ``cluster_proportion_interval`` (a
  flip rate or success rate over scenes) and ``clustered_diff_unpaired`` (one policy's rate
  in two sessions).

**Compatibility.** Every interval here is the set of differences :math:`\delta` that the
printed test does not reject at the interval's level, computed by bisection from the
estimate outwards with 0 used as a bracket: "the interval excludes 0" is, by
construction, "the printed p-value at :math:`\delta = 0` is at most ``1 - confidence``".
For Holm across comparisons, :func:`evalband.stats.holm_levels` gives each comparison the
level of the Holm step that decided it, so the intervals agree with the adjusted p-values.

**Guards.** A sign-flip test conditions on :math:`|x_s|`: when every scene ties
(:math:`x_s = 0`) it would call every shift but 0 impossible, a zero-width interval. The
paired and grouped tests therefore report the larger of two valid p-values, the sign-flip
test's and a score test's that ignores the clustering (Tango 1998 for pairs,
Miettinen-Nurminen 1985 for groups); the larger of two valid p-values is valid, its
rejection region lies inside the sign-flip test's, and its interval is the union of the two
acceptance sets, so it is never narrower than either (and never of zero width).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from evalband._util.validate import check_confidence
from evalband.errors import InvalidCountsError, InvalidInputError, InvalidParameterError
from evalband.stats._types import Difference, TestResult

__all__ = [
    "sign_flip_test",
    "clustered_paired_test",
    "clustered_paired_interval",
    "clustered_grouped_test",
    "clustered_grouped_interval",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Clusters up to which non-integer statistics are enumerated exactly (2**16 sign vectors).
ENUMERATE_MAX = 16
#: Largest support (cells) of the exact integer convolution before Monte Carlo is used.
_GRID_MAX = 4_000_000
_MC_REPS = 20_000
_REL_TIE = 1e-9
_BISECT_STEPS = 60


class _Null(NamedTuple):
    """The sign-flip null distribution: points ``(u, v) = (sum e x, sum e w)`` with mass."""

    u: FloatArray
    v: FloatArray
    mass: FloatArray
    method: str


def _as_counts(values: ArrayLike, name: str) -> IntArray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be one count per cluster (a 1-D array)")
    if arr.size and arr.dtype.kind not in "iuf":
        raise InvalidCountsError(f"{name} must be whole numbers >= 0; got dtype {arr.dtype}")
    flt = arr.astype(np.float64)
    if not np.all(np.isfinite(flt)) or np.any(flt < 0) or np.any(flt != np.round(flt)):
        raise InvalidCountsError(f"{name} must be whole numbers >= 0 per cluster; got {arr!r}")
    return flt.astype(np.int64)


def _as_values(values: ArrayLike, name: str) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} must be one finite number per cluster (a 1-D array)")
    return arr


def _null(x: FloatArray, w: FloatArray, seed: int) -> _Null:
    """Null distribution of ``(sum e_s x_s, sum e_s w_s)`` over random signs ``e``."""
    keep = (x != 0.0) | (w != 0.0)
    x, w = x[keep], w[keep]
    if x.size == 0:
        return _Null(np.zeros(1), np.zeros(1), np.ones(1), "sign-flip-exact")
    integer = bool(np.all(x == np.round(x)) and np.all(w == np.round(w)))
    span_u = int(np.abs(x).sum()) if integer else 0
    span_w = int(np.abs(w).sum()) if integer else 0
    if integer and (2 * span_u + 1) * (2 * span_w + 1) <= _GRID_MAX:
        grid = np.zeros((2 * span_u + 1, 2 * span_w + 1))
        grid[span_u, span_w] = 1.0
        reach_u = reach_w = 0  # the support so far: |u| <= reach_u, |v| <= reach_w
        for xs, ws in zip(x.astype(np.int64).tolist(), w.astype(np.int64).tolist(), strict=True):
            lo_u, hi_u = span_u - reach_u, span_u + reach_u + 1
            lo_w, hi_w = span_w - reach_w, span_w + reach_w + 1
            block = 0.5 * grid[lo_u:hi_u, lo_w:hi_w]
            grid[lo_u:hi_u, lo_w:hi_w] = 0.0
            grid[lo_u + xs : hi_u + xs, lo_w + ws : hi_w + ws] += block
            grid[lo_u - xs : hi_u - xs, lo_w - ws : hi_w - ws] += block
            reach_u += abs(xs)
            reach_w += abs(ws)
        iu, iv = np.nonzero(grid > 0.0)
        return _Null(
            (iu - span_u).astype(np.float64),
            (iv - span_w).astype(np.float64),
            grid[iu, iv],
            "sign-flip-exact",
        )
    if x.size <= ENUMERATE_MAX:
        codes = np.arange(2**x.size, dtype=np.int64)[:, None]
        signs = 1.0 - 2.0 * ((codes >> np.arange(x.size)) & 1).astype(np.float64)
        size = signs.shape[0]
        return _Null(signs @ x, signs @ w, np.full(size, 1.0 / size), "sign-flip-exact")
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(_MC_REPS, x.size))
    u = np.concatenate(([x.sum()], signs @ x))  # the observed signs count once: p >= 1/(B+1)
    v = np.concatenate(([w.sum()], signs @ w))
    return _Null(u, v, np.full(u.size, 1.0 / u.size), "sign-flip-monte-carlo")


def _flip_p_zero(x: IntArray) -> float:
    """Exact two-sided sign-flip p-value of ``sum x`` for integer ``x`` (1-D convolution).

    Clusters with equal ``|x|`` are one binomial: ``c`` of them sum to ``(2j - c)|x|`` with
    probability ``Bin(j; c, 1/2)``.
    """
    from scipy.stats import binom

    values, counts = np.unique(np.abs(x[x != 0]), return_counts=True)
    dist = np.ones(1)
    for value, count in zip(values.tolist(), counts.tolist(), strict=True):
        kernel = np.zeros(2 * count * value + 1)
        kernel[:: 2 * value] = binom.pmf(np.arange(count + 1), count, 0.5)
        dist = np.convolve(dist, kernel)
    span = (dist.size - 1) // 2
    observed = abs(int(x.sum()))
    hit = np.abs(np.arange(dist.size) - span) >= observed
    return float(min(1.0, dist[hit].sum()))


def _flip_p(null: _Null, total_x: float, total_w: float, delta: float) -> float:
    """Two-sided sign-flip p-value of ``sum (x_s - delta w_s)``."""
    observed = abs(total_x - delta * total_w)
    tol = _REL_TIE * max(1.0, abs(total_x), abs(total_w))
    hit = np.abs(null.u - delta * null.v) >= observed - tol
    return float(min(1.0, null.mass[hit].sum()))


def _invert(
    p_of: Callable[[float], float], estimate: float, alpha: float
) -> tuple[float, float]:
    """``[low, high]`` of the differences in [-1, 1] whose p-value exceeds ``alpha``.

    Bisection from the estimate (p = 1 there) outwards; 0 is used as a bracket, so the
    interval excludes 0 exactly when ``p_of(0) <= alpha``.
    """
    zero_in = p_of(0.0) > alpha

    def edge(side: float) -> float:
        inside = min(estimate, 0.0) if side < 0 else max(estimate, 0.0)
        if not zero_in:
            inside = estimate
        if not zero_in and (estimate > 0.0) == (side < 0.0) and estimate != 0.0:
            outside = 0.0  # 0 is rejected and lies on this side of the estimate
        else:
            outside = side
            if p_of(outside) > alpha:
                return outside
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (inside + outside)
            if p_of(mid) > alpha:
                inside = mid
            else:
                outside = mid
        return inside

    return edge(-1.0), edge(1.0)


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or int(seed) < 0:
        raise InvalidParameterError(f"seed must be a whole number >= 0; got {seed!r}")
    return int(seed)


def sign_flip_test(
    x: ArrayLike, weights: ArrayLike | None = None, *, delta: float = 0.0, seed: int = 0
) -> TestResult:
    r"""Sign-flip randomization test that cluster statistics are symmetric about ``delta * w``.

    With :math:`r_s = x_s - \delta w_s` and :math:`T = \sum_s r_s`, the two-sided p-value is
    the share of the :math:`2^S` sign vectors :math:`\varepsilon` with
    :math:`|\sum_s \varepsilon_s r_s| \ge |T|` (Fisher 1935, *The Design of Experiments*,
    §21; Pitman 1937, *JRSS Suppl.* 4:119-130). It is exact when, under the null, each
    :math:`r_s` is symmetric about 0 given :math:`|r_s|` (e.g. two policies whose labels
    are exchangeable within a scene). Integer ``x`` and ``weights`` are convolved exactly
    (any number of clusters); otherwise the sign vectors are enumerated (up to 16 clusters)
    or drawn (20,000, seeded, the observed one counted: :math:`p = (1 + B_{\ge})/(1 + B)`,
    a valid p-value).

    Args:
        x: one statistic per cluster.
        weights: one weight per cluster (default 1): the null shifts ``x`` by ``delta * w``.
        delta: the null value of :math:`\sum x / \sum w`.
        seed: the Monte Carlo seed (used only beyond 16 non-integer clusters).

    Returns:
        A :class:`~evalband.stats.TestResult` (``statistic`` :math:`T`).

    Raises:
        InvalidInputError: arrays that are not 1-D, finite and of equal length.

    >>> sign_flip_test([1, 1, 1, 1, 1]).p_value  # 2 of 32 sign vectors reach |T| = 5
    0.0625
    >>> sign_flip_test([2, -1, 0, 1]).p_value  # 6 of the 8 sums of +-2 +-1 +-1 reach |2|
    0.75
    """
    xs = _as_values(x, "x")
    ws = np.ones_like(xs) if weights is None else _as_values(weights, "weights")
    if ws.size != xs.size:
        raise InvalidInputError(f"weights must match x: {ws.size} weights for {xs.size} values")
    null = _null(xs, ws, _check_seed(seed))
    d = float(delta)
    p = _flip_p(null, float(xs.sum()), float(ws.sum()), d)
    stat = float(xs.sum() - d * ws.sum())
    return TestResult(stat, p, null.method, {"clusters": int(xs.size), "delta": d})


# --------------------------------------------------------------------------- paired


def _paired_inputs(
    a_only: ArrayLike, b_only: ArrayLike, pairs: ArrayLike
) -> tuple[IntArray, IntArray, IntArray]:
    b = _as_counts(a_only, "a_only")
    c = _as_counts(b_only, "b_only")
    n = _as_counts(pairs, "pairs")
    if not b.size == c.size == n.size:
        raise InvalidInputError(
            f"a_only, b_only and pairs need one count per scene each; got {b.size}, "
            f"{c.size}, {n.size}"
        )
    if np.any(b + c > n):
        raise InvalidCountsError("a scene has more discordant pairs (a_only + b_only) than pairs")
    if n.sum() == 0:
        raise InvalidCountsError("no matched pairs: every scene has pairs = 0")
    return b, c, n


def _normal_p(z: float) -> float:
    """Two-sided normal p-value of ``|z|`` (erfc: no scipy.stats call in the inner loops)."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def _tango_p(b: int, c: int, n: int) -> Callable[[float], float]:
    from evalband.stats._difference import _tango_q

    def p(delta: float) -> float:
        num = b - c - n * delta
        var = n * (2.0 * _tango_q(delta, b, c, n) + delta * (1.0 - delta))
        if var <= 0.0:
            return 1.0 if abs(num) <= 1e-12 else 0.0
        return _normal_p(num / math.sqrt(var))

    return p


class _PairedFamily(NamedTuple):
    p_zero: float
    flip_zero: float
    score_zero: float
    p_of: Callable[[float], float]
    estimate: float


def _paired_family(b: IntArray, c: IntArray, n: IntArray, *, intervals: bool) -> _PairedFamily:
    x = b - c
    total_x, total_w = float(x.sum()), float(n.sum())
    score = _tango_p(int(b.sum()), int(c.sum()), int(n.sum()))
    flip_zero, score_zero = _flip_p_zero(x), score(0.0)
    p_zero = max(flip_zero, score_zero)
    if not intervals:
        return _PairedFamily(p_zero, flip_zero, score_zero, lambda d: p_zero, total_x / total_w)
    null = _null(x.astype(np.float64), n.astype(np.float64), 0)

    def p_of(delta: float) -> float:
        if delta == 0.0:
            return p_zero  # the very number the test prints
        return max(_flip_p(null, total_x, total_w, delta), score(delta))

    return _PairedFamily(p_zero, flip_zero, score_zero, p_of, total_x / total_w)


def clustered_paired_test(a_only: ArrayLike, b_only: ArrayLike, pairs: ArrayLike) -> TestResult:
    r"""Test of equal success rates for two policies on matched pairs grouped in scenes.

    Per scene :math:`s`: :math:`n_s` matched pairs (attempt :math:`k` of A with attempt
    :math:`k` of B), :math:`b_s` won by A only, :math:`c_s` by B only. Under the null the
    policy labels are exchangeable within each scene (equal policies, order randomized in
    the block), so the net discordance :math:`x_s = b_s - c_s` is symmetric about 0 whatever
    the scenes share, and the exact sign-flip test over scenes (:func:`sign_flip_test`)
    keeps its level for any dependence inside a scene. Its normal form
    :math:`(\sum x_s)^2/\sum x_s^2` is the clustered McNemar statistic of Durkalski et al.
    (2003, *Statistics in Medicine* 22:2417-2428); with one pair per scene the test is
    McNemar's exact test. The p-value reported is
    :math:`\max(p_\text{sign-flip}, p_\text{McNemar asymptotic})`: the second (Tango's 1998
    score test at 0) is the guard that keeps the compatible interval
    (:func:`clustered_paired_interval`) from collapsing when every scene ties; the larger of
    two valid p-values is valid.

    Args:
        a_only: per scene, matched pairs where only A succeeded.
        b_only: per scene, matched pairs where only B succeeded.
        pairs: per scene, matched pairs.

    Returns:
        A :class:`~evalband.stats.TestResult`, ``statistic`` the total net discordance;
        ``details``: ``sign_flip_p``, ``score_p``, ``scenes``, ``pairs``, ``a_only``,
        ``b_only``.

    Raises:
        InvalidCountsError: counts that are not whole, negative, inconsistent, or no pair.
        InvalidInputError: arrays of different lengths.

    >>> round(clustered_paired_test([1, 1, 2, 1, 1, 2], [0, 0, 0, 0, 1, 0], [2] * 6).p_value, 4)
    0.0625
    """
    b, c, n = _paired_inputs(a_only, b_only, pairs)
    fam = _paired_family(b, c, n, intervals=False)
    details = {
        "sign_flip_p": fam.flip_zero,
        "score_p": fam.score_zero,
        "scenes": int(np.count_nonzero(n)),
        "pairs": int(n.sum()),
        "a_only": int(b.sum()),
        "b_only": int(c.sum()),
    }
    return TestResult(float((b - c).sum()), fam.p_zero, "clustered-sign-flip", details)


def clustered_paired_interval(
    a_only: ArrayLike, b_only: ArrayLike, pairs: ArrayLike, confidence: float = 0.95
) -> Difference:
    r"""The differences :math:`p_A - p_B` that :func:`clustered_paired_test`'s family accepts.

    For each :math:`\delta`, the test is the sign-flip test of
    :math:`\sum_s (x_s - \delta n_s)` over scenes (the same exact null distribution, shifted)
    together with Tango's score test of :math:`\delta` (Tango 1998, *Statistics in Medicine*
    17:891-908); :math:`\delta` is in the interval when the larger of the two p-values
    exceeds ``1 - confidence``. At :math:`\delta = 0` this is exactly the p-value of
    :func:`clustered_paired_test`, so the interval excludes 0 exactly when that test rejects
    at ``1 - confidence``. The estimate is :math:`\sum_s x_s / \sum_s n_s`, the difference
    of the two policies' success rates over the matched pairs.

    Args:
        a_only: per scene, matched pairs where only A succeeded.
        b_only: per scene, matched pairs where only B succeeded.
        pairs: per scene, matched pairs.
        confidence: two-sided level in (0, 1).

    Returns:
        A :class:`~evalband.stats.Difference` (method ``"clustered-sign-flip"``, paired).

    Raises:
        InvalidCountsError: as :func:`clustered_paired_test`.
        InvalidParameterError: ``confidence`` outside (0, 1).

    >>> d = clustered_paired_interval([2, 1, 2, 1, 1, 2, 2], [0] * 7, [2] * 7)
    >>> round(d.estimate, 4), d.low > 0
    (0.7857, True)
    """
    level = check_confidence(confidence)
    b, c, n = _paired_inputs(a_only, b_only, pairs)
    fam = _paired_family(b, c, n, intervals=True)
    low, high = _invert(fam.p_of, fam.estimate, 1.0 - level)
    counts = {"a_only": int(b.sum()), "b_only": int(c.sum()), "pairs": int(n.sum()),
              "scenes": int(np.count_nonzero(n))}
    return Difference(fam.estimate, low, high, "clustered-sign-flip", level, True, counts)


# --------------------------------------------------------------------------- grouped


def _grouped_inputs(
    k_a: ArrayLike, n_a: ArrayLike, k_b: ArrayLike, n_b: ArrayLike
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    ka, na = _as_counts(k_a, "k_a"), _as_counts(n_a, "n_a")
    kb, nb = _as_counts(k_b, "k_b"), _as_counts(n_b, "n_b")
    if not ka.size == na.size == kb.size == nb.size:
        raise InvalidInputError("k_a, n_a, k_b and n_b need one count per scene each")
    if np.any(ka > na) or np.any(kb > nb):
        raise InvalidCountsError("a scene has more successes than trials")
    both = (na > 0) & (nb > 0)
    if not both.any():
        raise InvalidCountsError("no scene has trials of both sides")
    return ka[both], na[both], kb[both], nb[both]


def _grouped_family(
    ka: IntArray, na: IntArray, kb: IntArray, nb: IntArray, seed: int, *, intervals: bool
) -> tuple[float, float, float, Callable[[float], float], float]:
    """``(p_zero, sign_flip_p, score_p, p_of, estimate)`` of the grouped comparison."""
    # x_s = n_b k_a - n_a k_b = n_a n_b (phat_a - phat_b): integer; weights w_s = n_a n_b.
    from evalband.stats._cluster_rates import _mn_p

    x = nb * ka - na * kb
    w = na * nb
    tx, tw = float(x.sum()), float(w.sum())
    score = _mn_p(float(ka.sum()), float(na.sum()), float(kb.sum()), float(nb.sum()), None)
    flip_zero, score_zero = _flip_p_zero(x), score(0.0)
    p_zero = max(flip_zero, score_zero)
    if not intervals:
        return p_zero, flip_zero, score_zero, lambda d: p_zero, tx / tw
    null = _null(x.astype(np.float64), w.astype(np.float64), seed)

    def p_of(delta: float) -> float:
        if delta == 0.0:
            return p_zero
        return max(_flip_p(null, tx, tw, delta), score(delta))

    return p_zero, flip_zero, score_zero, p_of, tx / tw


def clustered_grouped_test(
    k_a: ArrayLike, n_a: ArrayLike, k_b: ArrayLike, n_b: ArrayLike, *, seed: int = 0
) -> TestResult:
    r"""Equal success of two groups of trials that share scenes (pooled policies per scene).

    Per scene :math:`s`, side A has :math:`k_{a,s}` successes of :math:`n_{a,s}` trials and
    side B :math:`k_{b,s}` of :math:`n_{b,s}`; scenes with trials on one side only are left
    out. The scene statistic :math:`x_s = n_{a,s} n_{b,s} (\hat p_{a,s} - \hat p_{b,s})` with
    weight :math:`w_s = n_{a,s} n_{b,s}` (so :math:`\sum x / \sum w` is the mean per-scene
    difference, the pooled difference when every scene is complete) is tested by the
    sign-flip test over scenes (:func:`sign_flip_test`), guarded by the Miettinen-Nurminen
    score test on the pooled counts (the larger p-value is reported). With groups of equal
    size and exchangeable policies each :math:`x_s` is symmetric under the null and the test
    is exact; with unequal groups :math:`x_s` has mean 0 but may be skewed, and the
    (unstudentized) sign-flip test is asymptotically valid in the number of scenes, since its
    null variance :math:`\sum x_s^2` estimates :math:`\mathrm{Var}(\sum x_s)` (Romano 1990,
    *JASA* 85:686-692).

    Args:
        k_a: per scene, successes of side A.
        n_a: per scene, trials of side A.
        k_b: per scene, successes of side B.
        n_b: per scene, trials of side B.
        seed: unused by the test (its p-value is always exact); kept for symmetry with
            :func:`clustered_grouped_interval`.

    Returns:
        A :class:`~evalband.stats.TestResult` with ``sign_flip_p`` and ``score_p``.

    Raises:
        InvalidCountsError: bad counts or no scene with both sides.

    >>> clustered_grouped_test([2, 2, 2], [2, 2, 2], [0, 0, 0], [2, 2, 2]).p_value
    0.25
    """
    ka, na, kb, nb = _grouped_inputs(k_a, n_a, k_b, n_b)
    p_zero, p_flip, p_score, _, est = _grouped_family(
        ka, na, kb, nb, _check_seed(seed), intervals=False
    )
    details = {"sign_flip_p": p_flip, "score_p": p_score, "scenes": int(ka.size)}
    return TestResult(est, p_zero, "clustered-sign-flip-grouped", details)


def clustered_grouped_interval(
    k_a: ArrayLike,
    n_a: ArrayLike,
    k_b: ArrayLike,
    n_b: ArrayLike,
    confidence: float = 0.95,
    *,
    seed: int = 0,
) -> Difference:
    """The differences that :func:`clustered_grouped_test`'s family accepts (compatible).

    Args:
        k_a: per scene, successes of side A.
        n_a: per scene, trials of side A.
        k_b: per scene, successes of side B.
        n_b: per scene, trials of side B.
        confidence: two-sided level in (0, 1).
        seed: Monte Carlo seed for the interval's sign-flip tests when the exact
            convolution would be too large (the p-value at 0 is always exact).

    Returns:
        A :class:`~evalband.stats.Difference` (unpaired, method
        ``"clustered-sign-flip-grouped"``).

    Raises:
        InvalidCountsError: bad counts or no scene with both sides.
        InvalidParameterError: ``confidence`` outside (0, 1).

    >>> d = clustered_grouped_interval([2, 2, 2], [2, 2, 2], [0, 0, 0], [2, 2, 2])
    >>> d.estimate, d.low < 0 < d.high
    (1.0, True)
    """
    level = check_confidence(confidence)
    ka, na, kb, nb = _grouped_inputs(k_a, n_a, k_b, n_b)
    *_, p_of, est = _grouped_family(ka, na, kb, nb, _check_seed(seed), intervals=True)
    low, high = _invert(p_of, est, 1.0 - level)
    counts = {"k_a": int(ka.sum()), "n_a": int(na.sum()), "k_b": int(kb.sum()),
              "n_b": int(nb.sum()), "scenes": int(ka.size)}
    return Difference(est, low, high, "clustered-sign-flip-grouped", level, False, counts)
