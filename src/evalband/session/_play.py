"""Playing one trial on the robot: stage it, run the policy, stress, return home, keep it all.

:func:`stage_trial` brings the arm home and sets the scene up: a scene's **seeding rollout**
(no capture yet, or re-placement off) starts from home with the block where the scene has it;
a **re-placed** trial first moves the arm to the scene's captured pose (interpolated,
rate-limited) and then has the block put back where the capture saw it (a simulated robot
does it itself; on a real rig the operator aligns it under the ghost overlay). :func:`run_trial`
plays the policy phase at the instrument's rate (capturing the scene's start state during a
seeding rollout), the stress routine after a settled grasp, and the return home; then it
writes the clip and the step data to the media area and says what the machine suggests.
Everything either function raises leaves the caller to make the robot safe
(:class:`~evalband.session._machine.SessionMachine` disconnects it at once).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalband.session._control import (
    Capture,
    ControlLoop,
    PolicyPhase,
    timing_summary,
    timing_warning,
)
from evalband.session._instrument_spec import InstrumentSpec
from evalband.session._signals import (
    Segment,
    move_segments,
    stress_segments,
    suggest_score,
    suggestion_levels,
)

__all__ = ["PlayResult", "StagedTrial", "run_trial", "scene_seed", "stage_trial", "truth_score"]

HELD_MM = 10.0
"""A simulator's block this far above the table after the stress is held (the gripper alone
can hold it up there)."""

SETTLE_S = 0.5
"""The arm holds its goal this long after a move to a captured pose (servos settle)."""


def scene_seed(plan_seed: int, scene: int, stream: int = 0) -> int:
    """A seed for scene ``scene`` of a session (its layout; ``stream`` > 0: a trial's draws).

    >>> scene_seed(7, 1) == scene_seed(7, 1), scene_seed(7, 1) != scene_seed(7, 2)
    (True, True)
    """
    state = np.random.SeedSequence([int(plan_seed), int(scene), int(stream)])
    return int(state.generate_state(1, np.uint32)[0])


@dataclass
class StagedTrial:
    """A trial set up and ready to play.

    Attributes:
        start: ``"seeding"`` (from home; its rollout may capture the scene) or
            ``"replaced"`` (from the scene's captured pose, block re-placed).
        capture: the scene's stored capture (re-placed trials).
        instructions: what the operator must do before the policy starts (a real rig).
    """

    start: str
    capture: dict[str, Any] | None
    instructions: str | None


@dataclass
class PlayResult:
    """What a played trial left (stored as its attempt's result and the episode's ``play``)."""

    start: str
    end: str
    steps: int
    policy_s: float
    duration_s: float
    suggestion: int | None
    at_trigger: float | None
    at_end: float | None
    truth: int | None
    capture: Capture | None
    timing: dict[str, Any]
    warning: str | None
    stress_timing: dict[str, Any] = field(default_factory=dict)
    media: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the capture by how and when; its frames are in the scene's row)."""
        return {
            "start": self.start, "end": self.end, "steps": self.steps,
            "policy_s": round(self.policy_s, 4), "duration_s": round(self.duration_s, 4),
            "suggestion": self.suggestion, "at_trigger": self.at_trigger,
            "at_end": self.at_end, "truth": self.truth,
            "captured": None if self.capture is None else {"how": self.capture.how,
                                                           "t": round(self.capture.t, 4)},
            "timing": self.timing, "stress_timing": self.stress_timing, "warning": self.warning,
            "media": self.media,
        }


def truth_score(at_trigger: dict[str, Any] | None, at_end: dict[str, Any] | None,
                levels: tuple[int, int, int]) -> int | None:
    """The score a simulator's own state gives (``None`` without a simulator).

    >>> truth_score({"between_fingers": True, "block_height_mm": 0.0},
    ...             {"between_fingers": False, "block_height_mm": 0.0}, (2, 1, 0))
    1
    """
    if at_end is None:
        return None
    held, lost, never = levels
    if float(at_end.get("block_height_mm", 0.0)) > HELD_MM:
        return held
    if at_trigger is not None and at_trigger.get("between_fingers"):
        return lost
    return never


def _measured(loop: ControlLoop) -> dict[str, float]:
    if loop.last_obs is not None:
        return {k: float(loop.last_obs[k]) for k in loop.state_keys}
    return loop.observe()


def stage_trial(loop: ControlLoop, robot: Any, instrument: InstrumentSpec,
                home: dict[str, float], capture: dict[str, Any] | None, *, plan_seed: int,
                scene: int, stage_seed: int) -> StagedTrial:
    """Bring the arm home and set the scene up (see the module docstring)."""
    speed = instrument.home_speed
    loop.play(move_segments(_measured(loop), home, speed), "home")
    replaced = instrument.replace and capture is not None
    simulated = callable(getattr(robot, "stage_scene", None))
    if not replaced:
        if simulated:
            robot.stage_scene(scene_seed(plan_seed, scene))
        text = None if simulated else (f"place the block for scene {scene} (its seeding "
                                       "rollout starts from home)")
        return StagedTrial("seeding", None, text)
    assert capture is not None
    opened = dict(capture["pose"])
    loop.play([*move_segments(_measured(loop), opened, speed),
               Segment(opened, opened, SETTLE_S)], "stage")
    if simulated and capture.get("sim_state") is not None:
        robot.restore_scene(capture["sim_state"], stage_seed)
        loop.play([Segment(opened, opened, SETTLE_S)], "stage")  # the camera catches up
        return StagedTrial("replaced", capture, None)
    return StagedTrial("replaced", capture, (
        f"re-place the block for scene {scene} where the scene's captured reference frame "
        "shows it (the arm is at the captured pose), then start the trial"))


def run_trial(loop: ControlLoop, robot: Any, instrument: InstrumentSpec, staged: StagedTrial,
              act: Any, *, lerobot_style: bool, label: str, levels: list[int],
              home: dict[str, float], on_capture: Any = None) -> PlayResult:
    """Play a staged trial: policy phase, stress, return home (see the module docstring).

    ``on_capture(capture)`` is called the moment a seeding rollout's capture is taken (the
    caller stores it durably); the rollout goes on uninterrupted.
    """
    started = time.perf_counter()
    truth_of = getattr(robot, "truth", None)
    phase: PolicyPhase = loop.run_policy(
        act, lerobot_style=lerobot_style, time_limit_s=instrument.time_limit_s,
        trigger=instrument.trigger, capture=instrument.capture,
        capturing=staged.start == "seeding" and instrument.capture is not None)
    if phase.capture is not None and on_capture is not None:
        on_capture(phase.capture)
    truth_trigger = truth_of() if callable(truth_of) else None
    suggest = instrument.suggest
    stress_timing: dict[str, Any] = {}
    at_end: float | None = None
    if instrument.stress is not None and phase.end == "trigger":
        start = {**phase.last_obs, **phase.last_sent}
        after = loop.play(stress_segments(start, instrument.stress.waypoints,
                                          instrument.stress.relative), "stress")
        stress_timing = timing_summary(loop.log, loop.rate_hz, "stress")
        if suggest is not None:
            at_end = after.get(suggest.signal)
    elif suggest is not None:
        at_end = phase.last_obs.get(suggest.signal)
    truth_end = truth_of() if callable(truth_of) else None
    loop.play(move_segments(_measured(loop), home, instrument.home_speed), "home")
    rubric_levels = suggestion_levels(levels, *(
        (suggest.held, suggest.lost, suggest.never) if suggest is not None else ()))
    at_trigger = None
    if suggest is not None and (phase.end == "trigger" or instrument.trigger is None):
        at_trigger = (phase.at_trigger if instrument.trigger is not None
                      and instrument.trigger.signal == suggest.signal
                      else phase.last_obs.get(suggest.signal))
    suggestion = (suggest_score(at_trigger, at_end, suggest.held_above, rubric_levels,
                                suggest.held_below) if suggest is not None else None)
    timing = timing_summary(loop.log, loop.rate_hz, "policy")
    return PlayResult(
        start=staged.start, end=phase.end, steps=phase.steps, policy_s=phase.elapsed_s,
        duration_s=time.perf_counter() - started, suggestion=suggestion,
        at_trigger=None if at_trigger is None else round(float(at_trigger), 3),
        at_end=None if at_end is None else round(float(at_end), 3),
        truth=truth_score(truth_trigger, truth_end, rubric_levels),
        capture=phase.capture, timing=timing, warning=timing_warning(timing, label),
        stress_timing=stress_timing)
