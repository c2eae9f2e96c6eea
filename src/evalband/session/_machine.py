"""The robot session's trial state machine: one object that a terminal or a browser drives.

:class:`SessionMachine` holds a robot session's state and does its work: connect the robot,
load and warm up the policies, stage each trial, play it, take the operator's verdict and
store it; it does no terminal or network I/O. The terminal (``session/_robot_tui.py``) and the
browser console drive the same object through its events, and read its state
(:attr:`SessionMachine.state`, a frozen :class:`MachineState`; ``as_dict()`` is JSON and never
names a policy of a blinded session).

Phases and events (``docs`` and NOTES: the console's contract)::

    idle ──stage()──> staging ──> ready ──run()──> running ──> stress ──> returning ──> scoring
     ^                                               │capture()                          │
     │                                               │abort() (any moving phase)         │score(k)
     │                                               v                                   │confirm()
     └──────────── next trial <──── confirm() / skip() / accept_suggestion() ────────────┘
                                      aborted ──stage()──> (replay) ; skip() records it skipped

* ``next()`` does the next step of the present phase (idle: stage; ready: run);
* ``capture()`` (a seeding rollout: the operator's key) and ``abort()`` may come from any
  thread while a trial runs (the loop takes them before its next step); ``abort()`` stops
  sending actions at once, disconnects the robot (lerobot's ``disconnect``: torque off) and
  leaves the trial pending: phase ``aborted``, the play stored as ``aborted``; a policy or
  robot exception does the same (stored ``failed`` with the error);
* ``score(k)`` chooses a score (``override(k)``: choose and confirm), ``confirm()`` stores it,
  durable before it returns (the next trial is shown only after); ``accept_suggestion()``
  confirms the machine's suggestion as a rehearsal's (``operator="suggested"``); ``skip()``,
  ``assist()``, ``note(text)``; ``undo()`` deletes the last confirmed trial and shows it for
  scoring again (its play is kept: nothing is replayed);
* ``latest_frame()``, ``reference_frame()`` give the camera's latest frame and the scene's
  captured reference (the ghost overlay's two images).

A session killed at any moment resumes with :meth:`SessionMachine.start`: plays found
``running`` are marked ``interrupted`` and replayed, a played but unscored trial goes straight
to scoring, and every confirmed trial is in the store exactly once.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from evalband.errors import InvalidInputError, RobotError
from evalband.session._attempts import AttemptLog, load_frame
from evalband.session._clock import Clock
from evalband.session._control import Aborted, Capture, ControlLoop
from evalband.session._instrument_spec import InstrumentSpec, load_instrument
from evalband.session._plan import SessionPlan, Trial
from evalband.session._play import PlayResult, StagedTrial, run_trial, scene_seed, stage_trial
from evalband.session._robot import camera_keys, connect_robot, is_simulated, state_keys
from evalband.session._store import SessionStore, TrialRecord

__all__ = ["MachineState", "OPERATORS", "Phase", "SessionMachine"]

OPERATORS = ("human", "suggested")
"""Who scores: a person, or a rehearsal accepting the machine's suggestions."""


class Phase(StrEnum):
    """Where a robot session stands."""

    IDLE = "idle"
    STAGING = "staging"
    READY = "ready"
    RUNNING = "running"
    STRESS = "stress"
    RETURNING = "returning"
    SCORING = "scoring"
    ABORTED = "aborted"
    FINISHED = "finished"


MOVING = (Phase.STAGING, Phase.RUNNING, Phase.STRESS, Phase.RETURNING)


