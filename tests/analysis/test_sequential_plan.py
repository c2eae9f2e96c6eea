"""The declared design of a sequential comparison, on the path the runs take.

Oracles: the anytime-valid test itself asked pair by pair (``sequential_paired_test``), the
binomial distribution of a count of false decisions (scipy), the design's exact power
(``operating_characteristics``), and seeded Monte Carlo of matched pairs drawn with a declared
correlation (``_joint``, the calibration's generator).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from evalband.analysis._calibrate import _joint
from evalband.analysis._sequential_plan import (
    ComparisonDesign,
    SliceDesign,
    comparison_design,
    conservative_discordance,
    decide_path,
)
from evalband.errors import InvalidParameterError
from evalband.stats._sequential import sequential_paired_test


def too_many(count: int, reps: int, rate: float) -> bool:
    """More false decisions than the 99.5% binomial quantile at the nominal rate."""
    return count > binom.ppf(0.995, reps, rate)


def stepwise(path: np.ndarray, sd: SliceDesign, alpha_side: float) -> tuple[str, int]:
    """The first decision of the test asked after every pair, and the pairs it took."""
    b = c = 0
    for t, x in enumerate(path[: sd.max_pairs], start=1):
        b += x == 1
        c += x == 2
        if b + c == 0:
            continue
        test = sequential_paired_test(b, c, alpha_side=alpha_side, theta=sd.theta,
                                      horizon=sd.max_discordant, futility=sd.futility)
        assert test.threshold == pytest.approx(sd.threshold)
        if test.decision != "continue":
            return test.decision, t
        if t == sd.max_pairs:
            return "futile", t
    return "continue", min(len(path), sd.max_pairs)


def test_decide_path_is_the_test_asked_after_every_pair() -> None:
    design = comparison_design({"a": 60}, effect=0.2, alpha=0.05, p_base=0.7)
    sd = design.slices["a"]
    rng = np.random.default_rng(1)
    seen = set()
    for probs in ((0.5, 0.35, 0.05, 0.1), (0.4, 0.2, 0.2, 0.2), (0.3, 0.05, 0.4, 0.25)):
        for _ in range(60):
            path = rng.choice(4, p=probs, size=int(rng.integers(1, 90))).astype(np.int8)
            decision, counts = decide_path(path, sd)
            want, pairs = stepwise(path, sd, design.alpha_side)
            assert decision == want
            assert sum(counts.values()) == pairs
            seen.add(decision)
    assert seen == {"regressed", "improved", "futile", "continue"}


def test_design_inputs_and_record_round_trip() -> None:
    d = comparison_design({"a": 120, "b": 80}, effect=0.1, alpha=0.05, p_base=0.83)
    assert d.p_base == 0.85  # rounded to a twentieth: the baseline enters coarsely
    assert d.discordant == pytest.approx(conservative_discordance(0.85, 0.1))
    assert d.alpha_side == pytest.approx(0.0125)
    assert d.slices["a"].max_pairs <= 120 and d.slices["b"].max_pairs <= 80
    assert all(s.max_discordant <= s.max_pairs for s in d.slices.values())
    assert ComparisonDesign.from_dict(d.as_dict()) == d
    declared = comparison_design({"a": 120}, effect=0.1, p_base=0.85, discordant=0.15)
    assert declared.discordant_source == "declared" and declared.discordant == 0.15
    with pytest.raises(InvalidParameterError) as err:
        comparison_design({"a": 120}, effect=0.1, p_base=0.85, discordant=0.05)
    assert err.value.parameters == ("discordant",)
    with pytest.raises(InvalidParameterError):
        comparison_design({}, effect=0.1)


def _false_decisions(slices: int, phi: float, rate: float, reps: int, n: int,
                     seed: int) -> tuple[int, int]:
    """Null runs through the runs' path: the design a run makes (the default, conservative
    discordance), every slice decided by ``decide_path``; (runs with a false regression, with
    any false verdict)."""
    rng = np.random.default_rng(seed)
    probs = np.asarray(_joint(rate, rate, phi))
    draws = rng.choice(4, p=probs / probs.sum(), size=(reps, slices, n))
    # _joint's order: both, baseline only, candidate only, neither -- decide_path's too
    names = [f"s{i}" for i in range(slices)]
    design = comparison_design(dict.fromkeys(names, n), effect=0.1, alpha=0.05)
    any_reg = any_false = 0
    for r in range(reps):
        decisions = [decide_path(draws[r, i].astype(np.int8), design.slices[name])[0]
                     for i, name in enumerate(names)]
        any_reg += "regressed" in decisions
        any_false += "regressed" in decisions or "improved" in decisions
    return any_reg, any_false


@pytest.mark.parametrize(("slices", "phi"), [(1, 0.0), (1, 0.8), (5, 0.5), (5, 0.0),
                                             (10, 0.8), (10, 0.5)])
def test_type_one_error_of_the_runs_path(slices: int, phi: float) -> None:
    """Looking after every pair (what a look at any chunk reads back), the family-wise false
    'regressed' rate stays within alpha / 2 and any false verdict within alpha."""
    reps = 1000
    reg, either = _false_decisions(slices, phi, 0.7, reps, 150, seed=slices * 10 + int(10 * phi))
    assert not too_many(reg, reps, 0.025), (reg, reps)
    assert not too_many(either, reps, 0.05), (either, reps)


def test_runs_path_reaches_the_designed_power() -> None:
    """At the design effect the decisions along the path reject as often as the design's exact
    power says (Monte Carlo within 4 standard errors), at the conservative discordance."""
    from evalband.stats._sequential_design import operating_characteristics

    design = comparison_design({"all": 200}, effect=0.2, alpha=0.05, p_base=0.8)
    sd = design.slices["all"]
    psi = design.discordant
    probs = (1.0 - psi, (psi + 0.2) / 2.0, (psi - 0.2) / 2.0)
    exact, mean, _ = operating_characteristics(sd.max_pairs, sd.max_discordant, sd.theta,
                                               design.alpha_side, sd.futility, probs)
    assert exact == pytest.approx(sd.power)
    rng = np.random.default_rng(4)
    reps = 500
    p4 = np.array([probs[0] / 2, probs[1], probs[2], probs[0] / 2])  # concordant: both/neither
    hits, pairs = 0, []
    for _ in range(reps):
        decision, counts = decide_path(rng.choice(4, p=p4, size=sd.max_pairs).astype(np.int8), sd)
        hits += decision == "regressed"
        pairs.append(sum(counts.values()))
    assert abs(hits / reps - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps)
    assert abs(float(np.mean(pairs)) - mean) <= 0.1 * mean


def test_single_slice_spends_most_of_its_alpha() -> None:
    """One slice, looks after every pair: the false-regression rate is near alpha / 2, not far
    below (a check that could fail if the path stopped too soon or the threshold were loose)."""
    reps = 3000
    reg, _ = _false_decisions(1, 0.0, 0.5, reps, 150, seed=8)
    assert reg >= binom.ppf(0.005, reps, 0.5 * 0.025)


@pytest.mark.parametrize(("p_base", "phi"), [(0.9, 0.0), (0.7, 0.5), (0.55, 0.8)])
def test_default_discordance_is_conservative_for_power(p_base: float, phi: float) -> None:
    """The default design assumes the most discordant pairs; at the design effect its exact
    power on the rig's real (less discordant) pairs is at least the power it reports."""
    from evalband.stats._sequential_design import operating_characteristics

    design = comparison_design({"all": 200}, effect=0.2, alpha=0.05)
    sd = design.slices["all"]
    _, bo, co, _ = _joint(p_base, p_base - 0.2, phi)
    assert bo + co < design.discordant
    power, _, _ = operating_characteristics(sd.max_pairs, sd.max_discordant, sd.theta,
                                            design.alpha_side, sd.futility,
                                            (1.0 - bo - co, bo, co))
    assert sd.power >= 0.8 and power >= sd.power - 1e-9
