"""Hypothesis tests for comparing success rates: paired, unpaired, many policies, strata.

* :func:`mcnemar` -- two policies on the same matched episodes (exact, mid-p, asymptotic).
* :func:`fisher_exact_test`, :func:`boschloo_test` -- two policies on independent episodes.
* :func:`cochran_q` -- several policies on the same matched episodes.
* :func:`cmh_test` -- two policies compared within slices (strata), pooled.

Every test returns a :class:`~evalband.stats.TestResult` with a two-sided p-value. None
of them switches method behind the caller's back: the method asked for is the method
computed, at every sample size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from evalband._util.validate import as_count
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.stats._exact import (
    MCNEMAR_METHODS,
    _arm,
    _check_flag,
    _columns_table,
    fisher_exact_test,
    mcnemar,
)
from evalband.stats._types import TestResult

__all__ = [
    "MCNEMAR_METHODS",
    "mcnemar",
    "fisher_exact_test",
    "boschloo_test",
    "cochran_q",
    "cmh_test",
]

def boschloo_test(
    k_a: int, n_a: int, k_b: int, n_b: int, *, sampling_points: int = 32
) -> TestResult:
    """Boschloo's exact unconditional test of equal success rates (independent episodes).

    Boschloo, R. D. (1970). Raised conditional level of significance for the 2x2-table
    when testing the equality of two probabilities. *Statistica Neerlandica* 24:1-9.
    The one-sided Fisher p-value orders the tables; the p-value is the probability, under
    two binomials with a common success probability ``pi``, of a table ordered at least
    as extreme as the observed one, maximised over the nuisance ``pi``. Two-sided: twice
    the smaller one-sided p-value, capped at 1 (``scipy.stats.boschloo_exact``).

    Unlike Fisher's test, the result depends on which margins are fixed: the two
    policies' episode counts ``n_a`` and ``n_b`` are, so the policies are the COLUMNS of
    the table given to scipy (``[[k_a, k_b], [n_a - k_a, n_b - k_b]]``). Passing them as
    rows fixes the wrong margins and gives a different p-value.

    Args:
        k_a: successes of policy A.
        n_a: episodes of policy A (>= 1).
        k_b: successes of policy B.
        n_b: episodes of policy B (>= 1).
        sampling_points: points scipy samples when maximising over ``pi`` (>= 1).

    Returns:
        A :class:`~evalband.stats.TestResult`; ``statistic`` is Boschloo's statistic,
        the one-sided Fisher p-value of the side that gave the smaller p-value.

    Raises:
        InvalidCountsError: counts that are not whole, negative, ``k > n`` or ``n == 0``.
        InvalidParameterError: ``sampling_points`` not a positive whole number.

    >>> round(boschloo_test(9, 10, 3, 10).p_value, 4)
    0.008
    """
    from scipy.stats import boschloo_exact

    ka, na = _arm(k_a, n_a, "policy A")
    kb, nb = _arm(k_b, n_b, "policy B")
    points = as_count(sampling_points, "sampling_points")
    if points < 1:
        raise InvalidParameterError(f"sampling_points must be >= 1, got {points}")
    result = boschloo_exact(_columns_table(ka, na, kb, nb), alternative="two-sided", n=points)
    p = float(result.pvalue)
    stat = float(result.statistic)
    if math.isnan(p):  # cannot happen with n_a, n_b >= 1; kept as a guard
        p = 1.0
    details = {"k_a": ka, "n_a": na, "k_b": kb, "n_b": nb}
    return TestResult(stat, min(1.0, max(0.0, p)), "boschloo-exact", details)


def cochran_q(outcomes: ArrayLike) -> TestResult:
    """Cochran's Q test that several policies have the same success rate on matched episodes.

    Cochran, W. G. (1950). The comparison of percentages in matched samples.
    *Biometrika* 37:256-266. With ``k`` policies, ``C_j`` the successes of policy ``j``,
    ``R_i`` the successes in episode ``i`` and ``T`` the total::

        Q = (k - 1) * (k * sum_j C_j**2 - T**2) / (k * T - sum_i R_i**2)

    referred to chi-square with ``k - 1`` degrees of freedom. With two policies it is the
    uncorrected asymptotic McNemar test. When every episode is all-success or
    all-failure the denominator is 0: no episode discriminates, and ``Q = 0, p = 1``.

    Args:
        outcomes: array of shape ``(n_episodes, n_policies)`` of 0/1 (or booleans): the
            outcome of every policy on every matched episode.

    Returns:
        A :class:`~evalband.stats.TestResult` with ``statistic = Q`` and
        ``details = {"df", "n_episodes", "n_policies"}``.

    Raises:
        InvalidInputError: not a 2-D array, fewer than 2 policies or 1 episode, or
            entries other than 0/1.

    >>> r = cochran_q([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 0, 0], [1, 1, 0]])
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (6.0, 0.0498)
    """
    from scipy.stats import chi2

    x = _binary_matrix(outcomes)
    n_episodes, k = x.shape
    col = x.sum(axis=0, dtype=np.int64)
    row = x.sum(axis=1, dtype=np.int64)
    total = int(col.sum())
    denominator = k * total - int(np.dot(row, row))
    details = {"df": k - 1, "n_episodes": n_episodes, "n_policies": k}
    if denominator == 0:
        return TestResult(0.0, 1.0, "cochran-q", details)
    numerator = (k - 1) * (k * int(np.dot(col, col)) - total * total)
    q = numerator / denominator
    return TestResult(float(q), float(chi2.sf(q, k - 1)), "cochran-q", details)


def _binary_matrix(outcomes: ArrayLike) -> np.ndarray[tuple[int, int], np.dtype[np.int64]]:
    """Validate an (episodes, policies) 0/1 matrix and return it as int64."""
    try:
        arr = np.asarray(outcomes)
    except (TypeError, ValueError) as err:
        raise InvalidInputError(
            f"outcomes must be a 2-D array of 0/1 (episodes x policies); got {outcomes!r}"
        ) from err
    if arr.ndim != 2:
        raise InvalidInputError(
            "outcomes must be a 2-D array of 0/1 with one row per episode and one column "
            f"per policy; got an array of shape {arr.shape}"
        )
    if arr.shape[1] < 2 or arr.shape[0] < 1:
        raise InvalidInputError(
            "outcomes needs at least 1 episode (row) and 2 policies (columns); got shape "
            f"{arr.shape}"
        )
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(f"outcomes must hold 0/1 values; got dtype {arr.dtype}")
    as_float = arr.astype(np.float64)
    bad = ~((as_float == 0.0) | (as_float == 1.0))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidInputError(
            f"outcomes must hold only 0/1 (failure/success); got {arr[first]!r} at "
            f"(episode, policy) = {first}"
        )
    return as_float.astype(np.int64)


def cmh_test(tables: Sequence[Sequence[int]], correction: bool = False) -> TestResult:
    """Cochran-Mantel-Haenszel test that the common odds ratio across strata is 1.

    Mantel, N. & Haenszel, W. (1959). Statistical aspects of the analysis of data from
    retrospective studies of disease. *Journal of the National Cancer Institute*
    22:719-748 (after Cochran, W. G. (1954), *Biometrics* 10:417-451). In stratum ``s``
    with ``a_s = k_a``, ``N_s = n_a + n_b`` and ``m_s = k_a + k_b`` successes in all::

        E_s = n_a * m_s / N_s
        V_s = n_a * n_b * m_s * (N_s - m_s) / (N_s**2 * (N_s - 1))
        chi2 = (|sum_s (a_s - E_s)| - cc)**2 / sum_s V_s,   1 degree of freedom

    with ``cc = 1/2`` when ``correction`` is true (floored so the bracket stays >= 0).
    Strata with fewer than 2 episodes carry no information (``V_s = 0``) and are skipped.
    If no stratum carries information, ``chi2 = 0`` and ``p = 1``.

    Args:
        tables: one ``(k_a, n_a, k_b, n_b)`` per stratum (slice): successes and episodes
            of policy A, then of policy B. An arm may have 0 episodes in a stratum.
        correction: apply the continuity correction.

    Returns:
        A :class:`~evalband.stats.TestResult` with the chi-square statistic and
        ``details = {"df": 1, "strata": ..., "informative_strata": ...}``.

    Raises:
        InvalidInputError: no strata, or a stratum that is not four counts.
        InvalidCountsError: counts that are not whole, negative, or ``k > n``.
        InvalidParameterError: ``correction`` not a bool.

    >>> r = cmh_test([(8, 10, 4, 10), (7, 12, 3, 11)])
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (5.2265, 0.0222)
    """
    from scipy.stats import chi2

    use_cc = _check_flag(correction, "correction")
    strata = _strata(tables)
    deviation = 0.0
    variance = 0.0
    informative = 0
    for ka, na, kb, nb in strata:
        total = na + nb
        successes = ka + kb
        if total < 2:
            continue
        var = na * nb * successes * (total - successes) / (total * total * (total - 1.0))
        if var > 0.0:
            informative += 1
        deviation += ka - na * successes / total
        variance += var
    name = "cmh-cc" if use_cc else "cmh"
    details = {"df": 1, "strata": len(strata), "informative_strata": informative}
    if variance <= 0.0:
        return TestResult(0.0, 1.0, name, details)
    excess = max(abs(deviation) - (0.5 if use_cc else 0.0), 0.0)
    stat = excess**2 / variance
    return TestResult(float(stat), float(chi2.sf(stat, 1)), name, details)


def _strata(tables: Sequence[Sequence[int]]) -> list[tuple[int, int, int, int]]:
    """Validate the per-stratum ``(k_a, n_a, k_b, n_b)`` tuples."""
    if isinstance(tables, str | bytes) or not isinstance(tables, Sequence | np.ndarray):
        raise InvalidInputError(
            f"tables must be a sequence of (k_a, n_a, k_b, n_b) per stratum; got {tables!r}"
        )
    if len(tables) == 0:
        raise InvalidInputError("tables must hold at least one (k_a, n_a, k_b, n_b) stratum")
    out = []
    for index, row in enumerate(tables):
        try:
            values = list(row)
        except TypeError as err:
            raise InvalidInputError(
                f"stratum {index} must be (k_a, n_a, k_b, n_b); got {row!r}"
            ) from err
        if len(values) != 4:
            raise InvalidInputError(
                f"stratum {index} must be four counts (k_a, n_a, k_b, n_b); got {row!r}"
            )
        ka, na = _arm(values[0], values[1], f"stratum {index}, policy A", allow_empty=True)
        kb, nb = _arm(values[2], values[3], f"stratum {index}, policy B", allow_empty=True)
        out.append((ka, na, kb, nb))
    return out
