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

from evalband.errors import InvalidCountsError, InvalidInputError, InvalidParameterError
from evalband.stats._types import TestResult
from evalband.stats._validate import as_count, check_choice, check_k_n

__all__ = [
    "MCNEMAR_METHODS",
    "mcnemar",
    "fisher_exact_test",
    "boschloo_test",
    "cochran_q",
    "cmh_test",
]

#: Methods accepted by :func:`mcnemar`.
MCNEMAR_METHODS: tuple[str, ...] = ("exact", "mid-p", "asymptotic")


def _check_flag(value: object, name: str) -> bool:
    """Accept only a real ``bool`` for on/off switches."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _arm(k: object, n: object, arm: str, *, allow_empty: bool = False) -> tuple[int, int]:
    """Validate one arm's counts; name the arm in the error message."""
    try:
        return check_k_n(k, n, allow_empty=allow_empty)
    except InvalidCountsError as err:
        raise InvalidCountsError(f"{arm}: {err}") from err


def _columns_table(k_a: int, n_a: int, k_b: int, n_b: int) -> list[list[int]]:
    """The 2x2 table with the two policies (arms) as COLUMNS: successes row, failures row."""
    return [[k_a, k_b], [n_a - k_a, n_b - k_b]]


def mcnemar(
    a_only: int, b_only: int, method: str = "exact", correction: bool = False
) -> TestResult:
    """McNemar's test of equal success rates for two policies on matched episodes.

    Only the discordant pairs carry information: ``b`` = ``a_only`` episodes where only
    policy A succeeded and ``c`` = ``b_only`` where only B did, ``m = b + c``. Under the
    null hypothesis ``b | m ~ Binomial(m, 1/2)`` (McNemar, Q. (1947). Note on the
    sampling error of the difference between correlated proportions or percentages.
    *Psychometrika* 12:153-157).

    * ``"exact"`` (default): the two-sided exact conditional (sign) test,
      ``p = min(1, 2 * P[X <= min(b, c)])`` with ``X ~ Binomial(m, 1/2)``.
    * ``"mid-p"``: Fagerland, M. W., Lydersen, S. & Laake, P. (2013). The McNemar test
      for binary matched-pairs data: mid-p and asymptotic are better than exact
      conditional. *BMC Medical Research Methodology* 13:91, eq. (2) of the supplement:
      ``p = 2 * P[X <= min(b, c)] - P[X = min(b, c)]``, and ``1 - P[X = b]/2`` when
      ``b == c``.
    * ``"asymptotic"``: ``chi2 = (|b - c| - cc)**2 / (b + c)`` on 1 degree of freedom;
      ``cc = 1`` with ``correction=True`` (Edwards, A. L. (1948). Note on the "correction
      for continuity" in testing the significance of the difference between correlated
      proportions. *Psychometrika* 13:185-187), floored so that ``|b - c| - cc >= 0``.

    With no discordant pairs (``b = c = 0``) there is no evidence either way and every
    method returns ``p = 1`` (statistic 0 for the asymptotic test); the formulas above
    would give 0/0, or 0.5 for the mid-p.

    Args:
        a_only: matched episodes where only policy A succeeded (b).
        b_only: matched episodes where only policy B succeeded (c).
        method: one of :data:`MCNEMAR_METHODS`.
        correction: Edwards' continuity correction; only with ``method="asymptotic"``.

    Returns:
        A :class:`~evalband.stats.TestResult`; ``statistic`` is the chi-square value for
        the asymptotic test and NaN for the exact and mid-p tests. ``details`` holds the
        counts.

    Raises:
        InvalidCountsError: counts that are not whole or negative.
        InvalidParameterError: unknown ``method``, or ``correction`` with a method other
            than ``"asymptotic"``.

    Example (Fagerland et al. 2013's Bentur et al. data: 1 vs 7 discordant pairs):

    >>> round(mcnemar(1, 7).p_value, 4)
    0.0703
    >>> round(mcnemar(1, 7, method="mid-p").p_value, 4)
    0.0391
    """
    from scipy.stats import binom, chi2

    b = as_count(a_only, "a_only (matched episodes where only policy A succeeded)")
    c = as_count(b_only, "b_only (matched episodes where only policy B succeeded)")
    chosen = check_choice(method, "method", MCNEMAR_METHODS)
    use_cc = _check_flag(correction, "correction")
    if use_cc and chosen != "asymptotic":
        raise InvalidParameterError(
            f"correction=True applies only to method='asymptotic'; got method={method!r}. "
            "The exact and mid-p tests need no continuity correction."
        )
    m = b + c
    details: dict[str, object] = {"a_only": b, "b_only": c, "discordant": m}
    if chosen == "asymptotic":
        name = "mcnemar-asymptotic-cc" if use_cc else "mcnemar-asymptotic"
        details["df"] = 1
        if m == 0:
            return TestResult(0.0, 1.0, name, details)
        excess = max(abs(b - c) - (1 if use_cc else 0), 0)
        stat = excess**2 / m
        return TestResult(float(stat), float(chi2.sf(stat, 1)), name, details)
    name = f"mcnemar-{chosen}"
    if m == 0:
        return TestResult(math.nan, 1.0, name, details)
    low = min(b, c)
    if chosen == "exact":
        p = 2.0 * float(binom.cdf(low, m, 0.5))
    elif b == c:
        p = 1.0 - 0.5 * float(binom.pmf(b, m, 0.5))
    else:
        p = 2.0 * float(binom.cdf(low, m, 0.5)) - float(binom.pmf(low, m, 0.5))
    return TestResult(math.nan, min(1.0, p), name, details)


def fisher_exact_test(k_a: int, n_a: int, k_b: int, n_b: int) -> TestResult:
    """Fisher's exact test of equal success rates for two policies on independent episodes.

    Fisher, R. A. (1935). The logic of inductive inference. *Journal of the Royal
    Statistical Society* 98:39-82. Conditional on both margins, the number of successes
    of A is hypergeometric; the two-sided p-value sums the probabilities of all tables no
    more likely than the observed one (``scipy.stats.fisher_exact``). The table handed to
    scipy has the two policies as columns::

        [[k_a,       k_b      ],
         [n_a - k_a, n_b - k_b]]

    Args:
        k_a: successes of policy A.
        n_a: episodes of policy A (>= 1).
        k_b: successes of policy B.
        n_b: episodes of policy B (>= 1).

    Returns:
        A :class:`~evalband.stats.TestResult` with ``statistic`` NaN (the test has none);
        ``details["odds_ratio"]`` is the sample odds ratio.

    Raises:
        InvalidCountsError: counts that are not whole, negative, ``k > n`` or ``n == 0``.

    >>> round(fisher_exact_test(9, 10, 3, 10).p_value, 4)
    0.0198
    """
    from scipy.stats import fisher_exact

    ka, na = _arm(k_a, n_a, "policy A")
    kb, nb = _arm(k_b, n_b, "policy B")
    result = fisher_exact(_columns_table(ka, na, kb, nb), alternative="two-sided")
    details = {"k_a": ka, "n_a": na, "k_b": kb, "n_b": nb, "odds_ratio": float(result[0])}
    return TestResult(math.nan, min(1.0, float(result[1])), "fisher-exact", details)


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
