"""Bootstrap confidence intervals: plain, stratified and cluster, with an explicit seed.

For a success rate (a 0/1 outcome array, or counts ``k`` of ``n``) the index-resampling
bootstrap's success count is a sum of ``n`` independent Bernoulli(k/n) draws, i.e. it is
exactly Binomial(n, k/n). So instead of building a ``(reps, n)`` index matrix we draw the
counts from that binomial. Going one step further, the ``reps`` replicate counts enter
the percentile interval only through their histogram, and the histogram of ``reps``
i.i.d. draws from a pmf ``pi`` is exactly Multinomial(reps, pi): when ``n + 1 <= reps``
we draw that histogram directly (``n + 1`` conditional binomial draws). Either way the
interval has exactly the distribution of the index bootstrap's interval; ``fast=False``
runs the index bootstrap itself (the reference the benchmark and the tests compare to).

Every path ends in the same percentile step, :func:`_histogram_quantiles`, applied to
the replicates' histogram (values, multiplicities): it reproduces ``numpy.quantile``'s
default (linear) rule.

References:
    Efron, B. (1979), "Bootstrap methods: another look at the jackknife", *Annals of
    Statistics* 7:1-26 (percentile interval).
    Efron, B. (1987), "Better bootstrap confidence intervals", *JASA* 82:171-185 (BCa).
    Efron, B. & Tibshirani, R. J. (1993), *An Introduction to the Bootstrap*, Chapman &
    Hall: chapter 13 (percentile interval), section 14.3 (BCa).
    Efron, B. & Tibshirani, R. J. (1993): the "resampling vector" (a resample's counts
    of each observation are Multinomial(n, (1/n, ..., 1/n))) and chapter 8 (data in
    several samples, each resampled on its own); used by
    :func:`paired_stratified_bootstrap_interval`.
    Davison, A. C. & Hinkley, D. V. (1997), *Bootstrap Methods and their Application*,
    Cambridge University Press: section 3.2 (several samples, strata), section 3.8
    (hierarchical data: resampling clusters).
    Field, C. A. & Welsh, A. H. (2007), "Bootstrapping clustered data", *JRSS B*
    69:369-390.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from evalband._util.validate import as_count, check_choice, check_confidence, check_k_n
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.stats._types import Interval

__all__ = [
    "bootstrap_interval",
    "stratified_bootstrap_interval",
    "paired_stratified_bootstrap_interval",
    "cluster_bootstrap_interval",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Seed = int | np.random.Generator
Statistic = str | Callable[..., Any]

_CHUNK_ELEMENTS = 1 << 21  # bound on the index matrix: ~16 MiB of int64 per chunk
_STATISTICS = ("mean", "median")
_BOOT_METHODS = ("percentile", "bca")


# --------------------------------------------------------------------------- validation


def _rng(seed: object) -> np.random.Generator:
    """A Generator from an explicit seed; ``None`` (non-reproducible) is refused."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool) and seed >= 0:
        return np.random.default_rng(int(seed))
    raise InvalidParameterError(
        "seed must be a non-negative int or a numpy.random.Generator (randomness is "
        f"explicit so the same call gives the same answer), got {seed!r}"
    )


def _check_reps(reps: object) -> int:
    as_float = (
        float(reps) if isinstance(reps, numbers.Real) and not isinstance(reps, bool) else math.nan
    )
    if not math.isfinite(as_float) or not as_float.is_integer() or as_float < 1:
        raise InvalidParameterError(
            f"reps must be a whole number of bootstrap replicates >= 1 (e.g. 10000), got {reps!r}"
        )
    return int(as_float)