@dataclass(frozen=True)
class MachineState:
    """A snapshot of a robot session (what a screen shows).

    Attributes:
        session_id: the session.
        phase: the :class:`Phase`.
        trial: the present trial's index (``None`` when finished).
        scene: its scene; ``attempt``: its attempt; ``label``: its policy's label (the blind
            code when blinded).
        start: ``"seeding"`` or ``"replaced"`` once staged.
        captured: whether the scene has its start-state capture.
        suggestion: the machine's suggested score (scoring).
        chosen: the score chosen, not yet confirmed.
        assisted, note: the operator's flags for this trial.
        counts: trials per status (``pending``, ``scored``, ``skipped``, ``total``).
        message: what the operator should do now (or what just happened).
        warnings: timing warnings of this run, newest last.
        last: the last confirmed trial in words.
        end: how the play ended (``trigger``, ``time limit``), when played.
    """

    session_id: str
    phase: Phase
    trial: int | None
    scene: int | None
    attempt: int | None
    label: str | None
    start: str | None
    captured: bool
    suggestion: int | None
    chosen: int | None
    assisted: bool
    note: str | None
    counts: dict[str, int]
    message: str
    warnings: tuple[str, ...]
    last: str | None
    end: str | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (labels only: a blinded session's names never appear)."""
        return {**{k: getattr(self, k) for k in self.__dataclass_fields__},
                "phase": self.phase.value, "warnings": list(self.warnings)}


@dataclass
class _Trial:
    """The present trial's working state."""

    trial: Trial
    start: str | None = None
    staged: StagedTrial | None = None
    attempt_id: str | None = None
    result: dict[str, Any] | None = None
    chosen: int | None = None
    assisted: bool = False
    note: str | None = None
    end: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class SessionMachine:
    """A robot session's trial state machine (see the module docstring).

    Args:
        store: a writable :class:`~evalband.session.SessionStore`.
        session_id: the session.
        robot: the robot (lerobot's interface; connected by :meth:`start`).
        robot_spec: its spec as trials record it (``sim-arm``, ``lerobot:so101_follower``).
        clock: the control loop's clock (a virtual clock only with a simulated robot).
        operator: ``"human"`` or ``"suggested"`` (a rehearsal that accepts every suggestion).
        policies: policy name -> policy (anything :func:`evalband.policies.as_runtime`
            takes); by default each is resolved from the plan's spec.
    """

    def __init__(self, store: SessionStore, session_id: str, robot: Any, *, robot_spec: str,
                 clock: Clock, operator: str = "human",
                 policies: Mapping[str, Any] | None = None) -> None:
        if operator not in OPERATORS:
            raise InvalidInputError(f"`operator` must be one of {', '.join(OPERATORS)}; got "
                                    f"{operator!r}", parameters=("operator",))
        self.store = store
        self.session_id = session_id
        self.plan: SessionPlan = store.plan(session_id)
        self.instrument: InstrumentSpec = load_instrument(self.plan.instrument)
        self.robot = robot
        self.robot_spec = robot_spec
        self.clock = clock
        self.operator = operator
        self.log = AttemptLog(store)
        self._given = dict(policies) if policies is not None else None
        self._runtimes: dict[str, Any] = {}
        self.warmup_ms: dict[str, float] = {}
        self._lock = threading.RLock()
        self._events: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._phase = Phase.IDLE
        self._now: _Trial | None = None
        self._message = ""
        self._warnings: list[str] = []
        self._last: str | None = None
        self._loop: ControlLoop | None = None
        self._home: dict[str, float] = {}
        self._focus: int | None = None
        self._started = False
        self._check()

    # -- set-up --------------------------------------------------------------------------

    def _check(self) -> None:
        inst = self.instrument
        if not self.clock.realtime and not is_simulated(self.robot):
            raise InvalidInputError(
                f"a virtual clock runs a simulated robot faster than real time; "
                f"{self.robot_spec} is a real robot: use the real clock")
        if self.operator == "suggested":
            if inst.suggest is None:
                raise InvalidInputError(
                    "`operator` suggested accepts the machine's score suggestions, and the "
                    "plan's instrument has no 'suggest' rule; add one (suggest: {signal: ..., "
                    "held_above: ...}) or score as a human", parameters=("operator",))
            if inst.capture is not None and inst.capture.signal is None:
                raise InvalidInputError(
                    "`operator` suggested has no operator to press the capture key; give "
                    "the instrument's capture a rule (signal and below)",
                    parameters=("operator",))

    def start(self) -> MachineState:
        """Connect the robot, load and warm up the policies, find where the session stands.

        Raises:
            RobotError: the robot cannot connect (one line; nothing stored).
            PolicyNotFoundError: a policy spec that does not resolve.
        """
        stale = self.log.interrupt_stale(self.session_id)
        connect_robot(self.robot, self.robot_spec)
        home = getattr(self.robot, "home_pose", None)
        measured = self._observe_state()
        self._home = {**measured, **(dict(home) if home else {}),
                      **(self.instrument.home or {})}
        self._load_policies()
        self._started = True
        self._message = "ready"
        self._position()
        if stale:
            self._message = (f"{len(stale)} play(s) stopped by the end of the last run are "
                             f"played again; {self._message}")
        return self.state

    def _observe_state(self) -> dict[str, float]:
        obs = self.robot.get_observation()
        return {k: float(obs[k]) for k in state_keys(self.robot.observation_features)}

    def _load_policies(self) -> None:
        from evalband.errors import EvalbandError
        from evalband.policies import EpisodeContext, resolve_policy
        from evalband.policies._runtime import as_runtime

        for policy in self.plan.policies:
            if policy in self._runtimes:
                continue
            label = self.plan.label(policy)
            spec = self.plan.spec(policy)
            try:
                obj = self._given[policy] if self._given is not None else resolve_policy(spec)
                runtime = as_runtime(obj)
                runtime.setup()
            except EvalbandError as exc:
                raise type(exc)(self._coded(str(exc), policy)) from None
            self._runtimes[policy] = runtime
            if not self.instrument.warmup:
                continue
            obs = self.robot.get_observation()
            context = EpisodeContext(run_id=f"{self.session_id}:warmup", policy=label,
                                     cell="warmup", slices={}, episode=0, repeat=0,
                                     condition_seed=0, seed=0, task=self.instrument.task)
            t0 = time.perf_counter()
            try:
                runtime.reset(context)
                runtime.act(self._policy_obs(obs, policy))
            except Exception as exc:  # noqa: BLE001 - one line naming the label only
                raise RobotError(self._coded(
                    f"policy {label} failed its warm-up call on the robot's observation: "
                    f"{type(exc).__name__}: {exc}", policy)) from None
            self.warmup_ms[label] = round((time.perf_counter() - t0) * 1000.0, 3)

    def _coded(self, text: str, policy: str) -> str:
        """``text`` with the policy's name and spec replaced by its label (blinded)."""
        if not self.plan.blind:
            return text
        label = self.plan.label(policy)
        for secret in sorted({policy, self.plan.spec(policy)}, key=len, reverse=True):
            if len(secret) >= 2:
                text = text.replace(secret, label)
        return text

    def _lerobot(self, policy: str) -> bool:
        return self.plan.spec(policy).startswith("lerobot:")

    def _policy_obs(self, obs: Mapping[str, Any], policy: str) -> Any:
        from evalband.session._robot import policy_observation

        return policy_observation(obs, self.robot.observation_features, self._lerobot(policy))

    # -- state ---------------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        """The present phase."""
        return self._phase

    @property
    def state(self) -> MachineState:
        """A snapshot of the session (see :class:`MachineState`)."""
        with self._lock:
            now = self._now
            trial = None if now is None else now.trial
            result = None if now is None else now.result
            return MachineState(
                session_id=self.session_id, phase=self._phase,
                trial=None if trial is None else trial.index,
                scene=None if trial is None else trial.scene,
                attempt=None if trial is None else trial.attempt,
                label=None if trial is None else self.plan.label(trial.policy),
                start=None if now is None else now.start,
                captured=trial is not None and self.log.capture(
                    self.session_id, trial.scene) is not None,
                suggestion=None if result is None else result.get("suggestion"),
                chosen=None if now is None else now.chosen,
                assisted=bool(now and now.assisted), note=None if now is None else now.note,
                counts=self.store.counts(self.session_id), message=self._message,
                warnings=tuple(self._warnings), last=self._last,
                end=None if now is None else now.end,
            )

    def _position(self) -> None:
        """Go to the first pending trial (or the focused one): scoring if it was played."""
        index = self._focus if self._focus is not None else self.store.next_pending(
            self.session_id)
        self._focus = None
        if index is None:
            self._now, self._phase = None, Phase.FINISHED
            self._message = "every trial is recorded"
            return
        trial = self.plan.trials[index]
        self._now = _Trial(trial)
        played = self.log.played(self.session_id, index)
        if played is not None:  # played, never confirmed (or undone): score it, no replay
            self._now.attempt_id = played.attempt_id
            self._now.result = played.result
            self._now.start = played.result.get("start")
            self._now.end = played.result.get("end")
            self._phase = Phase.SCORING
            self._message = "played before the session stopped: score it"
        else:
            self._phase = Phase.IDLE

    # -- camera --------------------------------------------------------------------------

    def latest_frame(self) -> np.ndarray | None:
        """The first camera's latest frame (read from the robot when no trial is playing)."""
        cameras = camera_keys(self.robot.observation_features)
        if not cameras:
            return None
        loop = self._loop
        if self._phase in MOVING and loop is not None and loop.last_obs is not None:
            return np.asarray(loop.last_obs[cameras[0]])
        with self._lock:
            if not getattr(self.robot, "is_connected", False):
                return None
            return np.asarray(self.robot.get_observation()[cameras[0]])

    def reference_path(self, scene: int | None = None) -> Any:
        """The file of the scene's captured reference frame (a PNG in the media area)."""
        from evalband.store._media import media_file

        if scene is None:
            scene = None if self._now is None else self._now.trial.scene
        capture = None if scene is None else self.log.capture(self.session_id, scene)
        if not capture or not capture.get("frames") or not capture["frames"][-1]:
            return None
        return media_file(self.store.path, next(iter(capture["frames"][-1].values())))

    def reference_frame(self, scene: int | None = None) -> np.ndarray | None:
        """The scene's captured reference frame (the last captured observation's camera)."""
        if scene is None:
            scene = None if self._now is None else self._now.trial.scene
        if scene is None:
            return None
        capture = self.log.capture(self.session_id, scene)
        if not capture or not capture.get("frames"):
            return None
        refs = capture["frames"][-1]
        if not refs:
            return None
        return load_frame(self.store.path, next(iter(refs.values())))

    # -- events: trial ---------------------------------------------------------------------

    def post(self, event: str) -> None:
        """Hand an event to a running trial from any thread (``"capture"``, ``"abort"``)."""
        self._events.put(event)

    def capture(self) -> None:
        """The operator's capture key (a seeding rollout takes the capture at its next step)."""
        self.post("capture")

    def abort(self) -> None:
        """Stop the trial at once (from any thread while it runs; see the module docstring)."""
        self.post("abort")

    def _drain(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    def _require(self, *phases: Phase) -> _Trial:
        if not self._started:
            raise InvalidInputError("start the session machine first (start())")
        if self._phase not in phases or self._now is None:
            allowed = ", ".join(p.value for p in phases)
            raise InvalidInputError(f"that needs the session to be {allowed}; it is "
                                    f"{self._phase.value}")
        return self._now

    def next(self, poll: Callable[[], None] | None = None) -> MachineState:
        """Do the present phase's next step: idle or aborted -> stage; ready -> run."""
        if self._phase in (Phase.IDLE, Phase.ABORTED):
            return self.stage(poll)
        if self._phase == Phase.READY:
            return self.run(poll)
        raise InvalidInputError(f"nothing to do next while {self._phase.value}")

    def stage(self, poll: Callable[[], None] | None = None) -> MachineState:
        """Set the present trial up: the arm home, the scene placed (see ``_play``)."""
        now = self._require(Phase.IDLE, Phase.ABORTED)
        trial = now.trial
        self._drain()
        if not getattr(self.robot, "is_connected", False):
            connect_robot(self.robot, self.robot_spec)
        attempt = self.log.start(self.session_id, trial.index, self.robot_label, self.operator)
        now.attempt_id, now.result, now.chosen, now.end = attempt.attempt_id, None, None, None
        self._loop = self._new_loop(poll)
        self._set(Phase.STAGING, "staging: the arm goes home")
        capture = self.log.capture(self.session_id, trial.scene)

        def work() -> StagedTrial:
            assert self._loop is not None
            return stage_trial(self._loop, self.robot, self.instrument, self._home, capture,
                               plan_seed=self.plan.seed, scene=trial.scene,
                               stage_seed=scene_seed(self.plan.seed, trial.index + 1,
                                                     _attempt_n(attempt.attempt_id)))

        staged = self._guarded(work)
        if staged is None:
            return self.state
        now.staged, now.start = staged, staged.start
        self._set(Phase.READY, staged.instructions or "staged: start the trial")
        return self.state

    @property
    def robot_label(self) -> str:
        """The robot as trials record it."""
        from evalband.session._robot import robot_label

        return robot_label(self.robot_spec)

    def _new_loop(self, poll: Callable[[], None] | None) -> ControlLoop:
        clip = None
        if self.instrument.record and camera_keys(self.robot.observation_features):
            import importlib.util

            if importlib.util.find_spec("av") is None:
                warning = ("no clips are recorded: the video extra (PyAV) is not installed; "
                           "pip install 'evalband[video]' (step data is still stored)")
                if warning not in self._warnings:
                    self._warnings.append(warning)
            else:
                from evalband.run._encode import ClipStream

                clip = ClipStream(fps=self.instrument.rate_hz, codec="h264")

        def events() -> list[str]:
            if poll is not None:
                poll()
            return self._drain()

        return ControlLoop(self.robot, self.clock, self.instrument.rate_hz, events, clip)

    def run(self, poll: Callable[[], None] | None = None) -> MachineState:
        """Play the staged trial: policy phase, stress, return home; then scoring.

        ``poll`` is called before every control step (a terminal reads its keys there).
        """
        from evalband.policies import EpisodeContext
        from evalband.policies._contract import episode_seed
        from evalband.store._session_runs import scene_cell, session_panel

        now = self._require(Phase.READY)
        if poll is not None and self._loop is not None:
            self._loop.events = _with_poll(poll, self._drain)
        trial = now.trial
        runtime = self._runtimes[trial.policy]
        panel = session_panel(self.plan.as_dict())
        seeds = {spec.key: spec.condition_seed for spec in panel.episode_specs()}
        condition = seeds[(scene_cell(trial.scene), 0, trial.attempt - 1)]
        # every attempt its own draws (a diffusion policy's noise differs from attempt to
        # attempt, as on the real arm), the same for every policy at that scene and attempt
        draws = episode_seed(scene_seed(self.plan.seed, trial.scene, 1000 + trial.attempt))
        runtime.reset(EpisodeContext(
            run_id=self.store.run_ids(self.session_id)[trial.policy],
            policy=self.plan.label(trial.policy), cell=scene_cell(trial.scene),
            slices={"scene": str(trial.scene)}, episode=0, repeat=trial.attempt - 1,
            condition_seed=condition, seed=draws, task=self.instrument.task))
        self._set(Phase.RUNNING, "the policy is playing")
        assert now.staged is not None
        staged = now.staged

        def on_capture(capture: Capture) -> None:
            assert now.attempt_id is not None
            sim = getattr(self.robot, "scene_state", None)
            self.log.save_capture(self.session_id, trial.scene, now.attempt_id, capture.how,
                                  capture.t, capture.pose, capture.states, capture.frames,
                                  sim() if callable(sim) and is_simulated(self.robot) else None)

        def work() -> PlayResult:
            assert self._loop is not None
            actor = runtime.actor()
            return run_trial(self._loop, self.robot, self.instrument, staged, actor,
                             lerobot_style=self._lerobot(trial.policy),
                             label=self.plan.label(trial.policy),
                             levels=list(self.plan.rubric.levels), home=self._home,
                             on_capture=on_capture)

        result = self._guarded(work)
        if result is None:
            return self.state
        assert self._loop is not None
        result.media = self._store_media(self._loop, finish_clip=True)
        data = result.as_dict()
        data["warmup_ms"] = self.warmup_ms.get(self.plan.label(trial.policy))
        assert now.attempt_id is not None
        self.log.finish(now.attempt_id, "played", result=data)
        now.result, now.end = data, result.end
        if result.warning:
            self._warnings.append(f"trial {trial.index + 1}: {result.warning}")
        suggestion = "" if result.suggestion is None else (
            f"; the machine suggests {result.suggestion} "
            f"({self.plan.rubric.levels[result.suggestion]})")
        self._set(Phase.SCORING, f"played ({result.end}){suggestion}: score it")
        self._loop = None
        return self.state

    def _guarded(self, work: Callable[[], Any]) -> Any:
        """Run robot work; on an abort, Ctrl-C or an exception make the robot safe at once."""
        try:
            return work()
        except Aborted:
            self._stop("aborted", "aborted by the operator")
        except KeyboardInterrupt:
            self._stop("aborted", "interrupted (Ctrl-C)")
            raise
        except Exception as exc:  # noqa: BLE001 - a policy or robot fault: safe, stored
            text = " ".join(f"{type(exc).__name__}: {exc}".split())
            if self._now is not None:
                text = self._coded(text, self._now.trial.policy)
            self._stop("failed", text[:500])
        return None

    def _stop(self, status: str, reason: str) -> None:
        """Stop sending actions, disconnect the robot (safe), store the play as stopped."""
        try:
            if getattr(self.robot, "is_connected", False):
                self.robot.disconnect()
        except Exception as exc:  # noqa: BLE001 - the stop still happens and is stored
            reason += f"; disconnecting also failed: {type(exc).__name__}: {exc}"
        now = self._now
        media: list[dict[str, Any]] = []
        if self._loop is not None:
            try:
                media = self._store_media(self._loop, finish_clip=False)
            except Exception:  # noqa: BLE001, S110 - the partial log is a bonus
                media = []
        if now is not None and now.attempt_id is not None:
            self.log.finish(now.attempt_id, status, reason=reason,
                            result={"start": now.start, "media": media})
        self._loop = None
        if now is not None:
            now.staged = None
        what = "aborted" if status == "aborted" else "failed"
        self._set(Phase.ABORTED, f"trial {what}: {reason}; the robot is disconnected (safe). "
                  "Replay it (next), or skip it")

    def _store_media(self, loop: ControlLoop, *, finish_clip: bool) -> list[dict[str, Any]]:
        """Write the clip (when finished) and the step data to the media area (fsync-ed)."""
        from evalband.store._media import store_media_bytes

        media: list[dict[str, Any]] = []
        clip = loop.clip
        if clip is not None:
            if finish_clip and loop.log.frames:
                data, frames, _ = clip.finish()
                ref = store_media_bytes(self.store.path, data, content_type="video/mp4",
                                        kind="video")
                media.append({**ref, "frames": frames, "fps": loop.rate_hz,
                              "camera": loop.cameras[0]})
            else:
                clip.close()
        if len(loop.log):
            ref = store_media_bytes(self.store.path, loop.log.parquet(),
                                    content_type="application/vnd.apache.parquet", kind="steps")
            media.append({**ref, "rows": len(loop.log)})
        return media

    def _set(self, phase: Phase, message: str) -> None:
        with self._lock:
            self._phase, self._message = phase, message

    # -- events: scoring -------------------------------------------------------------------

    def score(self, score: int) -> MachineState:
        """Choose a score (a rubric level) for the played trial; :meth:`confirm` stores it."""
        now = self._require(Phase.SCORING)
        now.chosen = self.plan.rubric.check_score(score)
        self._message = f"score {score} chosen: confirm it"
        return self.state

    def override(self, score: int) -> MachineState:
        """Choose a score other than the suggestion and confirm it (one event)."""
        self.score(score)
        return self.confirm()

    def accept_suggestion(self) -> MachineState:
        """Confirm the machine's suggestion (a rehearsal's score, marked ``suggested``)."""
        now = self._require(Phase.SCORING)
        suggestion = (now.result or {}).get("suggestion")
        if suggestion is None:
            raise InvalidInputError("this trial has no suggestion to accept; score it")
        now.chosen = int(suggestion)
        return self.confirm(operator="suggested")

    def assist(self) -> MachineState:
        """Toggle "assisted" for the present trial."""
        now = self._require(Phase.SCORING, Phase.IDLE, Phase.READY, Phase.ABORTED)
        now.assisted = not now.assisted
        return self.state

    def note(self, text: str) -> MachineState:
        """Set the operator's note for the present trial."""
        now = self._require(Phase.SCORING, Phase.IDLE, Phase.READY, Phase.ABORTED)
        now.note = text.strip() or None
        return self.state

    def _play_info(self, now: _Trial, operator: str) -> dict[str, Any] | None:
        if now.result is None:
            return None
        keep = ("start", "end", "steps", "policy_s", "suggestion", "at_trigger", "at_end",
                "truth", "timing", "warning", "media", "captured")
        return {"attempt_id": now.attempt_id, "robot": self.robot_label, "operator": operator,
                **{k: now.result.get(k) for k in keep}}

    def confirm(self, operator: str | None = None) -> MachineState:
        """Store the chosen score: durable before this returns; then the next trial."""
        now = self._require(Phase.SCORING)
        if now.chosen is None:
            raise InvalidInputError("choose a score first (a rubric level)")
        who = operator or ("suggested" if self.operator == "suggested" else "human")
        record = self.store.record(
            self.session_id, now.trial.index, status="scored", score=now.chosen,
            assisted=now.assisted, note=now.note,
            duration_s=(now.result or {}).get("duration_s"), play=self._play_info(now, who))
        self._after_record(now.trial, record)
        return self.state

    def skip(self) -> MachineState:
        """Record the present trial as skipped (not scored), then the next trial."""
        now = self._require(Phase.SCORING, Phase.IDLE, Phase.ABORTED)
        record = self.store.record(self.session_id, now.trial.index, status="skipped",
                                   assisted=now.assisted, note=now.note,
                                   play=self._play_info(now, "human"))
        self._after_record(now.trial, record)
        return self.state

    def _after_record(self, trial: Trial, record: TrialRecord) -> None:
        what = f"score {record.score}" if record.score is not None else "skipped"
        self._last = (f"trial {trial.index + 1} (scene {trial.scene}, attempt {trial.attempt}, "
                      f"{self.plan.label(trial.policy)}): {what}")
        self._position()
        if self._phase != Phase.FINISHED:
            self._message = f"saved {self._last}"

    def undo(self) -> MachineState:
        """Delete the last confirmed trial and show it again for scoring (its play kept)."""
        if self._phase in MOVING:
            raise InvalidInputError("undo waits until the trial has stopped moving")
        undone = self.store.undo_last(self.session_id)
        if undone is None:
            self._message = "nothing to undo"
            return self.state
        self._focus = undone.trial_index
        self._position()
        if self._now is not None:
            self._now.assisted, self._now.note = undone.assisted, undone.note
            if self._phase == Phase.SCORING:
                self._now.chosen = undone.score
        self._message = f"undone: trial {undone.trial_index + 1}; score it again"
        return self.state

    # -- unattended (rehearsal) ------------------------------------------------------------

    def run_unattended(self, on_state: Callable[[MachineState], None] | None = None,
                       limit: int | None = None) -> MachineState:
        """Play and confirm trials until the session is done (``--operator suggested``).

        Stops at the first trial that aborts or fails (its state says why), or after
        ``limit`` confirmed trials.
        """
        done = 0
        while self._phase != Phase.FINISHED and (limit is None or done < limit):
            if self._phase in (Phase.IDLE, Phase.READY):
                self.next()
            elif self._phase == Phase.SCORING:
                self.accept_suggestion()
                done += 1
            else:  # aborted / failed: stop, the operator decides
                break
            if on_state is not None:
                on_state(self.state)
        return self.state

    def close(self) -> None:
        """Disconnect the robot (if connected) and close the policies."""
        try:
            if getattr(self.robot, "is_connected", False):
                self.robot.disconnect()
        finally:
            for runtime in self._runtimes.values():
                runtime.close()
            self._runtimes.clear()


def _attempt_n(attempt_id: str) -> int:
    return int(attempt_id.rsplit(":", 1)[1])


def _with_poll(poll: Callable[[], None], drain: Callable[[], list[str]],
               ) -> Callable[[], list[str]]:
    def events() -> list[str]:
        poll()
        return drain()
    return events
