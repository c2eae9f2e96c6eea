"""The instrument's rules on signals: the settled-grasp trigger, capture, the suggestion, motion.

Pure functions and small state machines over (time, value) samples, with no robot and no
clock of their own, so each is tested against a brute-force oracle:

* :class:`SettleTrigger`: fires once a signal has been "closed" for ``hold_s`` seconds
  without an opening longer than ``flicker_s`` (seed 004: "2.5 s of continuous closure,
  commanded or measured, flicker-tolerant — not on first contact");
* :func:`capture_due`: the machine's start-state capture rule;
* :func:`suggest_score`: the score the machine suggests from the measured signal at the
  trigger and after the stress;
* :func:`segments` / :func:`interpolate`: rate-limited, interpolated motion (the return
  home, the move to a captured pose) and the stress routine's waypoints as timed segments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Segment",
    "SettleTrigger",
    "capture_due",
    "closure",
    "interpolate",
    "move_segments",
    "stress_segments",
    "suggest_score",
    "suggestion_levels",
]


class SettleTrigger:
    """Fires after ``hold_s`` of closure in which no opening lasted longer than ``flicker_s``.

    Feed it samples in time order (:meth:`update`); it returns ``True`` from the first
    sample at which the closure has lasted ``hold_s`` (measured from the closed sample that
    began it) while closed. An opening (a run of open samples) of at most ``flicker_s``
    (from its first open sample to the next closed one) is bridged; a longer one ends the
    closure, and the next closed sample begins a new one.

    >>> trig = SettleTrigger(hold_s=1.0, flicker_s=0.1)
    >>> [trig.update(t / 10, closed) for t, closed in enumerate([1, 1, 0, 1] + [1] * 8)][-3:]
    [False, True, True]
    """

    def __init__(self, hold_s: float, flicker_s: float) -> None:
        self.hold_s = float(hold_s)
        self.flicker_s = float(flicker_s)
        self.start: float | None = None
        self.open_since: float | None = None
        self.fired_at: float | None = None

    def update(self, t: float, closed: bool) -> bool:
        """Take the sample ``(t, closed)``; whether the trigger has fired."""
        if self.fired_at is not None:
            return True
        if closed:
            if self.open_since is not None and t - self.open_since > self.flicker_s:
                self.start = None
            self.open_since = None
            if self.start is None:
                self.start = t
            if t - self.start >= self.hold_s - 1e-9:
                self.fired_at = t
                return True
            return False
        if self.start is not None:
            if self.open_since is None:
                self.open_since = t
            elif t - self.open_since > self.flicker_s:
                self.start, self.open_since = None, None
        return False

    @property
    def closed_for(self) -> float | None:
        """When the present closure began (``None`` when open)."""
        return self.start


def closure(source: str, signal: str, below: float, commanded: Mapping[str, float],
            measured: Mapping[str, Any]) -> bool:
    """Whether ``signal`` reads closed (below ``below``) on the declared source.

    >>> closure("either", "g", 60, {"g": 90.0}, {"g": 40.0})
    True
    >>> closure("commanded", "g", 60, {"g": 90.0}, {"g": 40.0})
    False
    """
    def low(values: Mapping[str, Any]) -> bool:
        value = values.get(signal)
        return value is not None and float(value) < below

    if source == "commanded":
        return low(commanded)
    if source == "measured":
        return low(measured)
    return low(commanded) or low(measured)


def capture_due(source: str, signal: str | None, below: float | None,
                commanded: Mapping[str, float], measured: Mapping[str, Any]) -> bool:
    """Whether the machine's capture rule says "now" (never without a rule).

    >>> capture_due("commanded", "g", 90.0, {"g": 85.0}, {"g": 99.0})
    True
    >>> capture_due("commanded", None, None, {"g": 85.0}, {})
    False
    """
    if signal is None or below is None:
        return False
    return closure(source, signal, below, commanded, measured)


def suggestion_levels(levels: Sequence[int], held: int | None = None, lost: int | None = None,
                      never: int | None = None) -> tuple[int, int, int]:
    """The rubric levels for held / acquired-but-lost / never held (top, middle, lowest).

    >>> suggestion_levels([0, 1, 2]), suggestion_levels([0, 1])
    ((2, 1, 0), (1, 0, 0))
    """
    ordered = sorted(int(v) for v in levels)
    middle = ordered[len(ordered) // 2] if len(ordered) >= 3 else ordered[0]
    return (ordered[-1] if held is None else int(held), middle if lost is None else int(lost),
            ordered[0] if never is None else int(never))


def suggest_score(at_trigger: float | None, at_end: float | None, held_above: float,
                  levels: tuple[int, int, int], held_below: float | None = None) -> int:
    """The suggested score: held at the end, else held at the trigger, else never held.

    ``at_trigger``: the measured signal when the trigger fired (``None``: it never fired, so
    nothing was ever held); ``at_end``: after the stress. "Held" is a reading above
    ``held_above`` (and below ``held_below``). Seed 004's reading of the gripper's width:
    jaws closed on the block stop at its width, empty jaws close past it.

    >>> suggest_score(37.5, 37.2, 34.0, (2, 1, 0)), suggest_score(37.5, 30.0, 34.0, (2, 1, 0))
    (2, 1)
    >>> suggest_score(None, 100.0, 34.0, (2, 1, 0))
    0
    """
    held, lost, never = levels

    def holding(value: float | None) -> bool:
        return value is not None and value > held_above and (
            held_below is None or value < held_below)

    if at_trigger is None:
        return never
    if holding(at_end):
        return held
    if holding(at_trigger):
        return lost
    return never


@dataclass(frozen=True)
class Segment:
    """A straight move from ``start`` to ``goal`` over ``duration_s`` (0: a jump, then hold).

    >>> Segment({"a": 0.0}, {"a": 10.0}, 2.0).at(0.5)
    {'a': 2.5}
    """

    start: dict[str, float]
    goal: dict[str, float]
    duration_s: float

    def at(self, elapsed: float) -> dict[str, float]:
        """The goal ``elapsed`` seconds into the segment."""
        return interpolate(self.start, self.goal, elapsed / self.duration_s
                           if self.duration_s > 0 else 1.0)


def interpolate(start: Mapping[str, float], goal: Mapping[str, float],
                fraction: float) -> dict[str, float]:
    """``start`` moved ``fraction`` (clipped to [0, 1]) of the way to ``goal``, per key.

    >>> interpolate({"a": 0.0, "b": 1.0}, {"a": 4.0}, 0.25)
    {'a': 1.0, 'b': 1.0}
    """
    f = min(max(float(fraction), 0.0), 1.0)
    return {k: v + (float(goal[k]) - v) * f if k in goal else v for k, v in start.items()}


def move_segments(start: Mapping[str, float], goal: Mapping[str, float],
                  speed: float | Mapping[str, float]) -> list[Segment]:
    """One rate-limited straight move: every motor arrives together, none faster than its speed.

    >>> [round(s.duration_s, 3) for s in move_segments({"a": 0.0, "b": 0.0},
    ...                                                 {"a": 30.0, "b": 6.0}, 60.0)]
    [0.5]
    """
    begin = {k: float(v) for k, v in start.items()}
    end = {**begin, **{k: float(v) for k, v in goal.items() if k in begin}}

    def limit(key: str) -> float:
        return float(speed[key]) if isinstance(speed, Mapping) and key in speed else (
            float(speed) if not isinstance(speed, Mapping) else math.inf)

    duration = max((abs(end[k] - begin[k]) / limit(k) for k in begin), default=0.0)
    return [Segment(begin, end, duration)]


def stress_segments(start: Mapping[str, float], waypoints: Sequence[Any],
                    relative: bool) -> list[Segment]:
    """The stress routine's waypoints as timed segments from the pose at the trigger.

    A waypoint's goals are offsets from ``start`` when ``relative`` (so every trial's stress
    is the same motion wherever its grasp happened), else absolute; motors a waypoint leaves
    out keep their goal; ``hold_s`` holds after the move.

    >>> segs = stress_segments({"lift": 10.0, "pan": 0.0},
    ...                        [{"targets": {"lift": 80.0}, "move_s": 1.0, "hold_s": 4.0}], True)
    >>> [(s.goal["lift"], s.duration_s) for s in segs]
    [(90.0, 1.0), (90.0, 4.0)]
    """
    pose = {k: float(v) for k, v in start.items()}
    out: list[Segment] = []
    for point in waypoints:
        data = point if isinstance(point, Mapping) else point.model_dump()
        goal = dict(pose)
        for key, value in dict(data.get("targets", {})).items():
            if key in pose:
                goal[key] = (float(start[key]) + float(value)) if relative else float(value)
        move_s, hold_s = float(data.get("move_s", 0.0)), float(data.get("hold_s", 0.0))
        out.append(Segment(pose, goal, move_s))
        if hold_s > 0:
            out.append(Segment(goal, goal, hold_s))
        pose = goal
    return out
