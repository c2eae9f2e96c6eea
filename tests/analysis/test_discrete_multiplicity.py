"""The discrete Holm procedure: what exact tests can attain, its step-down, its error and power.

Oracles: scipy's binomial and hypergeometric distributions (the attainable p-values), a
brute-force step-down written here from them, and seeded Monte Carlo of the compare design
(family-wise false regression against 2.5%, power against Holm's on the same tables).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, hypergeom

from evalband.analysis._calibrate import _membership, simulate_tables
from evalband.analysis._compare import (
    PairTable,
    RunData,
    _row_from_table,
    aggregate_from_tables,
    decide_family,
)
from evalband.analysis._verdicts import DISCRETE_HOLM, HOLM
from evalband.panel import load_panel
from evalband.stats import holm
from evalband.stats._discrete import FisherNull, McNemarNull, _fisher_tails
from evalband.stats._procedure import unpaired_exact_p


def _mcnemar_values(m: int) -> list[float]:
    return [min(1.0, 2 * float(binom.cdf(k, m, 0.5))) for k in range(m // 2 + 1)]


def _fisher_values(n_a: int, n_b: int, total: int) -> list[float]:
    dist = hypergeom(n_a + n_b, n_a, total)  # the first arm's successes given the margins
    lo, hi = max(0, total - n_b), min(n_a, total)
    return [min(1.0, 2 * min(float(dist.cdf(x)), float(dist.sf(x - 1))))
            for x in range(lo, hi + 1)]


def _largest(values: list[float], t: float, slack: float = 1e-9) -> float:
    return max([v for v in values if v <= t * (1 + slack)], default=0.0)


def _between(got: float, values: list[float], t: float) -> bool:
    """``got`` is the largest value <= t, up to the last digits scipy and we may differ in."""
    low, high = _largest(values, t, -1e-9), _largest(values, t, 1e-9)
    return low * (1 - 1e-9) <= got <= high * (1 + 1e-9)


@given(st.integers(0, 60), st.floats(0.0, 1.0))
@settings(max_examples=80, deadline=None)
def test_mcnemar_attainable_values_are_the_binomials(m: int, t: float) -> None:
    assert _between(McNemarNull(m).at_most(t), _mcnemar_values(m), t)
    assert McNemarNull(m).at_most(t) <= t


@given(st.integers(1, 25), st.integers(1, 25), st.data())
@settings(max_examples=60, deadline=None)
def test_fisher_attainable_values_are_the_hypergeometrics(n_a: int, n_b: int, data) -> None:
    total = data.draw(st.integers(0, n_a + n_b))
    t = data.draw(st.floats(0.0, 1.0))
    assert _between(FisherNull(n_a, n_b, total).at_most(t), _fisher_values(n_a, n_b, total), t)
    # every table's value is the printed p, to the last bit
    lo = max(0, total - n_b)
    (values,) = _fisher_tails(n_a, n_b, total)
    assert list(values) == [unpaired_exact_p(lo + i, n_a, total - lo - i, n_b)
                            for i in range(len(values))]


PANEL = load_panel({"name": "d10", "env": "evalband/Coin-v0", "episodes": 50, "seed": 0,
                    "budget": {"steps": 1}, "factors": {"arm": [f"s{i}" for i in range(10)]}})
MEMBERS = _membership(PANEL)
CELLS = [c.key for c in PANEL.cells()]


def _decide(tables: dict[str, PairTable], procedure):  # type: ignore[no-untyped-def]
    rows = []
    for kind, name, keys in MEMBERS:
        t = PairTable()
        for k in keys:
            t = t + tables[k]
        rows.append(_row_from_table(kind, name, t, PANEL, confidence=0.95))
    base = RunData("b", "b", "sim", PANEL, [])
    (c,) = decide_family(base, [(base, False, rows, aggregate_from_tables(PANEL, tables))],
                         power_statements=False, procedure=procedure)
    return c


table = st.tuples(st.integers(0, 20), st.integers(0, 9), st.integers(0, 9), st.integers(0, 20))


@given(st.lists(table, min_size=10, max_size=10))
@settings(max_examples=40, deadline=None)
def test_the_step_down_is_the_brute_force_one_and_never_below_holm(cells) -> None:
    tables = {key: PairTable(both + b, both + b + c + n, both + c, both + b + c + n,
                             both, b, c, n)
              for key, (both, b, c, n) in zip(CELLS, cells, strict=True)}
    if any(t.n_baseline == 0 for t in tables.values()):
        return
    got = _decide(tables, DISCRETE_HOLM)
    ps = [r.p_value for r in got.slice_rows]
    ms = [r.pairs["candidate_only"] + r.pairs["baseline_only"] for r in got.slice_rows]
    order = sorted(range(10), key=ps.__getitem__)
    running, expected = 0.0, [0.0] * 10
    for rank, i in enumerate(order):
        spent = sum(_largest(_mcnemar_values(ms[j]), ps[i]) for j in order[rank:])
        running = max(running, min(1.0, spent))
        expected[i] = running
    adjusted = [r.p_holm for r in got.slice_rows]
    assert adjusted == pytest.approx(expected, rel=1e-9, abs=1e-300)
    by_holm = _decide(tables, HOLM)
    assert [r.p_holm for r in by_holm.slice_rows] == pytest.approx(list(holm(ps)))
    for mine, theirs in zip(got.slice_rows, by_holm.slice_rows, strict=True):
        assert mine.p_holm <= theirs.p_holm * (1 + 1e-12)  # never less power than Holm
        decided = mine.p_holm <= 0.05
        assert decided == (mine.p_value <= 1 - mine.level + 1e-15)  # the interval agrees
        assert decided == (mine.delta.low > 0 or mine.delta.high < 0)


def _rates(reps: int, drop: float, correlation: float, procedure, seed: int):  # type: ignore[no-untyped-def]
    sims = simulate_tables(PANEL, {c: 0.7 for c in CELLS}, {CELLS[0]: drop} if drop else {},
                           episodes={c: 50 for c in CELLS}, paired=True,
                           correlation=correlation, reps=reps,
                           rng=np.random.default_rng(seed))
    named = any_false = 0
    for tables in sims:
        rows = _decide(tables, procedure).slice_rows
        named += rows[0].verdict == "regressed"
        any_false += any(r.verdict == "regressed" for r in rows[1 if drop else 0:])
    return named / reps, any_false / reps


def test_more_power_than_holm_at_the_same_error_rate() -> None:
    """One slice 20 points down among 10 slices x 50 pairs (strongly paired): the discrete
    procedure names it more often than Holm on the same tables, and under identical
    policies it names a false regression no more often than 2.5% allows."""
    reps = 120
    holm_power, _ = _rates(reps, 0.2, 0.9, HOLM, seed=3)
    discrete_power, _ = _rates(reps, 0.2, 0.9, DISCRETE_HOLM, seed=3)
    assert discrete_power >= holm_power + 0.1, (holm_power, discrete_power)
    _, false_regression = _rates(200, 0.0, 0.0, DISCRETE_HOLM, seed=5)
    assert false_regression <= binom.ppf(0.995, 200, 0.025) / 200, false_regression


def test_a_p_value_that_underflows_to_zero_is_still_decided() -> None:
    """1,200 discordant pairs all one way: p underflows to 0.0, and the slice is regressed
    (it used to be read as p = 1 and called no change)."""
    tables = {key: PairTable(30, 60, 30, 60, 30, 0, 0, 30) for key in CELLS}
    tables[CELLS[0]] = PairTable(1230, 1260, 30, 1260, 30, 1200, 0, 30)
    row = _decide(tables, DISCRETE_HOLM).slice_rows[0]
    assert row.p_value == 0.0 and row.p_holm == 0.0
    assert row.verdict == "regressed" and row.delta.high < 0
