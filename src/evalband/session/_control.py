"""A trial's real-time control loop: the policy at the robot's rate, the stress, the moves.

One loop, :class:`ControlLoop`, plays every phase of a trial at the instrument's rate
(``rate_hz``) on a :mod:`clock <evalband.session._clock>`: the policy phase (observe, act,
send, until the settled-grasp trigger or the time limit), the stress routine's waypoints,
and the interpolated, rate-limited moves (home, to a captured pose). Each step is logged
(:class:`StepLog`): the clock time, the phase, the measured motors, the goals actually sent,
the policy's compute time and the step's own (``time.perf_counter``), how late the step
started and whether it overran its period. A step that overruns does not make the next ones
hurry (no catch-up burst): the next period starts when the overrunning step ends, as
lerobot's record loop does. Between steps the loop asks for operator events (``"abort"``,
``"capture"``): an abort raises :class:`Aborted` before another action is sent.

The camera frames of the policy and stress phases stream into a clip (H.264, the runner's
encoder on a background thread) as they come, so a long trial on a big camera does not hold
its frames in memory; the step log's ``frame`` column indexes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalband.session._clock import Clock
from evalband.session._robot import as_action, camera_keys, policy_observation, state_keys
from evalband.session._signals import (
    Segment,
    SettleTrigger,
    capture_due,
    closure,
)

__all__ = [
    "Aborted",
    "Capture",
    "ControlLoop",
    "PolicyPhase",
    "StepLog",
    "timing_summary",
    "timing_warning",
]

CLIP_PHASES = ("policy", "stress")
"""Phases whose camera frames go into the trial's clip."""

MISS_SHARE = 0.05
"""A policy phase with more than this share of overrun steps draws the timing warning."""


class Aborted(Exception):  # noqa: N818 - an event, not an error
    """The operator aborted (or Ctrl-C): no further action was sent."""


@dataclass
class Capture:
    """A start-state capture: the pose and the last two observations (state and frames).

    Attributes:
        t: seconds into the trial.
        how: ``"rule"`` (the machine's capture rule) or ``"key"`` (the operator).
        pose: the measured motors at the capture.
        states: the last two observations' motors (older first).
        frames: the last two observations' camera frames (older first), per camera.
    """

    t: float
    how: str
    pose: dict[str, float]
    states: list[dict[str, float]]
    frames: list[dict[str, np.ndarray]]


@dataclass
class PolicyPhase:
    """How the policy phase ended.

    Attributes:
        end: ``"trigger"`` (the settled grasp) or ``"time limit"``.
        elapsed_s: its length on the clock.
        steps: control steps played.
        trigger_t: seconds into the trial when the trigger fired.
        at_trigger: the measured signal (the trigger's) when it fired.
        last_sent: the last goals sent (the stress starts from them).
        last_obs: the last observation's motors.
        capture: the start-state capture taken in it, if any.
    """

    end: str
    elapsed_s: float
    steps: int
    trigger_t: float | None
    at_trigger: float | None
    last_sent: dict[str, float]
    last_obs: dict[str, float]
    capture: Capture | None


