"""Exact tests of two success rates on counts: McNemar's (matched) and Fisher's (independent).

Up to :data:`EXACT_LIMIT` episodes the binomial and hypergeometric sums are done in exact
integer arithmetic, so the p-value is the true one correctly rounded to a float, with no
numpy or scipy import (``evalband diff`` answers in a few milliseconds); scipy's
distributions take over beyond. ``tests/stats/test_exact.py`` holds them to scipy's values
on every small table.
"""

from __future__ import annotations

import math
import sys

from evalband._util.validate import as_count, check_choice, check_k_n
from evalband.errors import InvalidCountsError, InvalidParameterError
from evalband.stats._types import TestResult

__all__ = ["EXACT_LIMIT", "MCNEMAR_METHODS", "fisher_exact_test", "mcnemar"]

#: Methods accepted by :func:`mcnemar`.
MCNEMAR_METHODS: tuple[str, ...] = ("exact", "mid-p", "asymptotic")

#: Largest number of episodes (McNemar: discordant pairs; Fisher: both arms) whose sums
#: are exact integer arithmetic (a few milliseconds at most).
EXACT_LIMIT = 2000

# scipy.stats.fisher_exact counts a table as "no more likely" than the observed one within
# this relative tolerance (its ``gamma = 1 + 1e-14``), as a fraction of integers.
_TIE_SCALE = 10**14


def _sign_test_exact(low: int, m: int, *, mid_p: bool, tie: bool) -> float:
    """Two-sided sign-test p-value (mid-p if asked) for ``low`` of ``m`` at 1/2, exactly.

    >>> _sign_test_exact(1, 8, mid_p=False, tie=False) == 18 / 256
    True
    """
    term = total = 1  # C(m, 0)
    for i in range(low):
        term = term * (m - i) // (i + 1)
        total += term
    scale = 1 << m  # P[X <= low] = total / 2**m; term = C(m, low)
    if not mid_p:
        return min(2 * total, scale) / scale
    if tie:
        return (2 * scale - term) / (2 * scale)
    return (2 * total - term) / scale


def _fisher_exact(table: list[list[int]]) -> tuple[float, float]:
    """Odds ratio and two-sided p-value of ``scipy.stats.fisher_exact(table)``, exactly.

    >>> _fisher_exact([[9, 3], [1, 7]])
    (21.0, 0.019766611097880447)
    """
    (a, b), (c, d) = table
    if 0 in (a + b, c + d, a + c, b + d):
        return math.nan, 1.0
    odds = float(a * d) / float(c * b) if c > 0 and b > 0 else math.inf
    rows, other, draws = a + b, c + d, a + c  # hypergeometric: x = cell [0][0]
    low, high = max(0, draws - other), min(draws, rows)
    weights = [math.comb(rows, x) * math.comb(other, draws - x) for x in range(low, high + 1)]
    observed = weights[a - low]
    mode = int((draws + 1) * (rows + 1) / (rows + other + 2))
    at_mode = weights[mode - low]
    if abs(observed - at_mode) * _TIE_SCALE <= max(observed, at_mode):
        return odds, 1.0
    bound = observed * (_TIE_SCALE + 1)
    tail = sum(w for w in weights if w * _TIE_SCALE <= bound)
    return odds, min(1.0, tail / math.comb(rows + other, draws))


def _check_flag(value: object, name: str) -> bool:
    """Accept only a real ``bool`` for on/off switches."""
    np = sys.modules.get("numpy")  # a numpy bool exists only once numpy is loaded
    if not (isinstance(value, bool) or (np is not None and isinstance(value, np.bool_))):
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

    Up to :data:`EXACT_LIMIT` discordant pairs the binomial sums are exact integer
    arithmetic (the p-value correctly rounded); beyond, ``scipy.stats.binom``.

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
        from scipy.stats import chi2

        excess = max(abs(b - c) - (1 if use_cc else 0), 0)
        stat = excess**2 / m
        return TestResult(float(stat), float(chi2.sf(stat, 1)), name, details)
    name = f"mcnemar-{chosen}"
    if m == 0:
        return TestResult(math.nan, 1.0, name, details)
    low = min(b, c)
    if m <= EXACT_LIMIT:
        p = _sign_test_exact(low, m, mid_p=chosen == "mid-p", tie=b == c)
    else:
        from scipy.stats import binom

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
    more likely than the observed one (``scipy.stats.fisher_exact``'s rule, ties within a
    relative 1e-14 included; summed in exact integer arithmetic up to
    :data:`EXACT_LIMIT` episodes, by scipy beyond). The table has the two policies as
    columns::

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
    ka, na = _arm(k_a, n_a, "policy A")
    kb, nb = _arm(k_b, n_b, "policy B")
    table = _columns_table(ka, na, kb, nb)
    if na + nb <= EXACT_LIMIT:
        odds, p = _fisher_exact(table)
    else:
        from scipy.stats import fisher_exact

        result = fisher_exact(table, alternative="two-sided")
        odds, p = float(result[0]), float(result[1])
    details = {"k_a": ka, "n_a": na, "k_b": kb, "n_b": nb, "odds_ratio": odds}
    return TestResult(math.nan, min(1.0, p), "fisher-exact", details)
