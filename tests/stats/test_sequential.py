"""Anytime-valid comparisons keep their error rates under continuous monitoring.

Oracles: the binomial distribution of a count of false decisions (scipy), brute-force
enumeration of every discordant sequence for the exact horizon threshold, and seeded Monte
Carlo of matched pairs drawn with a declared correlation (``_joint``, the calibration's
generator), looked at after every pair and after every chunk.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from evalband.analysis._calibrate import _joint
from evalband.errors import InvalidParameterError
from evalband.stats._sequential import (
    _critical,
    _log_capital,
    confidence_sequence,
    crossing_probability,
    log_likelihood_ratio,
    pair_in_order,
    sequential_paired_test,
    sequential_threshold,
)


def too_many(count: int, reps: int, rate: float) -> bool:
    """More false decisions than the 99.5% binomial quantile at the nominal rate."""
    return count > binom.ppf(0.995, reps, rate)


def brute_crossing(critical: np.ndarray, share: float) -> float:
    """P(cross) by enumerating all 2^M sequences of discordant pairs."""
    horizon = len(critical) - 1
    total = 0.0
    for seq in itertools.product((0, 1), repeat=horizon):
        k = np.cumsum(seq)
        if np.any(k >= critical[1:]):
            total += share ** sum(seq) * (1 - share) ** (horizon - sum(seq))
    return total


@pytest.mark.parametrize(("theta", "horizon", "share"), [(0.75, 10, 0.5), (0.6, 12, 0.5),
                                                       (0.9, 9, 0.7)])
def test_crossing_probability_matches_enumeration(theta: float, horizon: int,
                                                  share: float) -> None:
    crit = _critical(math.log(3.0), horizon, theta)
    assert crossing_probability(crit, share) == pytest.approx(brute_crossing(crit, share),
                                                              abs=1e-12)


@pytest.mark.parametrize("horizon", [8, 30, 120])
def test_horizon_threshold_is_exact_and_below_ville(horizon: int) -> None:
    alpha = 0.025
    c = sequential_threshold(alpha, horizon, 0.75)
    assert 1.0 <= c <= 1.0 / alpha
    p = crossing_probability(_critical(math.log(c), horizon, 0.75), 0.5)
    assert p <= alpha
    # a slightly lower threshold would spend more than alpha (the threshold is tight)
    if c > 1.0:
        looser = crossing_probability(_critical(math.log(c) - 0.05, horizon, 0.75), 0.5)
        assert looser > p


def _simulate_null(slices: int, n: int, phi: float, rate: float, reps: int, seed: int,
                   horizon: int | None, looks: int) -> tuple[int, int]:
    """Count runs with any false 'regressed' / any false decision at looks every ``looks``."""
    rng = np.random.default_rng(seed)
    alpha = 0.05
    side = alpha / (2 * slices)
    theta = 0.75
    log_t = math.log(sequential_threshold(side, horizon, theta))
    probs = np.asarray(_joint(rate, rate, phi))
    draws = rng.choice(4, p=probs / probs.sum(), size=(reps, slices, n))
    b = np.cumsum(draws == 1, axis=2)[:, :, looks - 1 :: looks]
    c = np.cumsum(draws == 2, axis=2)[:, :, looks - 1 :: looks]
    reg = log_likelihood_ratio(b, b + c, theta) >= log_t - 1e-12
    imp = log_likelihood_ratio(c, b + c, theta) >= log_t - 1e-12
    any_reg = reg.any(axis=(1, 2))
    any_either = (reg | imp).any(axis=(1, 2))
    return int(any_reg.sum()), int(any_either.sum())


@pytest.mark.parametrize("slices", [1, 5, 10])
@pytest.mark.parametrize("phi", [0.0, 0.5, 0.8])
@pytest.mark.parametrize("horizon", [None, 150])
def test_type_one_error_under_continuous_monitoring(slices: int, phi: float,
                                                    horizon: int | None) -> None:
    reps, n = 1500, 150
    for looks in (1, 10):  # after every pair, after every chunk of 10
        reg, either = _simulate_null(slices, n, phi, 0.7, reps, seed=slices * 100 + int(10 * phi),
                                     horizon=horizon, looks=looks)
        assert not too_many(reg, reps, 0.025), (reg, reps)
        assert not too_many(either, reps, 0.05), (either, reps)


def test_horizon_design_spends_its_alpha() -> None:
    """With the exact horizon threshold the false-regression rate is near alpha/2, not far below
    (the Ville threshold would waste most of it): a test that could fail if the DP were loose."""
    reps = 4000
    reg, _ = _simulate_null(1, 150, 0.0, 0.5, reps, seed=7, horizon=150, looks=1)
    assert reg >= binom.ppf(0.005, reps, 0.5 * 0.025)


def test_naive_peeking_would_fail_the_same_check() -> None:
    """The exact McNemar test at 5% looked at after every 10 pairs exceeds its level: the
    simulation is sharp enough to catch peeking."""
    from evalband.stats._procedure import paired_exact_p

    rng = np.random.default_rng(3)
    reps, n = 600, 150
    probs = np.asarray(_joint(0.6, 0.6, 0.0))
    draws = rng.choice(4, p=probs / probs.sum(), size=(reps, n))
    false = 0
    for r in range(reps):
        b = np.cumsum(draws[r] == 1)
        c = np.cumsum(draws[r] == 2)
        false += any(paired_exact_p(int(c[t]), int(b[t])) <= 0.05 for t in range(9, n, 10))
    assert too_many(false, reps, 0.05)


@pytest.mark.parametrize(("p_b", "p_c", "phi"), [(0.7, 0.6, 0.5), (0.5, 0.5, 0.0),
                                                 (0.8, 0.9, 0.8)])
def test_confidence_sequence_covers_uniformly_over_time(p_b: float, p_c: float,
                                                        phi: float) -> None:
    rng = np.random.default_rng(11)
    reps, n, level = 300, 200, 0.9
    probs = np.asarray(_joint(p_b, p_c, phi))
    delta = float(probs[2] - probs[1])  # candidate only - baseline only = p_c - p_b
    draws = rng.choice(4, p=probs / probs.sum(), size=(reps, n))
    b = np.cumsum(draws == 1, axis=1)
    c = np.cumsum(draws == 2, axis=1)
    caps = _log_capital(b, c, np.arange(1, n + 1)[None, :], np.array([delta]))[..., 0]
    assert caps.shape == (reps, n)
    misses = int((caps.max(axis=1) >= math.log(1.0 / (1.0 - level))).sum())
    assert not too_many(misses, reps, 1.0 - level)


def test_confidence_sequence_interval_contains_covered_delta() -> None:
    d = confidence_sequence(30, 12, 4, 20, level=0.95)
    assert d.low <= d.estimate <= d.high
    for delta in np.linspace(d.low + 0.01, d.high - 0.01, 7):
        assert _log_capital(12, 4, 66, np.array([delta]))[0] < math.log(20.0) + 1.0
    assert _log_capital(12, 4, 66, np.array([d.high + 0.02]))[0] >= math.log(20.0)
    wider = confidence_sequence(30, 12, 4, 20, level=0.99)
    assert wider.low <= d.low and wider.high >= d.high


def test_decisions_and_futility() -> None:
    assert sequential_paired_test(30, 2, alpha_side=0.025).decision == "regressed"
    assert sequential_paired_test(2, 30, alpha_side=0.025).decision == "improved"
    # futility needs a horizon: without one the test just continues
    assert sequential_paired_test(10, 10, alpha_side=0.025).decision == "continue"
    assert sequential_paired_test(10, 10, alpha_side=0.025, horizon=200).decision == "futile"
    with pytest.raises(InvalidParameterError):
        sequential_paired_test(-1, 0, alpha_side=0.025)
    with pytest.raises(InvalidParameterError):
        sequential_threshold(0.0, None, 0.75)


def test_pair_in_order_is_valid_under_the_null() -> None:
    """Unpaired fallback: independent arms paired in order give fair discordant coins."""
    rng = np.random.default_rng(5)
    reps, n, false = 800, 120, 0
    log_t = math.log(sequential_threshold(0.025, None, 0.75))
    for _ in range(reps):
        base = rng.random(n) < 0.4
        cand = rng.random(n + 7) < 0.4
        b = c = 0
        for x, y in zip(base, cand, strict=False):
            b += bool(x and not y)
            c += bool(y and not x)
            if log_likelihood_ratio(b, b + c, 0.75) >= log_t:
                false += 1
                break
    assert not too_many(false, reps, 0.025)
    counts = pair_in_order([True] * 3, [False] * 5)
    assert counts["baseline_only"] == 3 and sum(counts.values()) == 3


def _brute_operating(n: int, d: int, theta: float, side: float, futility: float,
                     probs: tuple[float, float, float]) -> tuple[float, float]:
    """(P(regressed), E[pairs]) by enumerating all 3^n pair sequences through the test."""
    decisions: dict[tuple[int, int], str] = {}  # the test's decision per (b, c), asked once
    rate = mean = 0.0
    for seq in itertools.product((0, 1, 2), repeat=n):
        prob = math.prod(probs[x] for x in seq)
        b = c = 0
        stop, regressed = n, False
        for t, x in enumerate(seq, start=1):
            b += x == 1
            c += x == 2
            if b + c == 0:
                continue
            if (b, c) not in decisions:
                decisions[b, c] = sequential_paired_test(
                    b, c, alpha_side=side, theta=theta, horizon=d, futility=futility).decision
            dec = decisions[b, c]
            if dec != "continue":
                stop, regressed = t, dec == "regressed"
                break
        rate += prob * regressed
        mean += prob * stop
    return rate, mean


@pytest.mark.parametrize(("n", "d", "theta", "futility"), [(8, 5, 0.8, 4.0), (9, 9, 0.7, 2.0)])
def test_operating_characteristics_match_enumeration(n: int, d: int, theta: float,
                                                     futility: float) -> None:
    """The design's exact power and expected pairs equal brute force over every sequence of
    pairs played through ``sequential_paired_test`` itself (with a loose level so it can reject)."""
    from evalband.stats._sequential_design import operating_characteristics

    probs = (0.5, 0.4, 0.1)
    rate, mean, _ = operating_characteristics(n, d, theta, 0.2, futility, probs)
    want_rate, want_mean = _brute_operating(n, d, theta, 0.2, futility, probs)
    assert rate == pytest.approx(want_rate, abs=1e-9)
    assert mean == pytest.approx(want_mean, abs=1e-9)
    assert 0.0 < rate < 1.0


def test_discordant_cap_stops_as_futile() -> None:
    assert sequential_paired_test(3, 2, alpha_side=0.025, horizon=5,
                                  futility=None).decision == "futile"
    assert sequential_paired_test(3, 1, alpha_side=0.025, horizon=5,
                                  futility=None).decision == "continue"


def test_sequential_design_against_fixed_n_and_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """The design's exact power reaches the target, Monte Carlo agrees with it, the expected
    pairs are below the fixed-n design's, and the null false-regression rate is within alpha/2."""
    import json

    from evalband.cli import main
    from evalband.stats._procedure import episodes_for_drop
    from evalband.stats._sequential_design import sequential_design

    reps = 2000
    d = sequential_design(0.8, 0.2, discordant=0.3, reps=reps, seed=3)
    assert d.n_fixed == episodes_for_drop(0.8, 0.2, 0.05, paired=True, discordant=0.3)
    assert d.power >= 0.8 and d.null_false_regression <= 0.025
    assert d.mc_power is not None and d.mc_expected_pairs is not None
    assert abs(d.mc_power - d.power) <= 4 * math.sqrt(0.16 / reps)
    assert abs(d.mc_expected_pairs - d.expected_pairs) <= 0.05 * d.expected_pairs
    assert d.mc_null_false_regression is not None
    assert not too_many(round(d.mc_null_false_regression * reps), reps, 0.025)
    assert d.expected_pairs < 0.75 * d.n_fixed  # saves pairs at the design effect
    assert d.max_discordant <= d.max_pairs
    with pytest.raises(InvalidParameterError):
        sequential_design(0.8, 0.2, discordant=0.1)
    code = main(["power", "--p-a", "0.6", "--p-b", "0.8", "--paired", "--discordant", "0.3",
                 "--sequential", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, None) and out["sequential"]["n_fixed"] == d.n_fixed
    assert out["sequential"]["max_pairs"] >= out["sequential"]["expected_pairs"]
    assert out["sequential"]["expected_pairs"] == pytest.approx(d.expected_pairs)