@dataclass
class StepLog:
    """Every step of a trial, column by column (see the module docstring)."""

    obs_keys: tuple[str, ...]
    act_keys: tuple[str, ...]
    t: list[float] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)
    obs: dict[str, list[float]] = field(default_factory=dict)
    act: dict[str, list[float]] = field(default_factory=dict)
    policy_ms: list[float] = field(default_factory=list)
    loop_ms: list[float] = field(default_factory=list)
    late_ms: list[float] = field(default_factory=list)
    missed: list[bool] = field(default_factory=list)
    frame: list[int] = field(default_factory=list)
    frames: int = 0

    def __post_init__(self) -> None:
        self.obs = {k: [] for k in self.obs_keys}
        self.act = {k: [] for k in self.act_keys}

    def add(self, t: float, phase: str, obs: Mapping[str, Any], sent: Mapping[str, float],
            policy_ms: float, loop_ms: float, late_ms: float, missed: bool,
            frame: int) -> None:
        """Log one step (``sent``: goals of this step; motors it left out repeat the last)."""
        self.t.append(t)
        self.phase.append(phase)
        for key, column in self.obs.items():
            column.append(float(obs[key]) if key in obs else float("nan"))
        for key, column in self.act.items():
            value = sent.get(key)
            column.append(float(value) if value is not None
                          else (column[-1] if column else float("nan")))
        self.policy_ms.append(policy_ms)
        self.loop_ms.append(loop_ms)
        self.late_ms.append(late_ms)
        self.missed.append(missed)
        self.frame.append(frame)

    def __len__(self) -> int:
        return len(self.t)

    def columns(self) -> dict[str, np.ndarray]:
        """The log as named arrays (``obs.<key>``, ``action.<key>``, timing, ``frame``)."""
        out: dict[str, np.ndarray] = {
            "t": np.asarray(self.t, dtype=np.float64),
            "phase": np.asarray(self.phase, dtype=object),
        }
        out.update({f"obs.{k}": np.asarray(v, dtype=np.float64) for k, v in self.obs.items()})
        out.update({f"action.{k}": np.asarray(v, dtype=np.float64)
                    for k, v in self.act.items()})
        out["policy_ms"] = np.asarray(self.policy_ms, dtype=np.float64)
        out["loop_ms"] = np.asarray(self.loop_ms, dtype=np.float64)
        out["late_ms"] = np.asarray(self.late_ms, dtype=np.float64)
        out["missed"] = np.asarray(self.missed, dtype=bool)
        out["frame"] = np.asarray(self.frame, dtype=np.int64)
        return out

    def parquet(self) -> bytes:
        """The log as a Parquet file's bytes (the trial's step data in the store's media)."""
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = self.columns()
        table = pa.table({k: pa.array(v.tolist() if v.dtype == object else v)
                          for k, v in columns.items()})
        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd")
        return buffer.getvalue()


def timing_summary(log: StepLog, rate_hz: float, phase: str = "policy") -> dict[str, Any]:
    """A phase's timing: achieved rate, policy latency, loop overhead, deadline misses.

    >>> log = StepLog(("a",), ("a",))
    >>> for i in range(4):
    ...     log.add(i / 10, "policy", {"a": 0.0}, {"a": 0.0}, 2.0, 3.0, 0.0, False, i)
    >>> s = timing_summary(log, 10.0)
    >>> s["steps"], s["achieved_hz"], s["policy_ms_p50"], s["overhead_ms_p50"], s["missed"]
    (4, 10.0, 2.0, 1.0, 0)
    """
    idx = [i for i, p in enumerate(log.phase) if p == phase]
    if not idx:
        return {"phase": phase, "steps": 0, "rate_hz": rate_hz}
    t = np.asarray([log.t[i] for i in idx])
    policy = np.asarray([log.policy_ms[i] for i in idx])
    loop = np.asarray([log.loop_ms[i] for i in idx])
    missed = int(sum(log.missed[i] for i in idx))
    span = float(t[-1] - t[0])
    return {
        "phase": phase,
        "steps": len(idx),
        "rate_hz": float(rate_hz),
        "achieved_hz": round((len(idx) - 1) / span, 3) if span > 0 else None,
        "policy_ms_p50": round(float(np.percentile(policy, 50)), 3),
        "policy_ms_p95": round(float(np.percentile(policy, 95)), 3),
        "policy_ms_max": round(float(policy.max()), 3),
        "overhead_ms_p50": round(float(np.percentile(loop - policy, 50)), 3),
        "loop_ms_p95": round(float(np.percentile(loop, 95)), 3),
        "missed": missed,
        "late_ms_max": round(float(max(log.late_ms[i] for i in idx)), 3),
    }


