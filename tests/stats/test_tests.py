"""Tests for evalband.stats._tests against independent oracles.

Oracles: statsmodels (mcnemar, cochrans_q, StratifiedTable.test_null_odds), scipy
(binomtest, fisher_exact), exact rational arithmetic written here from the definitions
(mid-p), a brute-force Boschloo test (enumerate every table, maximise over the nuisance
parameter on a fine grid), and the contingencytables R package (companion code of
Fagerland, Lydersen & Laake 2017) for one worked example.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import binom, binomtest, boschloo_exact, chi2, fisher_exact
from statsmodels.stats.contingency_tables import StratifiedTable, cochrans_q
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from evalband.errors import InvalidCountsError, InvalidInputError, InvalidParameterError
from evalband.stats import boschloo_test, cmh_test, cochran_q, fisher_exact_test, mcnemar
from evalband.stats._types import TestResult

discordant = st.tuples(st.integers(0, 150), st.integers(0, 150)).filter(lambda t: sum(t) > 0)


# ---------------------------------------------------------------------------------------
# McNemar


@settings(max_examples=300, deadline=None)
@given(discordant)
def test_mcnemar_exact_matches_statsmodels_and_scipy(bc: tuple[int, int]) -> None:
    b, c = bc
    ours = mcnemar(b, c, method="exact")
    sm = sm_mcnemar([[0, b], [c, 0]], exact=True)
    assert ours.p_value == pytest.approx(min(1.0, sm.pvalue), abs=1e-9)
    assert ours.p_value == pytest.approx(binomtest(b, b + c, 0.5).pvalue, abs=1e-9)
    assert math.isnan(ours.statistic)
    assert ours.method == "mcnemar-exact"


@settings(max_examples=300, deadline=None)
@given(discordant, st.booleans())
def test_mcnemar_asymptotic_matches_statsmodels(bc: tuple[int, int], correction: bool) -> None:
    b, c = bc
    # statsmodels computes (|b - c| - 1)**2 without flooring at 0, which differs from ours
    # (and from R's mcnemar.test) only when b == c; that case is tested separately.
    assume(not (correction and b == c))
    ours = mcnemar(b, c, method="asymptotic", correction=correction)
    sm = sm_mcnemar([[0, b], [c, 0]], exact=False, correction=correction)
    assert ours.statistic == pytest.approx(sm.statistic, rel=1e-12, abs=1e-12)
    assert ours.p_value == pytest.approx(sm.pvalue, abs=1e-9)


def _midp_by_definition(b: int, c: int) -> Fraction:
    """Two-sided mid-p by enumeration: P(more extreme) + P(as extreme)/2, in exact rationals.

    Under H0 the count of A-only pairs is Binomial(m, 1/2); an outcome x is "more
    extreme" than b when |x - m/2| > |b - m/2|.
    """
    m = b + c
    far = abs(2 * b - m)
    pmf = [Fraction(math.comb(m, x), 2**m) for x in range(m + 1)]
    more = sum((pmf[x] for x in range(m + 1) if abs(2 * x - m) > far), Fraction(0))
    equal = sum((pmf[x] for x in range(m + 1) if abs(2 * x - m) == far), Fraction(0))
    return more + equal / 2


@settings(max_examples=200, deadline=None)
@given(st.tuples(st.integers(0, 60), st.integers(0, 60)).filter(lambda t: sum(t) > 0))
def test_mcnemar_midp_matches_definition(bc: tuple[int, int]) -> None:
    b, c = bc
    assert mcnemar(b, c, method="mid-p").p_value == pytest.approx(
        float(_midp_by_definition(b, c)), abs=1e-12
    )


def test_mcnemar_bentur_example_fagerland_2013() -> None:
    # Fagerland, Lydersen & Laake (2013), BMC Med Res Methodol 13:91, Table 1 (Bentur et
    # al. airway hyper-responsiveness data): n12 = 1, n21 = 7. By hand, with
    # X ~ Bin(8, 1/2): exact = 2 * P(X <= 1) = 18/256; mid-p (their supplement, eq. 2)
    # = 18/256 - P(X = 1) = 10/256; chi2 = 36/8 = 4.5; with Edwards' correction
    # chi2 = 25/8.
    assert mcnemar(1, 7).p_value == pytest.approx(18 / 256, abs=1e-15)
    assert mcnemar(1, 7, method="mid-p").p_value == pytest.approx(10 / 256, abs=1e-15)
    asym = mcnemar(1, 7, method="asymptotic")
    assert asym.statistic == pytest.approx(4.5)
    assert asym.p_value == pytest.approx(chi2.sf(4.5, 1), abs=1e-15)
    assert mcnemar(1, 7, method="asymptotic", correction=True).statistic == pytest.approx(25 / 8)


def test_mcnemar_cavo_example_contingencytables() -> None:
    # Cavo et al. (2012) data, n12 = 6, n21 = 16; p-values printed by the contingencytables
    # R package (tests/testthat/test-ch8.R), an independent implementation.
    assert mcnemar(6, 16).p_value == pytest.approx(0.052479, abs=5e-7)
    assert mcnemar(6, 16, method="mid-p").p_value == pytest.approx(0.034690, abs=5e-7)
    assert mcnemar(6, 16, method="asymptotic").p_value == pytest.approx(0.033006, abs=5e-7)
    cc = mcnemar(6, 16, method="asymptotic", correction=True)
    assert cc.p_value == pytest.approx(0.055009, abs=5e-7)


@pytest.mark.parametrize(
    ("method", "correction"),
    [("exact", False), ("mid-p", False), ("asymptotic", False), ("asymptotic", True)],
)
def test_mcnemar_zero_discordant_pairs_gives_p_one(method: str, correction: bool) -> None:
    r = mcnemar(0, 0, method=method, correction=correction)
    assert r.p_value == 1.0
    assert r.details["discordant"] == 0


def test_mcnemar_zero_discordant_where_statsmodels_fails() -> None:
    with np.errstate(divide="ignore", invalid="ignore"):
        sm = sm_mcnemar([[10, 0], [0, 5]], exact=False, correction=True)
    assert not np.isfinite(sm.pvalue) or not np.isfinite(sm.statistic)
    assert mcnemar(0, 0, method="asymptotic", correction=True).p_value == 1.0


def test_mcnemar_balanced_discordance_with_correction_gives_p_one() -> None:
    # b == c is the least evidence possible; the corrected statistic is floored at 0.
    r = mcnemar(4, 4, method="asymptotic", correction=True)
    assert r.statistic == 0.0 and r.p_value == 1.0
    assert mcnemar(4, 4).p_value == 1.0
    assert mcnemar(4, 4, method="mid-p").p_value == pytest.approx(1 - 0.5 * 70 / 256)


def test_mcnemar_never_switches_method_with_many_pairs() -> None:
    # A peer switches to the uncorrected chi-square past 25 discordant pairs; we never do.
    b, c = 30, 50
    exact = mcnemar(b, c)
    assert exact.method == "mcnemar-exact"
    assert exact.p_value == pytest.approx(binomtest(b, b + c, 0.5).pvalue, abs=1e-12)
    assert exact.p_value != pytest.approx(chi2.sf((b - c) ** 2 / (b + c), 1), abs=1e-4)
    assert mcnemar(b, c, method="mid-p").method == "mcnemar-mid-p"


def test_mcnemar_validation() -> None:
    with pytest.raises(InvalidParameterError, match="correction"):
        mcnemar(3, 5, method="exact", correction=True)
    with pytest.raises(InvalidParameterError, match="method"):
        mcnemar(3, 5, method="chi2")
    with pytest.raises(InvalidParameterError, match="correction"):
        mcnemar(3, 5, method="asymptotic", correction="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidCountsError, match="a_only"):
        mcnemar(-1, 5)
    with pytest.raises(InvalidCountsError, match="b_only"):
        mcnemar(1, 2.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# Fisher and Boschloo


@st.composite
def small_arms(draw: st.DrawFn, max_n: int = 40) -> tuple[int, int, int, int]:
    n_a = draw(st.integers(1, max_n))
    n_b = draw(st.integers(1, max_n))
    return draw(st.integers(0, n_a)), n_a, draw(st.integers(0, n_b)), n_b


@settings(max_examples=200, deadline=None)
@given(small_arms())
def test_fisher_matches_scipy_with_arms_as_columns(arms: tuple[int, int, int, int]) -> None:
    k_a, n_a, k_b, n_b = arms
    ours = fisher_exact_test(k_a, n_a, k_b, n_b)
    expected = fisher_exact([[k_a, k_b], [n_a - k_a, n_b - k_b]]).pvalue
    assert ours.p_value == pytest.approx(min(1.0, expected), abs=1e-9)
    assert 0.0 <= ours.p_value <= 1.0
    assert ours.method == "fisher-exact"


def _fisher_one_sided(x1: int, x2: int, n_a: int, n_b: int) -> float:
    """P(X1 <= x1 | X1 + X2 = x1 + x2): hypergeometric lower tail, by direct summation."""
    s = x1 + x2
    total = math.comb(n_a + n_b, s)
    return (
        sum(math.comb(n_a, j) * math.comb(n_b, s - j) for j in range(max(0, s - n_b), x1 + 1))
        / total
    )


def _brute_force_boschloo(k_a: int, n_a: int, k_b: int, n_b: int, grid: int = 20001) -> float:
    """Two-sided Boschloo p-value: 2 * min(one-sided), one-sided by full enumeration."""
    pis = np.linspace(0.0, 1.0, grid)
    x1 = np.arange(n_a + 1)
    x2 = np.arange(n_b + 1)
    pmf_a = binom.pmf(x1[:, None], n_a, pis[None, :])  # P(X1 = i | pi_g)
    pmf_b = binom.pmf(x2[:, None], n_b, pis[None, :])
    one_sided = []
    for side in ("less", "greater"):
        if side == "less":
            stat = np.array([[_fisher_one_sided(i, j, n_a, n_b) for j in x2] for i in x1])
        else:  # the same ordering with the roles of the arms swapped
            stat = np.array([[_fisher_one_sided(j, i, n_b, n_a) for j in x2] for i in x1])
        region = stat <= stat[k_a, k_b] * (1 + 1e-13)
        prob = np.einsum("ig,jg,ij->g", pmf_a, pmf_b, region.astype(float))
        one_sided.append(float(prob.max()))
    return min(1.0, 2.0 * min(one_sided))


@pytest.mark.parametrize(
    "arms",
    [
        (4, 5, 0, 3),
        (7, 8, 2, 12),
        (9, 10, 3, 10),
        (2, 10, 6, 7),
        (1, 6, 1, 6),
        (0, 4, 4, 4),
        (3, 7, 5, 9),
    ],
)
def test_boschloo_matches_brute_force_enumeration(arms: tuple[int, int, int, int]) -> None:
    ours = boschloo_test(*arms)
    brute = _brute_force_boschloo(*arms)
    assert ours.p_value == pytest.approx(brute, abs=1e-6)
    assert ours.method == "boschloo-exact"


def test_boschloo_orientation_matters() -> None:
    # Policies as columns (fixed column totals n_a, n_b) is the right table. Passing the
    # arms as rows fixes the wrong margins: here it even moves p across 0.05.
    k_a, n_a, k_b, n_b = 4, 5, 0, 3
    ours = boschloo_test(k_a, n_a, k_b, n_b).p_value
    rows = boschloo_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]]).pvalue
    brute = _brute_force_boschloo(k_a, n_a, k_b, n_b)
    assert ours == pytest.approx(brute, abs=1e-6)
    assert abs(rows - ours) > 0.01
    assert ours < 0.05 < rows
    # Fisher's test conditions on both margins, so orientation cannot matter there.
    assert fisher_exact_test(k_a, n_a, k_b, n_b).p_value == pytest.approx(
        fisher_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]]).pvalue, abs=1e-12
    )


def test_boschloo_is_never_less_powerful_than_fisher_here() -> None:
    # Boschloo's test is uniformly more powerful than Fisher's (Boschloo 1970); on these
    # tables its p-value is no larger.
    for arms in [(4, 5, 0, 3), (9, 10, 3, 10), (7, 8, 2, 12)]:
        assert boschloo_test(*arms).p_value <= fisher_exact_test(*arms).p_value + 1e-12


def test_boschloo_degenerate_tables() -> None:
    assert boschloo_test(0, 5, 0, 7).p_value == pytest.approx(1.0)
    assert boschloo_test(5, 5, 7, 7).p_value == pytest.approx(1.0)


def test_fisher_boschloo_validation() -> None:
    with pytest.raises(InvalidCountsError, match="policy A"):
        fisher_exact_test(6, 5, 0, 3)
    with pytest.raises(InvalidCountsError, match="policy B"):
        boschloo_test(1, 5, 0, 0)
    with pytest.raises(InvalidParameterError, match="sampling_points"):
        boschloo_test(1, 5, 0, 3, sampling_points=0)


# ---------------------------------------------------------------------------------------
# Cochran's Q


@st.composite
def outcome_matrices(draw: st.DrawFn, policies: tuple[int, int] = (2, 6)) -> np.ndarray:
    n = draw(st.integers(1, 40))
    k = draw(st.integers(*policies))
    bits = draw(st.lists(st.integers(0, 1), min_size=n * k, max_size=n * k))
    return np.array(bits, dtype=np.int64).reshape(n, k)


@settings(max_examples=200, deadline=None)
@given(outcome_matrices())
def test_cochran_q_matches_statsmodels(x: np.ndarray) -> None:
    rows = x.sum(axis=1)
    # statsmodels needs at least one discriminating episode (else it divides by zero).
    assume(np.any((rows > 0) & (rows < x.shape[1])))
    ours = cochran_q(x)
    sm = cochrans_q(x)
    assert ours.statistic == pytest.approx(sm.statistic, rel=1e-12, abs=1e-12)
    assert ours.p_value == pytest.approx(sm.pvalue, abs=1e-9)
    assert ours.details["df"] == sm.df == x.shape[1] - 1


@settings(max_examples=100, deadline=None)
@given(outcome_matrices(policies=(2, 2)))
def test_cochran_q_with_two_policies_is_uncorrected_mcnemar(x: np.ndarray) -> None:
    b = int(np.sum((x[:, 0] == 1) & (x[:, 1] == 0)))
    c = int(np.sum((x[:, 0] == 0) & (x[:, 1] == 1)))
    q = cochran_q(x)
    m = mcnemar(b, c, method="asymptotic")
    assert q.statistic == pytest.approx(m.statistic, abs=1e-12)
    assert q.p_value == pytest.approx(m.p_value, abs=1e-12)


def test_cochran_q_no_discriminating_episode() -> None:
    r = cochran_q(np.array([[1, 1, 1], [0, 0, 0], [1, 1, 1]]))
    assert r.statistic == 0.0 and r.p_value == 1.0
    assert cochran_q([[True, False], [True, False]]).p_value < 1.0


def test_cochran_q_validation() -> None:
    with pytest.raises(InvalidInputError, match="2-D"):
        cochran_q([1, 0, 1])
    with pytest.raises(InvalidInputError, match="2 policies"):
        cochran_q([[1], [0]])
    with pytest.raises(InvalidInputError, match="0/1"):
        cochran_q([[1, 2], [0, 1]])
    with pytest.raises(InvalidInputError, match="0/1"):
        cochran_q([[1, float("nan")], [0, 1]])
    with pytest.raises(InvalidInputError):
        cochran_q([["a", "b"], ["c", "d"]])


# ---------------------------------------------------------------------------------------
# Cochran-Mantel-Haenszel


@st.composite
def strata(draw: st.DrawFn) -> list[tuple[int, int, int, int]]:
    out = []
    for _ in range(draw(st.integers(1, 6))):
        n_a = draw(st.integers(1, 40))
        n_b = draw(st.integers(1, 40))
        out.append((draw(st.integers(0, n_a)), n_a, draw(st.integers(0, n_b)), n_b))
    return out


def _statsmodels_cmh(
    tables: list[tuple[int, int, int, int]], correction: bool
) -> tuple[float, float]:
    arr = np.array(
        [[[ka, kb], [na - ka, nb - kb]] for ka, na, kb, nb in tables], dtype=float
    ).transpose(1, 2, 0)
    res = StratifiedTable(arr).test_null_odds(correction=correction)
    return float(res.statistic), float(res.pvalue)


@settings(max_examples=200, deadline=None)
@given(strata(), st.booleans())
def test_cmh_matches_statsmodels(tables: list[tuple[int, int, int, int]], correction: bool) -> None:
    succ = [ka + kb for ka, _, kb, _ in tables]
    tot = [na + nb for _, na, _, nb in tables]
    # need some information; statsmodels does not floor the corrected |deviation| at 0.
    assume(any(0 < s < t for s, t in zip(succ, tot, strict=True)))
    deviation = sum(ka - na * (ka + kb) / (na + nb) for ka, na, kb, nb in tables)
    assume(not correction or abs(deviation) >= 0.5)
    ours = cmh_test(tables, correction=correction)
    stat, p = _statsmodels_cmh(tables, correction)
    assert ours.statistic == pytest.approx(stat, rel=1e-9, abs=1e-12)
    assert ours.p_value == pytest.approx(p, abs=1e-9)


def test_cmh_single_stratum_is_the_mantel_haenszel_chi_square() -> None:
    # One stratum: (N - 1)/N times Pearson's chi-square (Mantel & Haenszel 1959).
    k_a, n_a, k_b, n_b = 8, 10, 4, 10
    n, m = n_a + n_b, k_a + k_b
    pearson = n * (k_a * (n_b - k_b) - k_b * (n_a - k_a)) ** 2 / (n_a * n_b * m * (n - m))
    r = cmh_test([(k_a, n_a, k_b, n_b)])
    assert r.statistic == pytest.approx(pearson * (n - 1) / n, rel=1e-12)


def test_cmh_edge_cases() -> None:
    # strata with < 2 episodes or without both outcomes carry no information
    none = cmh_test([(1, 1, 0, 0), (3, 3, 2, 2), (0, 4, 0, 5)])
    assert none.statistic == 0.0 and none.p_value == 1.0
    assert none.details["informative_strata"] == 0
    some = cmh_test([(1, 1, 0, 0), (8, 10, 4, 10)])
    assert some.statistic == pytest.approx(cmh_test([(8, 10, 4, 10)]).statistic)
    # the corrected statistic is floored at zero
    balanced = cmh_test([(5, 10, 5, 10)], correction=True)
    assert balanced.statistic == 0.0 and balanced.p_value == 1.0
    assert cmh_test([(8, 10, 4, 10)], correction=True).method == "cmh-cc"


def test_cmh_validation() -> None:
    with pytest.raises(InvalidInputError, match="at least one"):
        cmh_test([])
    with pytest.raises(InvalidInputError, match="four counts"):
        cmh_test([(1, 2, 3)])
    with pytest.raises(InvalidCountsError, match="stratum 1, policy B"):
        cmh_test([(1, 2, 3, 4), (1, 2, 5, 4)])
    with pytest.raises(InvalidParameterError, match="correction"):
        cmh_test([(1, 2, 3, 4)], correction=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        cmh_test("1234")  # type: ignore[arg-type]


def test_results_are_test_results() -> None:
    for r in (
        mcnemar(2, 9),
        fisher_exact_test(3, 9, 7, 9),
        boschloo_test(3, 9, 7, 9),
        cochran_q([[1, 0], [0, 1], [1, 0]]),
        cmh_test([(3, 9, 7, 9)]),
    ):
        assert isinstance(r, TestResult)
        assert 0.0 <= r.p_value <= 1.0
