"""Episode traces, recorded while episodes are played, so reports never replay a policy.

For the first :data:`TRACE_EPISODES` episodes of each cell (repeat 0: the same condition
seeds for every policy on a panel, so two runs' traces pair), the runner asks an env with a
trace hook (:class:`~evalband.envs._contract.Traces`, ``trace_point()``) where things are
after ``reset`` and after every step, and stores the series with the episode::

    extra["trace"] = {"t": [0.0, 0.2, ...], "x": [...], "v": [...]}

``t`` is sim time in seconds (the step count when the env gives no control period). A long
episode is decimated to at most :data:`MAX_POINTS` points (the first and the last kept) and
every number is rounded to :data:`DIGITS` significant digits (``null`` when not finite), so
a trace costs a few kilobytes at most. The same episodes are traced on every backend,
worker count and batch mode: the choice is a pure function of the episode's place in the
panel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalband.envs import Traces
from evalband.envs._contract import unwrapped
from evalband.episode import EpisodeSpec

__all__ = ["TRACE_EPISODES", "MAX_POINTS", "DIGITS", "TraceRecorder", "decimate", "start_trace",
           "traceable", "traces"]

TRACE_EPISODES = 8
"""Episodes traced per cell (episode indices ``0 .. TRACE_EPISODES - 1``, repeat 0)."""
MAX_POINTS = 200
"""Points kept per trace."""
DIGITS = 5
"""Significant digits kept per number."""


def traces(spec: EpisodeSpec, episodes: int = TRACE_EPISODES) -> bool:
    """Whether ``spec`` is one of the episodes whose trace is recorded.

    >>> traces(EpisodeSpec("c", 0, 0, 1)), traces(EpisodeSpec("c", 0, 1, 1))
    (True, False)
    >>> traces(EpisodeSpec("c", TRACE_EPISODES, 0, 1))
    False
    """
    return spec.repeat == 0 and 0 <= spec.episode < episodes


def decimate(n: int, limit: int = MAX_POINTS) -> list[int]:
    """Indices of ``limit`` points spread evenly over ``n`` (all of them when ``n <= limit``).

    >>> decimate(5, 3), decimate(3, 10)
    ([0, 2, 4], [0, 1, 2])
    """
    if n <= limit:
        return list(range(n))
    if limit < 2:
        return [n - 1][:limit]
    return [round(i * (n - 1) / (limit - 1)) for i in range(limit)]


def _rounded(value: float) -> float | None:
    """``value`` to :data:`DIGITS` significant digits; ``None`` (JSON ``null``) if not finite.

    >>> _rounded(1234567.0), _rounded(float("nan"))
    (1234600.0, None)
    """
    return float(f"{value:.{DIGITS}g}") if math.isfinite(value) else None


class TraceRecorder:
    """The growing trace of one episode: call :meth:`add` after ``reset`` and every step.

    >>> class Env:
    ...     x = 0.0
    ...     def trace_point(self):
    ...         return {"x": self.x}
    >>> env = Env()
    >>> rec = TraceRecorder(env, dt=0.5)
    >>> for steps in range(3):
    ...     env.x = steps / 3
    ...     rec.add(steps)
    >>> rec.extra()
    {'trace': {'t': [0.0, 0.5, 1.0], 'x': [0.0, 0.33333, 0.66667]}}
    """

    def __init__(self, env: Traces, dt: float | None) -> None:
        self.env = env
        self.dt = dt
        self.series: dict[str, list[float]] = {"t": []}
        self.broken = False

    def add(self, steps: int) -> None:
        """Record where things are after ``steps`` actions (a bad hook stops the trace)."""
        if self.broken:
            return
        try:
            point: Mapping[str, Any] = self.env.trace_point()
            values = {str(k): float(v) for k, v in point.items() if k != "t"}
        except Exception:  # noqa: BLE001 - a trace is an illustration; never fail the episode
            self.broken = True
            return
        if len(self.series) > 1 and values.keys() != self.series.keys() - {"t"}:
            self.broken = True  # the hook changed its names mid-episode: nothing to plot
            return
        self.series["t"].append(steps * self.dt if self.dt else float(steps))
        for key, value in values.items():
            self.series.setdefault(key, []).append(value)

    def extra(self) -> dict[str, Any]:
        """``{"trace": series}`` (decimated, rounded) for the record's ``extra``; or ``{}``."""
        if self.broken or len(self.series) < 2 or not self.series["t"]:
            return {}
        keep = decimate(len(self.series["t"]))
        return {"trace": {key: [_rounded(values[i]) for i in keep]
                          for key, values in self.series.items()}}


def traceable(env: Any) -> bool:
    """Whether the env (under its wrappers) has a trace hook.

    >>> from evalband.envs.reach1d import Reach1DEnv
    >>> traceable(Reach1DEnv()), traceable(object())
    (True, False)
    """
    return isinstance(unwrapped(env), Traces)


def start_trace(env: Any, spec: EpisodeSpec, dt: float | None,
                episodes: int = TRACE_EPISODES) -> TraceRecorder | None:
    """A recorder for ``spec`` when it is traced and the env has a trace hook, else ``None``.

    >>> start_trace(object(), EpisodeSpec("c", 0, 0, 1), 0.1) is None
    True
    """
    if not traces(spec, episodes) or not traceable(env):
        return None
    return TraceRecorder(unwrapped(env), dt)
