"""compare --sequential: the printed interval, the printed log E and the verdict never disagree.

The audit (issue 31) found a "regressed" slice printing an upper bound of ``-0.0``: the
betting confidence sequence cut at 0 by hand while the sequence itself still held 0. The
interval is now :func:`evalband.stats.decided_sequence` (the set of differences a family of
sequential tests does not reject, one of them the slice's own test), checked here by
enumeration of every count of several designs against the printed words, and by seeded
simulation of its coverage at every look.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from scipy.stats import binom

from evalband.analysis._sequential import _SequentialSlice
from evalband.report import _format as fmt
from evalband.report._table import _log_parts
from evalband.stats import confidence_sequence, sequential_paired_test
from evalband.stats._sequential import decided_sequence

ALPHA_SIDE = 0.05 / 6  # three slices at a family-wise 0.05: alpha / (2 m) per direction
LEVEL = 1.0 - 2.0 * ALPHA_SIDE


def _printed_bounds(band: Any) -> tuple[str, str]:
    text = fmt.points(band)
    low, high = text[text.index("[") + 1:-1].split(", ")
    return low, high


def _below(text: str) -> bool:
    return text == "<0" or (text not in (">0",) and float(text) < 0)


def _above(text: str) -> bool:
    return text == ">0" or (text not in ("<0",) and float(text) > 0)


def test_a_regressed_slice_no_longer_prints_an_unsupported_minus_zero() -> None:
    """The audit's case first: 14 baseline-only pairs to 1 decide "regressed" (Ville's threshold).

    The old interval (the sequence at the slice's level, cut at 0 by hand) printed ``-0.0``
    while the sequence held 0; the interval now printed is valid at that level with the test.
    """
    both, b, c, neither = 100, 14, 1, 100
    test = sequential_paired_test(b, c, alpha_side=ALPHA_SIDE)
    assert test.decision == "regressed"
    sequence = confidence_sequence(both, b, c, neither, level=LEVEL)
    assert sequence.low < 0 <= sequence.high  # the sequence alone does not exclude 0
    assert f"{100 * -1e-9:+.1f}" == "-0.0"  # what the old cut, at -1e-9, printed
    row = SimpleNamespace(reasons=[], margin=None)
    new = _SequentialSlice(row, test, {"both": both, "baseline_only": b,  # type: ignore[arg-type]
                                       "candidate_only": c, "neither": neither}).interval_at(LEVEL)
    low, high = _printed_bounds(new)
    assert high == "<0" and "-0.0" not in fmt.points(new)
    # below 0 it is the sequence at 1 - alpha / (2 m): wider than the sequence at the level
    wider = confidence_sequence(both, b, c, neither, level=1.0 - ALPHA_SIDE)
    assert new.low == wider.low <= sequence.low and new.confidence == pytest.approx(LEVEL)


@pytest.mark.parametrize(("theta", "horizon"), [(0.75, None), (0.65, 24), (0.9, 12)])
def test_printed_interval_log_e_and_decision_agree_for_every_count(
        theta: float, horizon: int | None) -> None:
    cap = 24 if horizon is None else horizon
    decided = 0
    for b in range(cap + 1):
        for c in range(cap + 1 - b):
            for concordant in (0, 37):
                test = sequential_paired_test(b, c, alpha_side=ALPHA_SIDE, theta=theta,
                                              horizon=horizon)
                band = decided_sequence(concordant, b, c, concordant, decision=test.decision,
                                        level=LEVEL)
                low, high = _printed_bounds(band)
                reg, imp, boundary = _log_parts(SimpleNamespace(test=test))  # type: ignore[arg-type]
                regressed, improved = test.decision == "regressed", test.decision == "improved"
                assert _below(high) == regressed, (b, c, concordant, fmt.points(band))
                assert _above(low) == improved, (b, c, concordant, fmt.points(band))
                assert (band.high < 0) == regressed and (band.low > 0) == improved
                assert (float(reg) >= float(boundary)) == regressed, (b, c, reg, boundary)
                assert (float(imp) >= float(boundary)) == improved, (b, c, imp, boundary)
                assert band.low <= band.estimate <= band.high
                decided += regressed or improved
    assert decided > 20  # the enumeration reached decisions on both sides of the boundary


def _simulate_misses(probs: tuple[float, float, float], delta: float, *, reps: int, n: int,
                     horizon: int, seed: int) -> int:
    """Paths whose printed interval missed ``delta`` at some look (looks every 5 pairs).

    ``probs``: a pair is (baseline only, candidate only, concordant) with these
    probabilities. The test stops at its decision; the interval is read at every look.
    """
    rng = np.random.default_rng(seed)
    cache: dict[tuple[int, int, int, str], tuple[float, float]] = {}
    misses = 0
    kinds = rng.choice(3, p=list(probs), size=(reps, n))
    for path in kinds:
        b = c = seen = 0
        decision = "continue"
        missed = False
        for i, kind in enumerate(path, start=1):
            look = i % 5 == 0 or i == n
            if decision == "continue":  # the test stops at its decision; the counts with it
                b, c, seen = b + (kind == 0), c + (kind == 1), i
                if look:
                    decision = sequential_paired_test(
                        b, c, alpha_side=ALPHA_SIDE, theta=0.75, horizon=horizon).decision
            if look:
                key = (b, c, seen, decision)
                if key not in cache:
                    band = decided_sequence(seen - b - c, b, c, 0, decision=decision,
                                            level=LEVEL)
                    cache[key] = (band.low, band.high)
                low, high = cache[key]
                missed = missed or not low <= delta <= high
        misses += missed
    return misses


@pytest.mark.parametrize(("probs", "delta"), [
    ((0.15, 0.15, 0.7), 0.0),          # no difference: the test's own error goes here
    ((0.0, 0.04, 0.96), 0.04),         # one-directional: candidate-only pairs
    ((0.12, 0.0, 0.88), -0.12),        # one-directional: a real regression
])
def test_the_printed_interval_covers_at_every_look(probs: tuple[float, float, float],
                                                   delta: float) -> None:
    reps = 400
    misses = _simulate_misses(probs, delta, reps=reps, n=60, horizon=60, seed=31)
    # at most 1 - LEVEL (1.7%) of paths; the 99.9% binomial quantile of that
    assert misses <= binom.ppf(0.999, reps, 1.0 - LEVEL), misses
