"""The clocks a trial's control loop runs on: the real one, and a virtual one for rehearsals.

The loop asks a clock for the time (``now``) and waits for the next control deadline
(``sleep_until``). :class:`RealClock` is the machine's monotonic clock: the loop holds the
robot's rate in real time (what a real arm needs, and what ``bench/bench_control_loop.py``
measures). :class:`VirtualClock` only moves when the loop waits: a simulated robot that
follows it (``sim-arm`` steps its physics to the clock's present) plays a whole session
faster than real time with the same physics, so tests and rehearsals do not wait for it.
The time a policy takes to compute is measured on the machine's clock either way
(``time.perf_counter``), so a policy too slow for the rate is reported under both.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "RealClock", "VirtualClock", "make_clock"]


@runtime_checkable
class Clock(Protocol):
    """What the control loop needs of a clock."""

    realtime: bool

    def now(self) -> float:
        """Seconds on this clock."""

    def sleep_until(self, deadline: float) -> None:
        """Return at ``deadline`` (at once when it has passed)."""


class RealClock:
    """The machine's monotonic clock; ``sleep_until`` sleeps.

    >>> clock = RealClock()
    >>> t = clock.now(); clock.sleep_until(t + 0.001); clock.now() >= t + 0.001
    True
    """

    realtime = True

    def now(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def sleep_until(self, deadline: float) -> None:
        """Sleep until ``deadline``; the last half millisecond is spun for precision."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if left > 0.0015:
                time.sleep(left - 0.001)
            elif left > 0.0005:
                time.sleep(0)


class VirtualClock:
    """A clock that only moves when the loop waits: faster than real time.

    >>> clock = VirtualClock()
    >>> clock.sleep_until(2.5); clock.now()
    2.5
    >>> clock.sleep_until(1.0); clock.now()  # never backwards
    2.5
    """

    realtime = False

    def __init__(self, start: float = 0.0) -> None:
        self._t = float(start)

    def now(self) -> float:
        """The virtual present."""
        return self._t

    def sleep_until(self, deadline: float) -> None:
        """Jump to ``deadline`` (no waiting)."""
        self._t = max(self._t, float(deadline))

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds`` (an operator's pause, in tests)."""
        self._t += max(0.0, float(seconds))


def make_clock(kind: str) -> Clock:
    """``"real"`` or ``"virtual"``.

    Raises:
        ValueError: another name.

    >>> make_clock("virtual").realtime
    False
    """
    if kind == "real":
        return RealClock()
    if kind == "virtual":
        return VirtualClock()
    raise ValueError(f"a clock is 'real' or 'virtual'; got {kind!r}")