def _as_data(values: object, name: str) -> FloatArray:
    """A non-empty, finite, 1-D float array (booleans become 0/1)."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be an array of numbers, got {values!r}") from exc
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidInputError(f"{name} must hold at least one observation, got none")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(
            f"{name} must be finite numbers, got NaN or inf at index "
            f"{int(np.flatnonzero(~np.isfinite(arr))[0])}; drop or impute them first"
        )
    return arr


def _is_binary(arr: FloatArray) -> bool:
    return bool(((arr == 0.0) | (arr == 1.0)).all())


def _check_statistic(statistic: Statistic) -> Statistic:
    if callable(statistic):
        return statistic
    return check_choice(str(statistic), "statistic", _STATISTICS)


def _apply(statistic: Statistic, matrix: FloatArray) -> FloatArray:
    """Evaluate the statistic along the last axis of ``matrix``."""
    if statistic == "mean":
        out: Any = matrix.mean(axis=-1)
    elif statistic == "median":
        out = np.median(matrix, axis=-1)
    elif callable(statistic):
        out = statistic(matrix, axis=-1)
    else:
        raise InvalidParameterError(f"unknown statistic {statistic!r}")
    result = np.asarray(out, dtype=np.float64)
    if result.shape != matrix.shape[:-1]:
        raise InvalidParameterError(
            "a callable statistic must reduce along `axis` (like numpy.mean(x, axis=-1)); "
            f"got output shape {result.shape} for input shape {matrix.shape}"
        )
    return result


# ------------------------------------------------------------------------ percentile step


def _histogram(replicates: FloatArray) -> tuple[FloatArray, IntArray]:
    values, counts = np.unique(replicates, return_counts=True)
    return values.astype(np.float64), counts.astype(np.int64)



def _stratified_percentile(
    estimate: float, replicates: NDArray[np.float64], level: float, n: int
) -> Interval:
    """The percentile interval of stratified bootstrap replicates (both stratified paths)."""
    tail = (1.0 - level) / 2.0
    values, mult = _histogram(replicates)
    low, high = _histogram_quantiles(values, mult, (tail, 1.0 - tail))
    return Interval(
        estimate=estimate,
        low=low,
        high=high,
        method="stratified-bootstrap-percentile",
        confidence=level,
        n=n,
    )

def _histogram_quantiles(
    values: FloatArray, counts: IntArray, probs: Sequence[float]
) -> list[float]:
    """Quantiles of the sample that has ``counts[i]`` copies of ``values[i]`` (sorted).

    Reproduces ``numpy.quantile(sample, probs)`` (the default "linear" rule, Hyndman &
    Fan 1996 definition 7): position ``h = (B - 1) q`` in the sorted sample, linear
    interpolation between order statistics ``floor(h)`` and ``floor(h) + 1``. This is the
    one percentile step of every bootstrap here.
    """
    cumulative = np.cumsum(counts)
    total = int(cumulative[-1])
    out: list[float] = []
    for q in probs:
        h = (total - 1) * float(q)
        lo_pos = math.floor(h)
        hi_pos = min(lo_pos + 1, total - 1)
        lo = float(values[int(cumulative.searchsorted(lo_pos, side="right"))])
        hi = float(values[int(cumulative.searchsorted(hi_pos, side="right"))])
        frac = h - lo_pos
        # numpy's _lerp: interpolate from the nearer order statistic
        out.append(lo + (hi - lo) * frac if frac < 0.5 else hi - (hi - lo) * (1.0 - frac))
    return out


def _fraction_below(values: FloatArray, counts: IntArray, estimate: float) -> float:
    """``(#{theta* < theta^} + #{theta* <= theta^}) / (2 B)``: ties count one half."""
    below = int(counts[values < estimate].sum())
    at_or_below = int(counts[values <= estimate].sum())
    return (below + at_or_below) / (2.0 * int(counts.sum()))


# --------------------------------------------------------------------------- resampling


def _binomial_pmf(n: int, p: float) -> FloatArray:
    """Binomial(n, p) pmf on 0..n for 0 < p < 1, from log-gamma (no scipy.stats overhead)."""
    # log C(n, j) + j log p + (n - j) log(1 - p), with log j! reused reversed for (n - j)!
    support = np.arange(n + 1, dtype=np.float64)
    log_fact = special.gammaln(support + 1.0)
    log_pmf = (log_fact[-1] + n * math.log1p(-p)) - log_fact - log_fact[::-1]
    log_pmf += support * (math.log(p) - math.log1p(-p))
    pmf: FloatArray = np.exp(log_pmf)
    return pmf


def _binary_histogram(
    k: int, n: int, reps: int, rng: np.random.Generator
) -> tuple[FloatArray, IntArray]:
    """Histogram of ``reps`` bootstrap means of ``k`` ones among ``n`` outcomes.

    Each replicate's count is Binomial(n, k/n). For ``n + 1 <= reps`` the histogram of the
    ``reps`` counts is drawn directly as Multinomial(reps, Binomial(n, k/n).pmf); else the
    ``reps`` counts are drawn one by one. Both are exact.
    """
    if k in (0, n):
        return np.array([k / n]), np.array([reps], dtype=np.int64)
    p = k / n
    if n + 1 <= reps:
        pmf = _binomial_pmf(n, p)
        counts = rng.multinomial(reps, pmf / pmf.sum()).astype(np.int64)
        keep = counts > 0
        return np.flatnonzero(keep) / n, counts[keep]
    draws = rng.binomial(n, p, size=reps)
    return _histogram(draws / n)


def _index_replicates(
    data: FloatArray, statistic: Statistic, reps: int, rng: np.random.Generator
) -> FloatArray:
    """The index bootstrap: ``reps`` resamples of ``data`` with replacement, in chunks."""
    n = data.size
    rows = max(1, _CHUNK_ELEMENTS // n)
    out = np.empty(reps, dtype=np.float64)
    for start in range(0, reps, rows):
        stop = min(reps, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = _apply(statistic, data[idx])
    return out


def _jackknife(data: FloatArray, statistic: Statistic) -> FloatArray:
    """Leave-one-out values of the statistic (closed form for the mean)."""
    n = data.size
    if statistic == "mean":
        loo: FloatArray = (data.sum() - data) / (n - 1)
        return loo
    rows = max(1, _CHUNK_ELEMENTS // max(n - 1, 1))
    base = np.arange(n - 1)
    out = np.empty(n, dtype=np.float64)
    for start in range(0, n, rows):
        left_out = np.arange(start, min(n, start + rows))
        idx = base[None, :] + (base[None, :] >= left_out[:, None])
        out[start : start + left_out.size] = _apply(statistic, data[idx])
    return out


def _bca_probs(
    values: FloatArray,
    counts: IntArray,
    estimate: float,
    jackknife: FloatArray,
    confidence: float,
) -> tuple[float, float]:
    """Efron (1987) BCa levels ``alpha_1, alpha_2`` (Efron & Tibshirani 1993, section 14.3)."""
    share = _fraction_below(values, counts, estimate)
    if share <= 0.0 or share >= 1.0:
        raise InvalidInputError(
            "the BCa interval is undefined here: every bootstrap replicate lies on one "
            f"side of the estimate {estimate:g}; use method='percentile'"
        )
    z0 = float(special.ndtri(share))
    deviations = jackknife.mean() - jackknife
    denom = float(np.sum(deviations**2))
    accel = float(np.sum(deviations**3)) / (6.0 * denom**1.5) if denom > 0.0 else 0.0
    z_tail = float(special.ndtri((1.0 - confidence) / 2.0))
    probs = []
    for z_alpha in (z_tail, -z_tail):
        shifted = z0 + z_alpha
        scale = 1.0 - accel * shifted
        if scale <= 0.0:
            raise InvalidInputError(
                f"the BCa interval is undefined here (acceleration {accel:g} too large for "
                "this confidence); use method='percentile'"
            )
        probs.append(float(special.ndtr(z0 + shifted / scale)))
    return probs[0], probs[1]


# ------------------------------------------------------------------------------ public


def bootstrap_interval(
    data: ArrayLike | None = None,
    *,
    k: int | None = None,
    n: int | None = None,
    statistic: Statistic = "mean",
    reps: int = 10_000,
    confidence: float = 0.95,
    seed: Seed,
    method: str = "percentile",
    fast: bool = True,
) -> Interval:
    r"""Bootstrap confidence interval for a statistic of one sample, from an explicit seed.

    Percentile interval (Efron 1979; Efron & Tibshirani 1993, section 13.3): draw ``reps``
    resamples of the ``n`` observations with replacement, compute the statistic
    :math:`\hat\theta^*_b` on each, and report the :math:`\alpha/2` and
    :math:`1-\alpha/2` empirical quantiles (``numpy.quantile``'s linear rule).

    BCa (Efron 1987, *JASA* 82:171-185; Efron & Tibshirani 1993, section 14.3):
    :math:`\hat z_0 = \Phi^{-1}(\#\{\hat\theta^*_b < \hat\theta\}/B)` (ties count one half,
    as in ``scipy.stats.bootstrap``), jackknife acceleration
    :math:`\hat a = \sum_i d_i^3 / (6 (\sum_i d_i^2)^{3/2})` with
    :math:`d_i = \bar\theta_{(\cdot)} - \hat\theta_{(i)}`, and levels
    :math:`\alpha_{1,2} = \Phi(\hat z_0 + (\hat z_0 + z_{\alpha/2, 1-\alpha/2}) /
    (1 - \hat a(\hat z_0 + z_{\alpha/2, 1-\alpha/2})))`.

    For 0/1 outcomes (or ``k`` and ``n``) with ``statistic="mean"`` and ``fast=True``,
    the resampled success count is drawn from Binomial(n, k/n), which is exactly the
    distribution of the index bootstrap's count (a sum of ``n`` i.i.d. Bernoulli(k/n)
    draws), at O(reps) or less instead of O(reps n). Other data use a vectorised
    index bootstrap, chunked so memory stays bounded. Note that at ``k = 0`` or
    ``k = n`` every replicate equals the estimate and the interval has zero width, like
    Wald's: use :func:`evalband.stats.interval` (Wilson) for success rates near 0 or 1.

    Args:
        data: 1-D array of observations (0/1 outcomes, ordinal scores, times). Give
            either ``data`` or both ``k`` and ``n``.
        k: successes (with ``n``), instead of ``data``.
        n: trials (with ``k``).
        statistic: ``"mean"`` (default), ``"median"``, or a callable ``f(x, axis)``
            reducing along ``axis`` like ``numpy.mean``.
        reps: number of bootstrap replicates.
        confidence: two-sided confidence level in (0, 1).
        seed: an int or a ``numpy.random.Generator``; the same seed gives the same interval.
        method: ``"percentile"`` or ``"bca"``.
        fast: draw binary replicates from the binomial (default). ``False`` forces the
            index bootstrap (the slow reference; same distribution).

    Returns:
        An :class:`~evalband.stats.Interval` whose ``estimate`` is the statistic on the
        data and whose ``method`` is ``"bootstrap-percentile"`` or ``"bootstrap-bca"``.

    Raises:
        InvalidInputError: empty, non-numeric, non-finite or non-1-D data; both or neither
            of ``data`` and ``k, n``; BCa undefined for these data.
        InvalidCountsError: invalid ``k``/``n``.
        InvalidParameterError: bad ``reps``, ``confidence``, ``seed``, ``method`` or
            ``statistic``.

    >>> ci = bootstrap_interval(k=45, n=200, seed=0)
    >>> ci.estimate, round(ci.low, 3), round(ci.high, 3)
    (0.225, 0.17, 0.285)
    """
    stat = _check_statistic(statistic)
    boot = check_choice(str(method), "method", _BOOT_METHODS)
    level = check_confidence(confidence)
    n_reps = _check_reps(reps)
    rng = _rng(seed)
    counts_given = k is not None or n is not None
    if data is not None and counts_given:
        raise InvalidInputError("give either data or counts k and n, not both")
    if data is None:
        if k is None or n is None:
            raise InvalidInputError("give either data (an array) or both counts k and n")
        k_int, n_int = check_k_n(k, n)
        arr = np.zeros(n_int, dtype=np.float64)
        arr[:k_int] = 1.0
        binary = True
    else:
        arr = _as_data(data, "data")
        binary = _is_binary(arr)
        k_int, n_int = int(arr.sum()) if binary else 0, arr.size
    if boot == "bca" and arr.size < 2:
        raise InvalidInputError("the BCa interval needs at least 2 observations, got 1")

    if binary and stat == "mean" and fast:
        estimate = k_int / n_int
        values, counts = _binary_histogram(k_int, n_int, n_reps, rng)
    else:
        estimate = float(_apply(stat, arr[None, :])[0])
        values, counts = _histogram(_index_replicates(arr, stat, n_reps, rng))

    tail = (1.0 - level) / 2.0
    probs = (tail, 1.0 - tail)
    if boot == "bca":
        probs = _bca_probs(values, counts, estimate, _jackknife(arr, stat), level)
    low, high = _histogram_quantiles(values, counts, probs)
    return Interval(
        estimate=estimate,
        low=low,
        high=high,
        method=f"bootstrap-{boot}",
        confidence=level,
        k=k_int if binary else None,
        n=n_int,
    )


def _stratum_inputs(
    strata: Mapping[str, ArrayLike] | None,
    counts: Mapping[str, tuple[int, int]] | None,
) -> dict[str, FloatArray]:
    if (strata is None) == (counts is None):
        raise InvalidInputError(
            "give exactly one of strata (name -> array of outcomes) or counts (name -> (k, n))"
        )
    out: dict[str, FloatArray] = {}
    if strata is not None:
        for name, values in strata.items():
            out[str(name)] = _as_data(values, f"stratum {name!r}")
    elif counts is not None:
        for name, pair in counts.items():
            try:
                k_raw, n_raw = pair
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(
                    f"counts[{name!r}] must be a pair (k, n), got {pair!r}"
                ) from exc
            k_int, n_int = check_k_n(k_raw, n_raw)
            arr = np.zeros(n_int, dtype=np.float64)
            arr[:k_int] = 1.0
            out[str(name)] = arr
    if not out:
        raise InvalidInputError("need at least one stratum, got none")
    return out


def _stratum_weights(
    names: Iterable[str], sizes: Mapping[str, int], weights: Mapping[str, float] | None
) -> dict[str, float]:
    keys = list(names)
    if weights is None:
        total = sum(sizes.values())
        return {name: sizes[name] / total for name in keys}
    given = {str(key): value for key, value in weights.items()}
    if set(given) != set(keys):
        raise InvalidParameterError(
            f"weights must name exactly the strata {sorted(keys)}, got {sorted(given)}"
        )
    raw: dict[str, float] = {}
    for name in keys:
        value = given[name]
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)
            or not math.isfinite(float(value))
            or float(value) < 0.0
        ):
            raise InvalidParameterError(
                f"weight of stratum {name!r} must be a finite number >= 0, got {value!r}"
            )
        raw[name] = float(value)
    total_weight = sum(raw.values())
    if total_weight <= 0.0:
        raise InvalidParameterError("weights must not all be zero")
    return {name: value / total_weight for name, value in raw.items()}


def _stratified_replicates(
    arrays: Mapping[str, FloatArray],
    weights: Mapping[str, float],
    reps: int,
    rng: np.random.Generator,
    fast: bool,
) -> tuple[float, FloatArray]:
    """Estimate and ``reps`` replicates of ``sum_s w_s mean_s``, resampling within strata."""
    estimate = 0.0
    total = np.zeros(reps, dtype=np.float64)
    for name, arr in arrays.items():
        weight = weights[name]
        estimate += weight * float(arr.mean())
        if fast and _is_binary(arr):
            replicate = rng.binomial(arr.size, float(arr.mean()), size=reps) / arr.size
        else:
            replicate = _index_replicates(arr, "mean", reps, rng)
        total += weight * replicate
    return estimate, total


def stratified_bootstrap_interval(
    strata: Mapping[str, ArrayLike] | None = None,
    *,
    counts: Mapping[str, tuple[int, int]] | None = None,
    weights: Mapping[str, float] | None = None,
    reps: int = 10_000,
    confidence: float = 0.95,
    seed: Seed,
    fast: bool = True,
) -> Interval:
    r"""Stratified percentile bootstrap for a weighted mean of per-stratum rates.

    The estimate is :math:`\hat\theta = \sum_s w_s \bar x_s` (weights normalised to sum
    to 1). Each replicate resamples every stratum *within itself*, keeping its size
    :math:`n_s` fixed as the design did (Davison & Hinkley 1997, section 3.2), and recomputes
    :math:`\sum_s w_s \bar x^*_s`; the interval is the percentile interval of those
    replicates. For a 0/1 stratum the resampled count is drawn from
    Binomial(n_s, k_s/n_s), the exact distribution of its index resample.

    Args:
        strata: stratum name -> 1-D array of outcomes (0/1 or scores). Or use ``counts``.
        counts: stratum name -> ``(k_s, n_s)`` success counts, instead of ``strata``.
        weights: stratum name -> non-negative weight. ``None`` weights each stratum by its
            size ``n_s``, which makes the estimate the pooled mean; pass equal weights for
            the mean of per-stratum rates (e.g. the mean over tasks a benchmark reports).
        reps: number of bootstrap replicates.
        confidence: two-sided confidence level in (0, 1).
        seed: an int or a ``numpy.random.Generator``.
        fast: binomial draws for 0/1 strata (default); ``False`` forces index resampling.

    Returns:
        An :class:`~evalband.stats.Interval` with method
        ``"stratified-bootstrap-percentile"`` and ``n`` the total number of observations.

    Raises:
        InvalidInputError: both or neither of ``strata`` and ``counts``; an empty or
            non-finite stratum.
        InvalidCountsError: invalid ``(k_s, n_s)``.
        InvalidParameterError: weights not naming exactly the strata, negative or all zero;
            bad ``reps``, ``confidence`` or ``seed``.

    >>> ci = stratified_bootstrap_interval(
    ...     counts={"easy": (18, 20), "hard": (4, 20)},
    ...     weights={"easy": 1, "hard": 1}, seed=0)
    >>> ci.estimate, ci.low < 0.55 < ci.high
    (0.55, True)
    """
    level = check_confidence(confidence)
    n_reps = _check_reps(reps)
    rng = _rng(seed)
    arrays = _stratum_inputs(strata, counts)
    sizes = {name: arr.size for name, arr in arrays.items()}
    normalised = _stratum_weights(arrays, sizes, weights)
    estimate, replicates = _stratified_replicates(arrays, normalised, n_reps, rng, fast)
    return _stratified_percentile(estimate, replicates, level, sum(sizes.values()))


_PAIR_TYPES = ("both", "a_only", "b_only", "neither")


def _pair_counts(
    pairs: Mapping[str, Sequence[int]],
) -> dict[str, tuple[int, int, int, int]]:
    """Validated ``stratum -> (both, a_only, b_only, neither)`` with at least one pair each."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for name, counts in pairs.items():
        try:
            both, a_only, b_only, neither = counts
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"pairs[{name!r}] must be four counts (both, a_only, b_only, neither), "
                f"got {counts!r}"
            ) from exc
        checked = tuple(
            as_count(value, f"pairs[{name!r}].{label}")
            for value, label in zip((both, a_only, b_only, neither), _PAIR_TYPES, strict=True)
        )
        if sum(checked) == 0:
            raise InvalidInputError(f"stratum {name!r} must hold at least one pair, got none")
        out[str(name)] = (checked[0], checked[1], checked[2], checked[3])
    if not out:
        raise InvalidInputError("need at least one stratum, got none")
    return out


def _paired_multinomial_replicates(
    pairs: Mapping[str, tuple[int, int, int, int]],
    weights: Mapping[str, float],
    reps: int,
    rng: np.random.Generator,
) -> tuple[float, FloatArray]:
    """Estimate and ``reps`` replicates of ``sum_s w_s (a*_s - b*_s) / n_s``.

    Per stratum, one ``(reps, 3)`` Multinomial(n_s, (a_s, b_s, n_s - a_s - b_s) / n_s)
    draw: ``a*`` A-only and ``b*`` B-only pairs among the ``n_s`` resampled pairs (the
    concordant pairs, both and neither, add 0 to the difference and share one category).
    """
    estimate = 0.0
    total = np.zeros(reps, dtype=np.float64)
    for name, (both, a_only, b_only, neither) in pairs.items():
        n = both + a_only + b_only + neither
        weight = weights[name]
        estimate += weight * (a_only - b_only) / n
        if a_only + b_only == 0:  # every resample has no discordant pair: difference 0
            continue
        draws = rng.multinomial(n, [a_only / n, b_only / n, (both + neither) / n], size=reps)
        total += weight * ((draws[:, 0] - draws[:, 1]) / n)
    return estimate, total


def paired_stratified_bootstrap_interval(
    pairs: Mapping[str, Sequence[int]],
    *,
    weights: Mapping[str, float] | None = None,
    reps: int = 10_000,
    confidence: float = 0.95,
    seed: Seed,
    fast: bool = True,
) -> Interval:
    r"""Stratified paired percentile bootstrap for a weighted difference of success rates.

    Policies A and B ran on the same episodes, grouped in strata (cells). In stratum
    :math:`s` the :math:`n_s` matched episodes are counted by pair type: ``both``
    succeed, ``a_only``, ``b_only``, ``neither``. The estimate is
    :math:`\hat\Delta = \sum_s w_s (a_s - b_s) / n_s`, the weighted mean of per-stratum
    paired differences :math:`ar d_s` with :math:`d_i = y^A_i - y^B_i \in \{-1, 0, 1\}`.
    The bootstrap is the stratified paired bootstrap (Efron & Tibshirani 1993, chapter 8;
    Davison & Hinkley 1997, section 3.2): each replicate resamples the
    :math:`n_s` *pairs* of every stratum with replacement, within the stratum, and
    recomputes :math:`\sum_s w_s ar d^*_s`; the interval is the percentile interval.

    The resample's vector of per-pair counts is Multinomial(:math:`n_s`,
    :math:`(1/n_s, \ldots, 1/n_s)`) (Efron & Tibshirani's resampling vector); summing it
    over the pairs of one type gives the resampled pair-type counts, which are therefore
    exactly Multinomial(:math:`n_s`, :math:`(a_s, b_s, n_s - a_s - b_s) / n_s`) (both and
    neither merged: they add 0 to :math:`d`), independently across strata. ``fast=True``
    draws those counts directly, at O(reps x strata) instead of O(reps x n): the replicate
    values have exactly the distribution of index resampling's, though not its random
    stream. ``fast=False`` runs the index bootstrap on the ``d_i`` (the slow reference,
    :func:`stratified_bootstrap_interval` with ``fast=False``).

    Args:
        pairs: stratum name -> ``(both, a_only, b_only, neither)`` counts of matched pairs,
            in :func:`evalband.stats.diff_paired`'s order with A the candidate.
        weights: stratum name -> non-negative weight (normalised to sum to 1). ``None``
            weights each stratum by its number of pairs ``n_s``.
        reps: number of bootstrap replicates.
        confidence: two-sided confidence level in (0, 1).
        seed: an int or a ``numpy.random.Generator``; the same seed gives the same interval.
        fast: multinomial pair-type draws (default); ``False`` forces index resampling.

    Returns:
        An :class:`~evalband.stats.Interval` for :math:`p_A - p_B` with method
        ``"stratified-bootstrap-percentile"`` and ``n`` the total number of pairs.

    Raises:
        InvalidInputError: no strata, a stratum that is not four counts or has no pairs.
        InvalidCountsError: a count that is not a whole number >= 0.
        InvalidParameterError: weights not naming exactly the strata, negative or all zero;
            bad ``reps``, ``confidence`` or ``seed``.

    >>> ci = paired_stratified_bootstrap_interval(
    ...     {"easy": (70, 20, 0, 10), "hard": (40, 0, 20, 40)},
    ...     weights={"easy": 1, "hard": 1}, seed=0)
    >>> ci.estimate, ci.low < 0.0 < ci.high
    (0.0, True)
    """
    level = check_confidence(confidence)
    n_reps = _check_reps(reps)
    rng = _rng(seed)
    counts = _pair_counts(pairs)
    sizes = {name: sum(c) for name, c in counts.items()}
    normalised = _stratum_weights(counts, sizes, weights)
    if fast:
        estimate, replicates = _paired_multinomial_replicates(counts, normalised, n_reps, rng)
    else:
        diffs = {
            name: np.repeat([1.0, -1.0, 0.0], [a_only, b_only, both + neither])
            for name, (both, a_only, b_only, neither) in counts.items()
        }
        estimate, replicates = _stratified_replicates(diffs, normalised, n_reps, rng, False)
    return _stratified_percentile(estimate, replicates, level, sum(sizes.values()))


def _factorize(labels: Sequence[Hashable], size: int) -> IntArray:
    if len(labels) != size:
        raise InvalidInputError(
            f"clusters must label every value: got {len(labels)} labels for {size} values"
        )
    codes: dict[Hashable, int] = {}
    out = np.empty(size, dtype=np.int64)
    for i, label in enumerate(labels):
        try:
            out[i] = codes.setdefault(label, len(codes))
        except TypeError as exc:
            raise InvalidInputError(
                f"cluster labels must be hashable (str, int, tuple), got {label!r}"
            ) from exc
    return out


def _cluster_replicates(
    sums: FloatArray, sizes: FloatArray, reps: int, rng: np.random.Generator
) -> FloatArray:
    """``reps`` ratio-of-sums means over clusters resampled with replacement."""
    groups = sums.size
    rows = max(1, _CHUNK_ELEMENTS // groups)
    out = np.empty(reps, dtype=np.float64)
    for start in range(0, reps, rows):
        stop = min(reps, start + rows)
        idx = rng.integers(0, groups, size=(stop - start, groups))
        out[start:stop] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    return out


def cluster_bootstrap_interval(
    values: ArrayLike,
    clusters: Iterable[Hashable],
    *,
    reps: int = 10_000,
    confidence: float = 0.95,
    seed: Seed,
) -> Interval:
    r"""Cluster (block) percentile bootstrap for an overall mean of correlated episodes.

    Episodes in one scene, session or operator shift are not independent. Resampling
    whole clusters with replacement (Davison & Hinkley 1997, section 3.8: resample the
    top level only; Field & Welsh 2007, *JRSS B* 69:369-390) keeps that
    dependence. With :math:`S_g` the sum and :math:`N_g` the number of values in cluster
    :math:`g`, the statistic is the overall mean (ratio of sums)
    :math:`\hat\theta = \sum_g S_g / \sum_g N_g`, recomputed on each resample of the
    :math:`G` clusters; the interval is the percentile interval of the replicates.

    Args:
        values: 1-D array of outcomes (0/1 or scores), one per episode.
        clusters: a hashable cluster label per value (scene id, session, ...).
        reps: number of bootstrap replicates.
        confidence: two-sided confidence level in (0, 1).
        seed: an int or a ``numpy.random.Generator``.

    Returns:
        An :class:`~evalband.stats.Interval` with method ``"cluster-bootstrap-percentile"``
        and ``n`` the number of values.

    Raises:
        InvalidInputError: empty or non-finite values, a label count that does not match,
            unhashable labels, or fewer than 2 clusters.
        InvalidParameterError: bad ``reps``, ``confidence`` or ``seed``.

    >>> ci = cluster_bootstrap_interval([1, 1, 0, 0, 1, 0], ["a", "a", "b", "b", "c", "c"],
    ...                                 seed=0)
    >>> ci.estimate, ci.low, ci.high
    (0.5, 0.0, 1.0)
    """
    level = check_confidence(confidence)
    n_reps = _check_reps(reps)
    rng = _rng(seed)
    arr = _as_data(values, "values")
    codes = _factorize(list(clusters), arr.size)
    groups = int(codes.max()) + 1
    if groups < 2:
        raise InvalidInputError(
            "the cluster bootstrap needs at least 2 clusters, got 1: with one cluster there "
            "is no between-cluster variation to resample"
        )
    sums = np.bincount(codes, weights=arr, minlength=groups).astype(np.float64)
    sizes = np.bincount(codes, minlength=groups).astype(np.float64)
    replicates = _cluster_replicates(sums, sizes, n_reps, rng)
    tail = (1.0 - level) / 2.0
    hist_values, mult = _histogram(replicates)
    low, high = _histogram_quantiles(hist_values, mult, (tail, 1.0 - tail))
    return Interval(
        estimate=float(arr.sum() / arr.size),
        low=low,
        high=high,
        method="cluster-bootstrap-percentile",
        confidence=level,
        n=int(arr.size),
    )
