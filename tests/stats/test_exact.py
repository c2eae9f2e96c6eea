"""McNemar's and Fisher's exact tests in integer arithmetic against scipy and the definitions.

Oracles: ``scipy.stats.fisher_exact`` and ``scipy.stats.binom`` (what these functions
called before), and the p-values written here from the definitions with ``fractions``.
"""

from __future__ import annotations

import itertools
import math
import random
import subprocess
import sys
from fractions import Fraction

import pytest
from scipy.stats import binom, fisher_exact

from evalband.stats import fisher_exact_test, mcnemar
from evalband.stats._exact import EXACT_LIMIT


def _scipy_mcnemar(b: int, c: int, method: str) -> float:
    m, low = b + c, min(b, c)
    if method == "exact":
        return min(1.0, 2.0 * float(binom.cdf(low, m, 0.5)))
    if b == c:
        return min(1.0, 1.0 - 0.5 * float(binom.pmf(b, m, 0.5)))
    return min(1.0, 2.0 * float(binom.cdf(low, m, 0.5)) - float(binom.pmf(low, m, 0.5)))


def _definition_mcnemar(b: int, c: int, method: str) -> Fraction:
    m, low = b + c, min(b, c)
    pmf = [Fraction(math.comb(m, i), 2**m) for i in range(m + 1)]
    tail = sum(pmf[: low + 1], Fraction(0))
    if method == "exact":
        return min(Fraction(1), 2 * tail)
    return 1 - pmf[b] / 2 if b == c else 2 * tail - pmf[low]


@pytest.mark.parametrize("method", ["exact", "mid-p"])
def test_mcnemar_is_the_definition_correctly_rounded_and_scipys_value(method: str) -> None:
    for b, c in itertools.product(range(30), repeat=2):
        if b + c == 0:
            continue
        got = mcnemar(b, c, method=method).p_value
        assert got == float(_definition_mcnemar(b, c, method)), (b, c)
        assert got == pytest.approx(_scipy_mcnemar(b, c, method), rel=1e-13, abs=1e-300)


def test_mcnemar_past_the_exact_limit_is_scipys() -> None:
    b, c = 1000, EXACT_LIMIT - 1000 + 150
    for method in ("exact", "mid-p"):
        assert mcnemar(b, c, method=method).p_value == _scipy_mcnemar(b, c, method)
    near = mcnemar(990, EXACT_LIMIT - 990).p_value  # the largest exact sum
    assert near == pytest.approx(_scipy_mcnemar(990, EXACT_LIMIT - 990, "exact"), rel=1e-12)


def _definition_fisher(k_a: int, n_a: int, k_b: int, n_b: int) -> Fraction:
    """Sum of the hypergeometric probabilities of the tables no more likely than observed."""
    total, successes = n_a + n_b, k_a + k_b

    support = range(max(0, successes - n_b), min(successes, n_a) + 1)
    pmf = {x: Fraction(math.comb(n_a, x) * math.comb(n_b, successes - x),
                       math.comb(total, successes)) for x in support}
    return sum((p for p in pmf.values() if p <= pmf[k_a]), Fraction(0))


def _tables() -> list[tuple[int, int, int, int]]:
    """Every table with arms of up to 6 episodes, and 150 seeded ones of up to 80."""
    small = [(k_a, n_a, k_b, n_b) for n_a, n_b in itertools.product(range(1, 7), repeat=2)
             for k_a, k_b in itertools.product(range(n_a + 1), range(n_b + 1))]
    rng = random.Random(20)
    sizes = [(rng.randint(1, 80), rng.randint(1, 80)) for _ in range(150)]
    return small + [(rng.randint(0, n_a), n_a, rng.randint(0, n_b), n_b) for n_a, n_b in sizes]


def test_fisher_is_scipys_and_the_definitions() -> None:
    for k_a, n_a, k_b, n_b in _tables():
        ours = fisher_exact_test(k_a, n_a, k_b, n_b)
        ref = fisher_exact([[k_a, k_b], [n_a - k_a, n_b - k_b]])
        assert ours.p_value == pytest.approx(float(ref.pvalue), rel=2e-15)
        assert ours.p_value == pytest.approx(
            min(1.0, float(_definition_fisher(k_a, n_a, k_b, n_b))), rel=2e-15)
        odds = float(ref.statistic)
        assert ours.details["odds_ratio"] == odds or (math.isnan(odds) and math.isnan(
            float(ours.details["odds_ratio"])))


@pytest.mark.parametrize("counts", [(400, 1000, 460, 1000), (3, 999, 0, 1001),
                                    (700, 1500, 640, 1500)])
def test_fisher_near_and_past_the_exact_limit(counts: tuple[int, int, int, int]) -> None:
    k_a, n_a, k_b, n_b = counts
    ref = float(fisher_exact([[k_a, k_b], [n_a - k_a, n_b - k_b]]).pvalue)
    got = fisher_exact_test(*counts).p_value
    if n_a + n_b > EXACT_LIMIT:
        assert got == ref
    else:
        assert got == pytest.approx(ref, rel=1e-12)


def test_the_exact_tests_load_neither_numpy_nor_scipy() -> None:
    code = ("import sys; from evalband.stats import fisher_exact_test, mcnemar; "
            "fisher_exact_test(9, 10, 3, 10); mcnemar(3, 11); mcnemar(4, 4, method='mid-p'); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