def timing_warning(summary: Mapping[str, Any], label: str) -> str | None:
    """The warning when a policy cannot keep the rate (``None`` when it can).

    It fires when the policy's 95th-percentile compute exceeds the control period, or more
    than :data:`MISS_SHARE` of the steps overran their deadline.

    >>> timing_warning({"steps": 100, "rate_hz": 30.0, "policy_ms_p95": 50.0, "missed": 40},
    ...                "P-7K2")[:48]
    'policy P-7K2 cannot keep 30 Hz: 95% of its steps'
    """
    steps = int(summary.get("steps") or 0)
    if not steps:
        return None
    period_ms = 1000.0 / float(summary["rate_hz"])
    p95 = float(summary.get("policy_ms_p95") or 0.0)
    missed = int(summary.get("missed") or 0)
    if p95 <= period_ms and missed <= MISS_SHARE * steps:
        return None
    return (f"policy {label} cannot keep {float(summary['rate_hz']):g} Hz: 95% of its steps "
            f"took up to {p95:.1f} ms against a {period_ms:.1f} ms period, {missed} of {steps} "
            "deadlines missed; the robot ran on stale goals (the trial's timing is stored)")


class ControlLoop:
    """Plays a trial's phases on ``robot`` at ``rate_hz`` (see the module docstring).

    Args:
        robot: a connected robot (lerobot's interface).
        clock: the loop's clock.
        rate_hz: the control rate.
        events: returns the operator's pending events (drained), asked before each step.
        clip: receives each frame of the policy and stress phases (``add(frame)``), or
            ``None`` to keep no clip.
    """

    def __init__(self, robot: Any, clock: Clock, rate_hz: float,
                 events: Callable[[], Sequence[str]] | None = None, clip: Any = None) -> None:
        self.robot = robot
        self.clock = clock
        self.rate_hz = float(rate_hz)
        self.period = 1.0 / self.rate_hz
        self.events = events or (lambda: ())
        self.clip = clip
        features = robot.observation_features
        self.features = dict(features)
        self.state_keys = state_keys(features)
        self.cameras = camera_keys(features)
        self.action_keys = tuple(robot.action_features)
        self.log = StepLog(self.state_keys, self.action_keys)
        self.t0 = clock.now()
        self._deadline = self.t0
        self.last_obs: dict[str, Any] | None = None
        self.pending: list[str] = []

    # -- one step ------------------------------------------------------------------------

    def _events(self) -> None:
        for event in self.events():
            if event == "abort":
                raise Aborted("aborted by the operator")
            self.pending.append(event)

    def _step(self, phase: str, decide: Callable[[dict[str, Any]], dict[str, float]],
              ) -> tuple[dict[str, Any], dict[str, float], float]:
        """Wait for the deadline, observe, decide, send; log it. ``(obs, sent, policy_ms)``."""
        self._events()
        self.clock.sleep_until(self._deadline)
        start = time.perf_counter()
        now = self.clock.now()
        late_ms = max(0.0, (now - self._deadline) * 1000.0)
        obs = self.robot.get_observation()
        self.last_obs = obs
        before = time.perf_counter()
        goals = decide(obs)
        policy_ms = (time.perf_counter() - before) * 1000.0
        self._events()  # an abort while the policy thought: nothing more is sent
        sent = self.robot.send_action(goals)
        frame = -1
        if self.clip is not None and phase in CLIP_PHASES and self.cameras:
            self.clip.add(_owned(obs[self.cameras[0]]))
            frame = self.log.frames
            self.log.frames += 1
        loop_ms = (time.perf_counter() - start) * 1000.0
        next_deadline = self._deadline + self.period
        if self.clock.realtime:  # the step ended after the next period began
            missed = self.clock.now() > next_deadline + 1e-6
        else:  # a simulated robot's own compute is not the robot's time: the policy's is
            missed = policy_ms > self.period * 1000.0
        self._deadline = max(next_deadline, self.clock.now())
        self.log.add(now - self.t0, phase, obs, sent or goals, policy_ms, loop_ms, late_ms,
                     missed, frame)
        return obs, dict(sent or goals), policy_ms

    # -- phases --------------------------------------------------------------------------

    def run_policy(self, act: Callable[[Any], Any], *, lerobot_style: bool,
                   time_limit_s: float, trigger: Any = None, capture: Any = None,
                   capturing: bool = False) -> PolicyPhase:
        """Play the policy until the trigger fires or the time limit (see :class:`PolicyPhase`).

        ``capture`` (a ``CaptureSpec``) with ``capturing``: this is a seeding rollout; the
        first step its rule holds (or the operator's ``"capture"`` event) takes the capture.
        """
        settle = (SettleTrigger(trigger.hold_s, trigger.flicker_s)
                  if trigger is not None else None)
        start = self.clock.now()
        states: list[dict[str, float]] = []
        frames: list[dict[str, np.ndarray]] = []
        taken: Capture | None = None
        last_sent: dict[str, float] = {}
        steps = 0
        trigger_t: float | None = None
        at_trigger: float | None = None

        def decide(obs: dict[str, Any]) -> dict[str, float]:
            action = act(policy_observation(obs, self.features, lerobot_style))
            return as_action(action, self.action_keys)

        while True:
            obs, sent, _ = self._step("policy", decide)
            steps += 1
            t = self.clock.now() - self.t0
            last_sent = {**last_sent, **sent}
            measured = {k: float(obs[k]) for k in self.state_keys}
            if capturing and taken is None:
                states = [*states[-1:], measured]
                frames = [*frames[-1:], {k: _owned(obs[k]) for k in self.cameras}]
                how = None
                if "capture" in self.pending:
                    how = "key"
                elif capture is not None and capture_due(capture.source, capture.signal,
                                                         capture.below, last_sent, measured):
                    how = "rule"
                if how is not None:
                    taken = Capture(t=t, how=how, pose=measured, states=list(states),
                                    frames=list(frames))
            self.pending = [e for e in self.pending if e != "capture"]
            if settle is not None and settle.update(t, closure(
                    trigger.source, trigger.signal, trigger.closed_below, last_sent, measured)):
                trigger_t = t
                at_trigger = measured.get(trigger.signal)
                end = "trigger"
                break
            if self.clock.now() - start >= time_limit_s - 1e-9:
                end = "time limit"
                break
        return PolicyPhase(end=end, elapsed_s=self.clock.now() - start, steps=steps,
                           trigger_t=trigger_t, at_trigger=at_trigger, last_sent=last_sent,
                           last_obs={k: float(v) for k, v in measured.items()}, capture=taken)

    def play(self, segments: Sequence[Segment], phase: str) -> dict[str, float]:
        """Play timed segments of goals (stress waypoints, a move); the last measured motors."""
        measured: dict[str, float] = {}
        for segment in segments:
            begin = self.clock.now()
            while True:
                elapsed = self.clock.now() - begin + (self.period if segment.duration_s else 0.0)
                goals = segment.at(min(elapsed, segment.duration_s))
                obs, _, _ = self._step(phase, _constant(goals))
                measured = {k: float(obs[k]) for k in self.state_keys}
                if elapsed >= segment.duration_s - 1e-9:
                    break
        return measured

    def observe(self) -> dict[str, float]:
        """The robot's measured motors now (no action sent)."""
        obs = self.robot.get_observation()
        self.last_obs = obs
        return {k: float(obs[k]) for k in self.state_keys}


def _constant(goals: dict[str, float]) -> Callable[[dict[str, Any]], dict[str, float]]:
    def decide(obs: dict[str, Any]) -> dict[str, float]:
        return goals
    return decide


def _owned(frame: Any) -> np.ndarray:
    """A frame the robot will not write to again (copied unless it owns its memory)."""
    image = np.asarray(frame)
    return image if image.flags.owndata else image.copy()
