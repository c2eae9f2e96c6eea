"""The instrument's signal rules against brute-force oracles (hypothesis draws the signals)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalband.session._signals import (
    SettleTrigger,
    capture_due,
    closure,
    move_segments,
    stress_segments,
    suggest_score,
    suggestion_levels,
)


def oracle_fire(times: list[float], closed: list[bool], hold: float, flicker: float) -> int | None:
    """The first sample index at which the trigger must fire, by brute force.

    At a closed sample i, walk back over the samples: the closure began at the earliest
    closed sample reachable without crossing an opening (a maximal run of open samples) that
    lasted longer than ``flicker`` (from its first open sample to the closed sample after it).
    """
    for i, now in enumerate(closed):
        if not now:
            continue
        begin = i
        j = i - 1
        while j >= 0:
            if closed[j]:
                begin = j
                j -= 1
                continue
            k = j
            while k >= 0 and not closed[k]:
                k -= 1
            gap = times[j + 1] - times[k + 1]  # first open sample -> the closed one after
            if k < 0 or gap > flicker:
                break
            j = k
        if times[i] - times[begin] >= hold - 1e-9:
            return i
    return None


@settings(max_examples=300, deadline=None)
@given(
    closed=st.lists(st.booleans(), min_size=1, max_size=80),
    dt=st.sampled_from([1 / 30, 0.05, 0.1]),
    hold=st.sampled_from([0.2, 0.5, 1.0]),
    flicker=st.sampled_from([0.0, 0.1, 0.25]),
)
def test_the_settle_trigger_fires_exactly_when_the_oracle_says(
        closed: list[bool], dt: float, hold: float, flicker: float) -> None:
    times = [i * dt for i in range(len(closed))]
    trigger = SettleTrigger(hold, flicker)
    fired = next((i for i, (t, c) in enumerate(zip(times, closed, strict=True))
                  if trigger.update(t, c)), None)
    assert fired == oracle_fire(times, closed, hold, flicker)


def test_a_flicker_is_bridged_and_a_real_opening_restarts_the_closure() -> None:
    dt = 0.1
    flicker = [1] * 10 + [0] + [1] * 20  # one open sample: bridged
    opened = [1] * 10 + [0] * 4 + [1] * 30  # 0.4 s open: the closure starts again
    def fire(samples: list[int]) -> float:
        trig = SettleTrigger(2.5, 0.2)
        return next(i * dt for i, c in enumerate(samples) if trig.update(i * dt, bool(c)))
    assert fire(flicker) == pytest.approx(2.5)
    assert fire(opened) == pytest.approx(1.4 + 2.5)


def test_closure_and_capture_read_the_declared_source() -> None:
    commanded, measured = {"g": 20.0}, {"g": 80.0}
    assert closure("commanded", "g", 60, commanded, measured)
    assert not closure("measured", "g", 60, commanded, measured)
    assert closure("either", "g", 60, commanded, measured)
    assert not capture_due("commanded", None, None, commanded, measured)
    assert capture_due("commanded", "g", 90, commanded, measured)


def test_the_suggestion_reads_held_at_the_end_then_at_the_trigger() -> None:
    levels = suggestion_levels([0, 1, 2])
    assert levels == (2, 1, 0)
    assert suggest_score(37.0, 37.5, 34, levels) == 2
    assert suggest_score(37.0, 29.0, 34, levels) == 1  # acquired, lost in the stress
    assert suggest_score(20.0, 20.0, 34, levels) == 0
    assert suggest_score(None, 37.5, 34, levels) == 0  # never settled: never held
    assert suggest_score(37.0, 100.0, 34, levels, held_below=90) == 1  # jaws opened wide
    assert suggestion_levels([0, 1, 2], held=1) == (1, 1, 0)


def test_moves_are_rate_limited_and_stress_offsets_are_relative() -> None:
    (seg,) = move_segments({"a": 0.0, "b": 10.0}, {"a": 60.0, "b": 10.0}, 30.0)
    assert seg.duration_s == pytest.approx(2.0)
    assert seg.at(1.0) == {"a": 30.0, "b": 10.0}
    (slow,) = move_segments({"a": 0.0, "b": 0.0}, {"a": 10.0, "b": 10.0}, {"a": 5.0, "b": 50.0})
    assert slow.duration_s == pytest.approx(2.0)  # the slowest motor sets the pace
    segs = stress_segments({"lift": 5.0, "pan": 30.0},
                           [{"targets": {"lift": 80.0}, "move_s": 1.0, "hold_s": 4.0},
                            {"targets": {"pan": 12.0}, "move_s": 0.2},
                            {"targets": {"pan": 0.0}, "move_s": 0.2}], relative=True)
    assert [s.goal for s in segs] == [{"lift": 85.0, "pan": 30.0}, {"lift": 85.0, "pan": 30.0},
                                      {"lift": 85.0, "pan": 42.0}, {"lift": 85.0, "pan": 30.0}]
    assert [s.duration_s for s in segs] == [1.0, 4.0, 0.2, 0.2]
    absolute = stress_segments({"lift": 5.0}, [{"targets": {"lift": 80.0}}], relative=False)
    assert absolute[0].goal == {"lift": 80.0} and absolute[0].at(0.0) == {"lift": 80.0}
