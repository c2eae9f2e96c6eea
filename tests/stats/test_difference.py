"""Tests for evalband.stats._difference against independent oracles.

Oracles:
* statsmodels ``confint_proportions_2indep(method="newcomb")`` for the unpaired interval;
* published worked examples (sources cited next to each number);
* a from-scratch Newcombe paired interval written here from the formulas of Newcombe
  (1998b), fed by statsmodels' Wilson interval;
* Tango's interval recomputed by brute force: the constrained likelihood maximised
  numerically on a dense grid of delta, and the score test inverted on that grid;
* Monte-Carlo coverage near the nominal level.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import xlogy
from scipy.stats import norm
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from evalband.errors import InvalidCountsError, InvalidParameterError
from evalband.stats import Difference, diff_paired, diff_unpaired
from evalband.stats._difference import PAIRED_METHODS

# ---------------------------------------------------------------------------------------
# strategies


@st.composite
def two_arms(draw: st.DrawFn) -> tuple[int, int, int, int]:
    n_a = draw(st.integers(1, 300))
    n_b = draw(st.integers(1, 300))
    return draw(st.integers(0, n_a)), n_a, draw(st.integers(0, n_b)), n_b


@st.composite
def paired_tables(draw: st.DrawFn, max_cell: int = 60) -> tuple[int, int, int, int]:
    cells = draw(st.tuples(*[st.integers(0, max_cell)] * 4))
    if sum(cells) == 0:
        return (0, 0, 0, 1)
    return cells


confidences = st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999])


# ---------------------------------------------------------------------------------------
# unpaired: Newcombe (1998a) method 10


@settings(max_examples=300, deadline=None)
@given(two_arms(), confidences)
def test_unpaired_matches_statsmodels_newcomb(arms: tuple[int, int, int, int], conf: float) -> None:
    k_a, n_a, k_b, n_b = arms
    ours = diff_unpaired(k_a, n_a, k_b, n_b, confidence=conf)
    low, high = confint_proportions_2indep(
        k_a, n_a, k_b, n_b, method="newcomb", compare="diff", alpha=1 - conf
    )
    assert ours.low == pytest.approx(low, abs=1e-9)
    assert ours.high == pytest.approx(high, abs=1e-9)
    assert ours.estimate == pytest.approx(k_a / n_a - k_b / n_b, abs=1e-15)


@pytest.mark.parametrize(
    ("k_a", "n_a", "k_b", "n_b", "low", "high"),
    [
        # Newcombe RG (1998), Stat Med 17:873-890, Table II, method 10, example (a).
        (56, 70, 48, 80, 0.0524, 0.3339),
        # Same table, example (b).
        (9, 10, 3, 10, 0.1705, 0.8090),
        # Same table, example (d) (also reproduced in the ratesci R package's
        # tests/testthat/test3.R, "Newcombe RD example (d)").
        (5, 56, 0, 29, -0.0381, 0.1926),
    ],
)
def test_unpaired_newcombe_1998_table_ii(
    k_a: int, n_a: int, k_b: int, n_b: int, low: float, high: float
) -> None:
    d = diff_unpaired(k_a, n_a, k_b, n_b)
    assert d.low == pytest.approx(low, abs=5.1e-5)
    assert d.high == pytest.approx(high, abs=5.1e-5)
    assert d.method == "newcombe-hybrid-score"
    assert d.paired is False
    assert d.counts == {"k_a": k_a, "n_a": n_a, "k_b": k_b, "n_b": n_b}


@settings(max_examples=150, deadline=None)
@given(two_arms(), confidences)
def test_unpaired_swapping_arms_mirrors_interval(
    arms: tuple[int, int, int, int], conf: float
) -> None:
    k_a, n_a, k_b, n_b = arms
    ab = diff_unpaired(k_a, n_a, k_b, n_b, confidence=conf)
    ba = diff_unpaired(k_b, n_b, k_a, n_a, confidence=conf)
    assert ab.low == pytest.approx(-ba.high, abs=1e-12)
    assert ab.high == pytest.approx(-ba.low, abs=1e-12)
    assert -1.0 <= ab.low <= ab.estimate <= ab.high <= 1.0


def test_unpaired_extremes_stay_in_range() -> None:
    d = diff_unpaired(10, 10, 0, 10)
    assert d.high == 1.0 and 0.0 < d.low < 1.0
    d = diff_unpaired(0, 10, 0, 20)
    assert d.low < 0.0 < d.high


def test_unpaired_validation() -> None:
    with pytest.raises(InvalidCountsError, match="policy A"):
        diff_unpaired(11, 10, 3, 10)
    with pytest.raises(InvalidCountsError, match="policy B"):
        diff_unpaired(1, 10, 3, 0)
    with pytest.raises(InvalidCountsError):
        diff_unpaired(-1, 10, 3, 10)
    with pytest.raises(InvalidCountsError):
        diff_unpaired(1.5, 10, 3, 10)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        diff_unpaired(1, 10, 3, 10, confidence=1.0)
    with pytest.raises(InvalidParameterError):
        diff_unpaired(1, 10, 3, 10, confidence=float("nan"))


# ---------------------------------------------------------------------------------------
# paired: published examples. (a, b, c, d) = (both, A only, B only, neither);
# the difference is (b - c)/n.

NEWCOMBE_PAIRED_PUBLISHED = [
    # Newcombe RG (1998b), Stat Med 17:2635-2650, worked example, method 10
    # (as reproduced in the ratesci R package, tests/testthat/test3.R).
    ((20, 12, 2, 16), 0.95, 0.0562, 0.3292, 4),
    # Fagerland, Lydersen & Laake (2014), Stat Med 33:2850-2875, Bentur et al. data,
    # Newcombe hybrid score interval.
    ((1, 1, 7, 12), 0.95, -0.507, -0.026, 3),
    # Tang, Li & Tang (2010), Stat Methods Med Res 21:361-378, example (via ratesci).
    ((8, 3, 1, 2), 0.95, -0.1574, 0.4136, 4),
    # Chang et al. (2024), J Appl Stat 51:139-152, example (via ratesci).
    ((7, 25, 2, 68), 0.95, 0.133, 0.318, 3),
]

TANGO_PUBLISHED = [
    # Tango T (1998), Stat Med 17:891-908, examples (as reproduced in ratesci's
    # tests/testthat/test3.R, "Tango RD").
    ((4, 9, 3, 16), 0.95, -0.027, 0.390, 3),
    ((43, 0, 1, 0), 0.90, -0.096, 0.037, 3),
    # Fagerland, Lydersen & Laake (2014), Stat Med 33:2850-2875, Bentur et al. data.
    ((1, 1, 7, 12), 0.95, -0.517, -0.026, 3),
    # Agresti & Min (2005), Stat Med 24:729-740, example.
    ((53, 16, 8, 9), 0.95, -0.020, 0.207, 3),
    # Tang, Li & Tang (2010), Stat Methods Med Res 21:361-378, example.
    ((8, 3, 1, 2), 0.95, -0.1670, 0.4327, 4),
    # Chang et al. (2024), J Appl Stat 51:139-152, example.
    ((7, 25, 2, 68), 0.95, 0.139, 0.321, 3),
]


@pytest.mark.parametrize(("table", "conf", "low", "high", "digits"), NEWCOMBE_PAIRED_PUBLISHED)
def test_paired_newcombe_published(
    table: tuple[int, int, int, int], conf: float, low: float, high: float, digits: int
) -> None:
    d = diff_paired(*table, method="newcombe", confidence=conf)
    tol = 0.5 * 10.0**-digits + 1e-9
    assert d.low == pytest.approx(low, abs=tol)
    assert d.high == pytest.approx(high, abs=tol)
    assert d.method == "newcombe-paired"
    assert d.paired is True


@pytest.mark.parametrize(("table", "conf", "low", "high", "digits"), TANGO_PUBLISHED)
def test_paired_tango_published(
    table: tuple[int, int, int, int], conf: float, low: float, high: float, digits: int
) -> None:
    d = diff_paired(*table, method="tango", confidence=conf)
    tol = 0.5 * 10.0**-digits + 1e-9
    assert d.low == pytest.approx(low, abs=tol)
    assert d.high == pytest.approx(high, abs=tol)
    assert d.method == "tango-score"


# ---------------------------------------------------------------------------------------
# paired Newcombe: from-scratch re-implementation (formulas of Newcombe 1998b, method 10)


def _scratch_newcombe_paired(a: int, b: int, c: int, d: int, conf: float) -> tuple[float, float]:
    n = a + b + c + d
    alpha = 1.0 - conf
    l1, u1 = proportion_confint(a + b, n, alpha=alpha, method="wilson")
    l2, u2 = proportion_confint(a + c, n, alpha=alpha, method="wilson")
    p1, p2 = (a + b) / n, (a + c) / n
    margins = [a + b, c + d, a + c, b + d]
    if 0 in margins:
        phi = 0.0
    else:
        num = a * d - b * c
        if num > 0:
            num = max(num - n / 2, 0)
        phi = num / math.sqrt(math.prod(float(m) for m in margins))
    lower = p1 - p2 - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    upper = p1 - p2 + math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return lower, upper


@settings(max_examples=300, deadline=None)
@given(paired_tables(), confidences)
def test_paired_newcombe_matches_scratch_implementation(
    table: tuple[int, int, int, int], conf: float
) -> None:
    ours = diff_paired(*table, method="newcombe", confidence=conf)
    low, high = _scratch_newcombe_paired(*table, conf)
    assert ours.low == pytest.approx(low, abs=1e-9)
    assert ours.high == pytest.approx(high, abs=1e-9)


@pytest.mark.parametrize(
    "table",
    # Tables whose Newcombe phi is 0: a zero margin, ad = bc, or 0 < ad - bc <= n/2.
    [
        (0, 0, 5, 9),
        (9, 5, 0, 0),
        (3, 0, 0, 0),
        (2, 4, 1, 2),
        (6, 2, 3, 1),
        (2, 1, 1, 1),
        (3, 2, 2, 2),
    ],
)
def test_paired_newcombe_with_zero_phi_is_the_unpaired_interval(
    table: tuple[int, int, int, int],
) -> None:
    # With phi = 0 Newcombe's paired interval reduces to the unpaired hybrid interval of
    # the two margins, which statsmodels computes independently.
    a, b, c, d = table
    n = a + b + c + d
    ours = diff_paired(*table, method="newcombe")
    low, high = confint_proportions_2indep(a + b, n, a + c, n, method="newcomb")
    assert ours.low == pytest.approx(low, abs=1e-9)
    assert ours.high == pytest.approx(high, abs=1e-9)


# ---------------------------------------------------------------------------------------
# Tango: brute-force inversion of the score test with a numerically maximised likelihood


def _numeric_q21(deltas: np.ndarray, b: int, c: int, n: int) -> np.ndarray:
    """Maximise the constrained log-likelihood over q21 for every delta (golden section).

    Cells: q12 = q21 + delta (only A), q21 (only B), 1 - q12 - q21 (concordant).
    """
    lo = np.maximum(0.0, -deltas)
    hi = (1.0 - deltas) / 2.0

    def loglik(q: np.ndarray) -> np.ndarray:
        out: np.ndarray = (
            xlogy(b, q + deltas) + xlogy(c, q) + xlogy(n - b - c, 1.0 - 2.0 * q - deltas)
        )
        return out

    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(90):
        x1 = hi - ratio * (hi - lo)
        x2 = lo + ratio * (hi - lo)
        keep_left = loglik(x1) >= loglik(x2)
        hi = np.where(keep_left, x2, hi)
        lo = np.where(keep_left, lo, x1)
    return (lo + hi) / 2.0


def _brute_force_tango(
    b: int, c: int, n: int, conf: float, step: float = 1e-4
) -> tuple[float, float, np.ndarray]:
    z = norm.ppf(0.5 + conf / 2.0)
    deltas = np.linspace(-1.0, 1.0, int(round(2.0 / step)) + 1)
    q21 = _numeric_q21(deltas, b, c, n)
    var = n * (2.0 * q21 + deltas * (1.0 - deltas))
    num = b - c - n * deltas
    with np.errstate(divide="ignore", invalid="ignore"):
        accept = num**2 <= z**2 * np.maximum(var, 0.0)
    inside = deltas[accept]
    return float(inside.min()), float(inside.max()), accept


@pytest.mark.parametrize(
    ("table", "conf"),
    [
        ((4, 9, 3, 16), 0.95),
        ((43, 0, 1, 0), 0.90),
        ((1, 1, 7, 12), 0.95),
        ((53, 16, 8, 9), 0.99),
        ((0, 0, 0, 25), 0.95),
        ((0, 6, 0, 0), 0.95),
        ((2, 0, 9, 1), 0.80),
        ((30, 40, 5, 3), 0.95),
    ],
)
def test_tango_matches_brute_force_grid_inversion(
    table: tuple[int, int, int, int], conf: float
) -> None:
    a, b, c, d = table
    n = sum(table)
    step = 1e-4
    low, high, accept = _brute_force_tango(b, c, n, conf, step)
    # The accepted grid points form one contiguous block: the root finder's interval.
    idx = np.flatnonzero(accept)
    assert np.all(np.diff(idx) == 1)
    ours = diff_paired(*table, method="tango", confidence=conf)
    assert ours.low == pytest.approx(low, abs=step + 1e-9)
    assert ours.high == pytest.approx(high, abs=step + 1e-9)
    assert ours.low <= low + 1e-9 and high <= ours.high + 1e-9


@settings(max_examples=25, deadline=None)
@given(paired_tables(max_cell=30), st.floats(-0.999, 0.999))
def test_tango_closed_form_q_is_the_constrained_mle(
    table: tuple[int, int, int, int], delta: float
) -> None:
    from evalband.stats._difference import _tango_q

    _, b, c, _ = table
    n = sum(table)
    numeric = _numeric_q21(np.array([delta]), b, c, n)[0]
    assert _tango_q(delta, b, c, n) == pytest.approx(numeric, abs=1e-7)


# ---------------------------------------------------------------------------------------
# paired: properties and edge cases


@settings(max_examples=120, deadline=None)
@given(paired_tables(), confidences, st.sampled_from(PAIRED_METHODS))
def test_paired_swapping_policies_mirrors_interval(
    table: tuple[int, int, int, int], conf: float, method: str
) -> None:
    a, b, c, d = table
    ab = diff_paired(a, b, c, d, method=method, confidence=conf)
    ba = diff_paired(a, c, b, d, method=method, confidence=conf)
    assert ab.low == pytest.approx(-ba.high, abs=1e-9)
    assert ab.high == pytest.approx(-ba.low, abs=1e-9)
    assert -1.0 <= ab.low <= ab.estimate <= ab.high <= 1.0


@settings(max_examples=80, deadline=None)
@given(paired_tables(), st.sampled_from(["newcombe", "tango"]))
def test_paired_intervals_nest_with_confidence(
    table: tuple[int, int, int, int], method: str
) -> None:
    narrow = diff_paired(*table, method=method, confidence=0.8)
    wide = diff_paired(*table, method=method, confidence=0.99)
    assert wide.low <= narrow.low + 1e-12
    assert narrow.high <= wide.high + 1e-12
    assert wide.high - wide.low > 0.0


@pytest.mark.parametrize(
    "table",
    [
        (0, 0, 0, 10),  # all fail
        (10, 0, 0, 0),  # all succeed
        (5, 0, 0, 5),  # no discordant pairs
        (0, 0, 0, 1),  # a single pair
        (0, 10, 0, 0),  # all discordant one way
        (0, 0, 10, 0),
        (0, 5, 5, 0),  # all discordant, balanced
        (3, 3, 3, 3),  # all cells equal
    ],
)
@pytest.mark.parametrize("method", ["newcombe", "tango"])
def test_paired_edge_tables_are_finite_and_sensible(
    table: tuple[int, int, int, int], method: str
) -> None:
    d = diff_paired(*table, method=method)
    assert math.isfinite(d.low) and math.isfinite(d.high)
    assert -1.0 <= d.low <= d.estimate <= d.high <= 1.0
    assert d.high - d.low > 0.0
    assert d.counts == dict(zip(("both", "a_only", "b_only", "neither"), table, strict=True))


def test_no_discordant_pairs_closed_forms() -> None:
    # b = c = 0: Tango's equation (n*delta)**2 = z**2 * n * |delta| * (1 - |delta|) gives
    # +-z**2/(n + z**2), which is also the Wilson upper limit for 0/n.
    n = 25
    z = norm.ppf(0.975)
    t = diff_paired(5, 0, 0, 20, method="tango")
    assert t.high == pytest.approx(z**2 / (n + z**2), abs=1e-12)
    assert t.low == pytest.approx(-(z**2) / (n + z**2), abs=1e-12)
    # b = n: the lower limit solves n(1 - delta) = z**2 (1 + delta).
    t = diff_paired(0, n, 0, 0, method="tango")
    assert t.low == pytest.approx((n - z**2) / (n + z**2), abs=1e-12)
    assert t.high == 1.0


def test_wald_shows_why_not() -> None:
    # No discordant pairs: Wald claims certainty (zero width); the score methods do not.
    w = diff_paired(20, 0, 0, 10, method="wald")
    assert w.low == w.high == 0.0
    assert w.method == "wald-paired"
    for method in ("newcombe", "tango"):
        s = diff_paired(20, 0, 0, 10, method=method)
        assert s.high - s.low > 0.05


# ---------------------------------------------------------------------------------------
# Monte-Carlo coverage


def _mc_coverage(probs: tuple[float, ...], n: int, method: str, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    tables = rng.multinomial(n, probs, size=reps)
    truth = probs[1] - probs[2]
    uniq, counts = np.unique(tables, axis=0, return_counts=True)
    covered = np.array(
        [
            (lambda iv: iv.low <= truth <= iv.high)(diff_paired(*map(int, row), method=method))
            for row in uniq
        ]
    )
    return float(np.sum(counts[covered]) / reps)


@pytest.mark.parametrize("method", ["newcombe", "tango"])
@pytest.mark.parametrize(
    ("probs", "n"), [((0.4, 0.15, 0.1, 0.35), 40), ((0.6, 0.2, 0.05, 0.15), 60)]
)
def test_paired_monte_carlo_coverage_near_nominal(
    probs: tuple[float, ...], n: int, method: str
) -> None:
    cover = _mc_coverage(probs, n, method, reps=3000, seed=20240601)
    # Monte-Carlo standard error ~0.004; both methods are near-nominal here.
    assert 0.93 <= cover <= 0.98


def test_wald_undercovers_with_rare_discordance() -> None:
    probs = (0.55, 0.03, 0.01, 0.41)
    wald = _mc_coverage(probs, 30, "wald", reps=3000, seed=7)
    newcombe = _mc_coverage(probs, 30, "newcombe", reps=3000, seed=7)
    assert wald < 0.9 < newcombe


# ---------------------------------------------------------------------------------------
# validation and types


def test_paired_methods_registry() -> None:
    assert PAIRED_METHODS == ("newcombe", "tango", "wald")
    assert isinstance(diff_paired(1, 2, 3, 4, method="TANGO"), Difference)


def test_paired_validation() -> None:
    with pytest.raises(InvalidCountsError, match="at least one matched pair"):
        diff_paired(0, 0, 0, 0)
    with pytest.raises(InvalidCountsError, match="a_only"):
        diff_paired(1, -2, 0, 0)
    with pytest.raises(InvalidCountsError, match="neither"):
        diff_paired(1, 2, 0, float("nan"))  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="method"):
        diff_paired(1, 2, 3, 4, method="exact")
    with pytest.raises(InvalidParameterError, match="confidence"):
        diff_paired(1, 2, 3, 4, confidence=0.0)
