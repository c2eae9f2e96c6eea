"""Tests for evalband.stats._coverage: exact coverage of one-proportion intervals.

Oracles: a pure-Python enumeration written here (math.comb pmf, statsmodels bounds per
k, Brown-Cai-DasGupta's Jeffreys edge convention applied by hand), a Monte-Carlo
simulation with statsmodels intervals, a hand derivation of Wald's coverage at n = 20,
and Clopper-Pearson's guaranteed conservatism.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from evalband.errors import InvalidCountsError, InvalidParameterError
from evalband.stats import coverage, coverage_grid
from evalband.stats._coverage import CoverageGrid
from evalband.stats._intervals import INTERVAL_METHODS

STATSMODELS_NAME = {
    "wilson": "wilson",
    "clopper-pearson": "beta",
    "jeffreys": "jeffreys",
    "agresti-coull": "agresti_coull",
    "wald": "normal",
}


def _reference_bounds(k: int, n: int, method: str, confidence: float) -> tuple[float, float]:
    low, high = proportion_confint(k, n, alpha=1 - confidence, method=STATSMODELS_NAME[method])
    if method == "jeffreys":  # Brown, Cai & DasGupta (2001) 4.1.2 convention
        low = 0.0 if k == 0 else low
        high = 1.0 if k == n else high
    if method == "wilson":
        # In exact arithmetic Wilson's bounds are 0 at k = 0 and 1 at k = n:
        # (z^2/2 - z sqrt(z^2/4)) / (n + z^2) = 0. statsmodels' rounding leaves e.g.
        # 1 - 2**-53 at 20/20 or 2e-19 at 0/1000, which would miss p = 1 or p = 0.
        low = 0.0 if k == 0 else low
        high = 1.0 if k == n else high
    return float(low), float(high)


def _enumerated_coverage(method: str, n: int, p: float, confidence: float) -> float:
    total = 0.0
    for k in range(n + 1):
        low, high = _reference_bounds(k, n, method, confidence)
        if low <= p <= high:
            total += math.comb(n, k) * p**k * (1 - p) ** (n - k)
    return total


# --------------------------------------------------------------- the must-show case


def test_wald_collapses_near_p_005_at_n_20_wilson_does_not() -> None:
    # By hand (Brown, Cai & DasGupta 2001, section 2): at n = 20, p = 0.05 the Wald interval
    # covers 0.05 only for k = 1..4 (k = 0 gives [0, 0]; from k = 5 the lower limit
    # 0.25 - 1.96 sqrt(0.25 * 0.75 / 20) = 0.060 > 0.05), so its coverage is P(1 <= K <= 4).
    by_hand = sum(math.comb(20, k) * 0.05**k * 0.95 ** (20 - k) for k in range(1, 5))
    wald = coverage("wald", 20, 0.05)
    assert wald == pytest.approx(by_hand, abs=1e-12)
    assert wald < 0.7
    wilson = coverage("wilson", 20, 0.05)
    assert wilson > 0.9
    assert abs(wilson - 0.95) < abs(wald - 0.95) / 5


# ----------------------------------------------------- exact enumeration as oracle


@pytest.mark.parametrize("method", INTERVAL_METHODS)
@pytest.mark.parametrize(
    ("n", "p", "confidence"),
    [
        (1, 0.3, 0.95),
        (20, 0.05, 0.95),
        (20, 0.5, 0.9),
        (37, 0.81, 0.99),
        (64, 9 / 64, 0.95),
        (150, 0.013, 0.8),
        (10, 0.0, 0.95),
        (10, 1.0, 0.95),
    ],
)
def test_matches_pure_python_enumeration(method: str, n: int, p: float, confidence: float) -> None:
    assert coverage(method, n, p, confidence) == pytest.approx(
        _enumerated_coverage(method, n, p, confidence), abs=1e-12
    )


@pytest.mark.parametrize("method", ["wilson", "wald", "jeffreys"])
def test_grid_matches_enumeration_pointwise(method: str) -> None:
    ps = [0.001, 0.02, 0.1, 0.37, 0.5, 0.93, 0.999]
    grid = coverage_grid(method, 25, ps=ps, confidence=0.9)
    for p, c in zip(ps, grid.coverage, strict=True):
        assert c == pytest.approx(_enumerated_coverage(method, 25, p, 0.9), abs=1e-12)


# ----------------------------------------------------------- simulation as oracle


@pytest.mark.parametrize(
    ("method", "n", "p"),
    [
        ("wald", 20, 0.05),
        ("wilson", 20, 0.05),
        ("agresti-coull", 50, 0.9),
        ("clopper-pearson", 30, 0.3),
        ("jeffreys", 15, 0.6),
    ],
)
def test_matches_monte_carlo_simulation(method: str, n: int, p: float) -> None:
    reps = 200_000
    rng = np.random.default_rng(20240601)
    k = rng.binomial(n, p, size=reps)
    seen, which = np.unique(k, return_inverse=True)
    bounds = np.array([_reference_bounds(int(x), n, method, 0.95) for x in seen])
    low, high = bounds[which, 0], bounds[which, 1]
    simulated = float(np.mean((low <= p) & (p <= high)))
    exact = coverage(method, n, p)
    se = math.sqrt(exact * (1 - exact) / reps)
    assert abs(simulated - exact) < 4.5 * se


# ------------------------------------------------------------------ grid audit


def test_clopper_pearson_never_below_nominal() -> None:
    # Clopper & Pearson (1934): coverage >= 1 - alpha for every p (Brown et al. 2001, 4.2.1).
    for n in (5, 30, 100):
        grid = coverage_grid("clopper-pearson", n)
        assert grid.min_coverage >= 0.95 - 1e-12
        assert grid.share_below_nominal == 0.0


def test_grid_summary_fields_are_consistent() -> None:
    grid = coverage_grid("wald", 20)
    assert isinstance(grid, CoverageGrid)
    assert grid.ps.size == grid.coverage.size == 999
    assert grid.ps[0] == pytest.approx(0.001) and grid.ps[-1] == pytest.approx(0.999)
    assert grid.min_coverage == pytest.approx(float(grid.coverage.min()))
    assert coverage("wald", 20, grid.p_at_min) == pytest.approx(grid.min_coverage, abs=1e-12)
    assert grid.mean_coverage == pytest.approx(float(grid.coverage.mean()))
    assert grid.share_below_nominal == pytest.approx(float(np.mean(grid.coverage < 0.95)))
    # Brown et al. (2001): at n = 20 Wald is below nominal almost everywhere.
    assert grid.share_below_nominal > 0.9
    wilson = coverage_grid("wilson", 20)
    assert abs(wilson.mean_coverage - 0.95) < 0.01
    assert wilson.min_coverage > grid.min_coverage


def test_grid_as_dict_is_json_ready() -> None:
    grid = coverage_grid("jeffreys", 12, ps=[0.1, 0.5])
    payload = json.loads(json.dumps(grid.as_dict()))
    assert payload["method"] == "jeffreys" and payload["n"] == 12
    assert payload["ps"] == [0.1, 0.5] and len(payload["coverage"]) == 2


def test_symmetric_methods_have_symmetric_coverage() -> None:
    for method in INTERVAL_METHODS:
        assert coverage(method, 17, 0.23) == pytest.approx(coverage(method, 17, 0.77), abs=1e-12)


def test_boundary_conventions_give_full_coverage_at_p_zero() -> None:
    for method in ("wilson", "clopper-pearson", "jeffreys", "agresti-coull", "wald"):
        assert coverage(method, 10, 0.0) == pytest.approx(1.0)


def test_large_n_is_chunked_and_fast_enough() -> None:
    grid = coverage_grid("wilson", 3000, ps=np.linspace(0.01, 0.99, 50))
    assert 0.9 < grid.mean_coverage < 0.97


# -------------------------------------------------------------------- bad input


@pytest.mark.parametrize("n", [0, -3, 2.5, math.nan, "20"])
def test_bad_n_raises(n: object) -> None:
    with pytest.raises(InvalidCountsError):
        coverage("wilson", n, 0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("p", [-0.1, 1.1, math.nan, "0.5"])
def test_bad_p_raises(p: object) -> None:
    with pytest.raises(InvalidParameterError):
        coverage("wilson", 10, p)  # type: ignore[arg-type]


@pytest.mark.parametrize("ps", [[], [0.5, 1.5], [math.nan], ["a"]])
def test_bad_grid_raises(ps: object) -> None:
    with pytest.raises(InvalidParameterError):
        coverage_grid("wilson", 10, ps=ps)  # type: ignore[arg-type]


def test_bad_method_and_confidence_raise() -> None:
    with pytest.raises(InvalidParameterError, match="method"):
        coverage("score", 10, 0.5)
    with pytest.raises(InvalidParameterError, match="confidence"):
        coverage_grid("wilson", 10, confidence=1.0)
