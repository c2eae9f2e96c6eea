"""The operator's terminal for a robot session: keys in, the session machine's state out.

Everything a trial does is :class:`~evalband.session._machine.SessionMachine`'s; this module
only shows its state and turns keys into its events, so the browser console drives the same
object. Keys::

    Enter   stage the trial (the arm goes home, the scene is set) / start the policy /
            confirm the chosen score (or, with none chosen, the machine's suggestion)
    space   capture the scene's start state (during its seeding rollout)
    x, Esc  abort the running trial: no more actions, the robot disconnected (safe)
    0-9     choose a score          a  assisted       n  note
    s       skip the trial          u  undo the last confirmed trial
    q       quit (every confirmed trial is saved; run again to resume)

Ctrl-C while the robot moves aborts the trial the same way and ends the session. With
``operator="suggested"`` (a rehearsal) no key is read: every suggestion is accepted and
stored as such.
"""

from __future__ import annotations

import os
import select
import sys
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from evalband.session._machine import Phase, SessionMachine
from evalband.session._tui import (
    KeySource,
    LineKeys,
    SessionRunOutcome,
    TerminalKeys,
    _hint_store,
    _Screen,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from evalband.session._machine import MachineState

__all__ = ["run_robot_session"]

_ENTER = "\n"
_QUIT = ("q", "Q", "\x04", "")
_ABORT = ("x", "X", "\x1b")


@contextmanager
def _keys() -> Iterator[KeySource]:
    if sys.stdin.isatty():
        with TerminalKeys(sys.stdin.fileno()) as keys:
            yield keys
    else:
        yield LineKeys(sys.stdin)


def _poller(keys: KeySource, machine: SessionMachine) -> Callable[[], None] | None:
    """Read keys without waiting while the robot moves (a terminal only)."""
    fd = getattr(keys, "fd", None)
    if fd is None:
        return None

    def poll() -> None:
        while select.select([fd], [], [], 0)[0]:
            data = os.read(fd, 16).decode("utf-8", errors="replace")
            for ch in data:
                if ch in _ABORT:
                    machine.abort()
                elif ch == " ":
                    machine.capture()
    return poll


class _View:
    """What the operator sees, from the machine's state (labels only when blinded)."""

    def __init__(self, machine: SessionMachine, out: IO[str] | None) -> None:
        self.machine = machine
        self.screen = _Screen(machine.plan, out)
        self.shown_warnings = 0

    def say(self, text: str, style: str | None = None) -> None:
        self.screen.say(text, style)

    def header(self, state: MachineState) -> None:
        plan = self.machine.plan
        blind = "blinded (codes, not names)" if plan.blind else "not blinded"
        self.say(f"session {plan.session_id} on {self.machine.robot_label}: "
                 f"{len(plan.policies)} policies x {plan.scenes} scenes x {plan.attempts} "
                 f"attempts = {plan.n_trials} trials, {blind}", style="bold")
        self.say(f"rubric: {plan.rubric.describe()}")
        for line in self.machine.instrument.describe():
            self.say(f"instrument: {line}")
        if self.machine.warmup_ms:
            self.say("warm-up calls: " + " · ".join(
                f"{k} {v:.0f} ms" for k, v in sorted(self.machine.warmup_ms.items())))
        done = state.counts["scored"] + state.counts["skipped"]
        if done:
            self.say(f"resuming: {done} of {plan.n_trials} trials already recorded")
        if state.message and state.message != "ready":
            self.say(state.message, style="yellow")

    def trial(self, state: MachineState) -> None:
        plan = self.machine.plan
        done = state.counts["scored"] + state.counts["skipped"]
        self.say("")
        self.say(f"── trial {(state.trial or 0) + 1} of {plan.n_trials} · scene {state.scene} of "
                 f"{plan.scenes} · attempt {state.attempt} of {plan.attempts} ──",
                 style="bold cyan")
        scene = "captured" if state.captured else "not captured yet (a seeding rollout)"
        self.say(f"policy: {state.label} · scene start state: {scene}", style="bold")
        self.say(f"progress: {done} of {plan.n_trials} done ({state.counts['scored']} scored, "
                 f"{state.counts['skipped']} skipped)")

    def warnings(self, state: MachineState) -> None:
        for text in state.warnings[self.shown_warnings:]:
            self.say(f"WARNING {text}", style="bold red")
        self.shown_warnings = len(state.warnings)

    def scoring(self, state: MachineState) -> None:
        plan = self.machine.plan
        self.say(state.message, style="yellow")
        if state.suggestion is not None:
            self.say(f"the machine suggests {state.suggestion} "
                     f"({plan.rubric.levels[state.suggestion]}): Enter accepts it, a digit "
                     "overrides it")
        self.say(f"score {plan.rubric.describe()} — a assisted · n note · s skip · u undo")


def run_robot_session(machine: SessionMachine, *, keys: KeySource | None = None,
                      out: IO[str] | None = None) -> SessionRunOutcome:
    """Drive ``machine`` from the terminal until the session is done or the operator quits.

    Raises:
        RobotError: the robot cannot connect (before anything is stored).
    """
    view = _View(machine, out)
    state = machine.start()
    view.header(state)
    outcome = SessionRunOutcome(machine.session_id, 0, 0, False)
    try:
        if machine.operator == "suggested":
            _unattended(machine, view, outcome)
        else:
            with _keys() if keys is None else _given(keys) as source:
                _attended(machine, view, source, outcome)
    except KeyboardInterrupt:
        view.say("")
        view.say("interrupted: no more actions were sent and the robot is disconnected (safe)",
                 style="bold red")
    finally:
        machine.close()
    outcome.counts = machine.store.counts(machine.session_id)
    outcome.finished = outcome.counts["pending"] == 0
    _farewell(machine, view, outcome)
    return outcome


@contextmanager
def _given(keys: KeySource) -> Iterator[KeySource]:
    yield keys


def _unattended(machine: SessionMachine, view: _View, outcome: SessionRunOutcome) -> None:
    view.say("rehearsal: every machine suggestion is accepted and stored as such "
             "(operator 'suggested'), never as a human's score", style="yellow")
    total = machine.plan.n_trials

    def progress(state: MachineState) -> None:
        view.warnings(state)
        if state.last is not None and state.phase in (Phase.IDLE, Phase.FINISHED):
            done = state.counts["scored"] + state.counts["skipped"]
            view.say(f"[{done}/{total}] {state.last}")

    before = machine.store.counts(machine.session_id)
    state = machine.run_unattended(on_state=progress)
    after = machine.store.counts(machine.session_id)
    outcome.confirmed = (after["scored"] + after["skipped"]) - (before["scored"]
                                                               + before["skipped"])
    if state.phase == Phase.ABORTED:
        view.say(state.message, style="bold red")


def _attended(machine: SessionMachine, view: _View, keys: KeySource,
              outcome: SessionRunOutcome) -> None:
    poll = _poller(keys, machine)
    shown: tuple[Any, ...] | None = None
    while True:
        state = machine.state
        view.warnings(state)
        if state.phase == Phase.FINISHED:
            return
        key_state = (state.trial, state.phase)
        if key_state != shown:
            if state.phase in (Phase.IDLE,) or shown is None or shown[0] != state.trial:
                view.trial(state)
            if state.phase == Phase.IDLE:
                view.say("Enter: stage the trial (the arm moves) · s skip · u undo · q quit")
            elif state.phase == Phase.READY:
                view.say(state.message, style="yellow")
                reference = machine.reference_path() if state.start == "replaced" else None
                if reference is not None:
                    view.say(f"the scene's reference frame: {reference}")
                view.say("Enter: start the policy (space captures during a seeding rollout, "
                         "x aborts) · q quit")
            elif state.phase == Phase.SCORING:
                view.scoring(state)
            elif state.phase == Phase.ABORTED:
                view.say(state.message, style="bold red")
                view.say("Enter: replay the trial · s skip · q quit")
            shown = key_state
        key = keys.key()
        if key in _QUIT:
            return
        _handle(machine, view, keys, key, state, poll, outcome)
        keys.flush()


def _handle(machine: SessionMachine, view: _View, keys: KeySource, key: str,
            state: MachineState, poll: Callable[[], None] | None,
            outcome: SessionRunOutcome) -> None:
    from evalband.errors import EvalbandError

    phase = state.phase
    try:
        if key in (_ENTER, " ", "y", "Y") and phase in (Phase.IDLE, Phase.ABORTED, Phase.READY):
            if phase == Phase.READY:
                view.say("running… (space: capture · x: abort · Ctrl-C: abort and quit)")
            machine.next(poll)
        elif phase == Phase.SCORING and key.isdigit():
            machine.score(int(key))
            chosen = int(key)
            view.say(f"score {view.screen.describe_score(chosen)} for trial "
                     f"{(state.trial or 0) + 1}? y/Enter confirm · another digit changes it",
                     style="bold yellow")
        elif phase == Phase.SCORING and key in (_ENTER, "y", "Y"):
            if state.chosen is None:
                if state.suggestion is None:
                    view.say("press a digit to score")
                    return
                machine.score(state.suggestion)
            machine.confirm()
            outcome.confirmed += 1
            view.say(machine.state.message, style="green")
        elif key == "s" and phase in (Phase.SCORING, Phase.IDLE, Phase.ABORTED):
            machine.skip()
            outcome.confirmed += 1
            view.say(machine.state.message, style="green")
        elif key == "a" and phase in (Phase.SCORING, Phase.IDLE, Phase.READY, Phase.ABORTED):
            now = machine.assist()
            view.say(f"assisted: {'yes' if now.assisted else 'no'} (for this trial)")
        elif key == "n" and phase in (Phase.SCORING, Phase.IDLE, Phase.READY, Phase.ABORTED):
            text = keys.line("note (Enter to keep it): ")
            if text and text.strip():
                machine.note(text)
                view.say(f"note set: {text.strip()}")
        elif key == "u":
            before = machine.state.trial
            now = machine.undo()
            if now.trial != before or now.message.startswith("undone"):
                outcome.undone += 1
            view.say(now.message, style="yellow")
        elif key in ("?", "h"):
            view.say(__doc__.split("Keys::", 1)[1].split("Ctrl-C", 1)[0].rstrip()
                     if __doc__ else "")
        else:
            view.say(f"key {key!r} does nothing now ({phase.value}); press ? for help")
    except EvalbandError as exc:
        view.say(str(exc), style="red")


def _farewell(machine: SessionMachine, view: _View, outcome: SessionRunOutcome) -> None:
    plan = machine.plan
    counts = outcome.counts
    done = counts["scored"] + counts["skipped"]
    store_opt = _hint_store(machine.store)
    robot = f" --robot {machine.robot_spec}"
    view.say("")
    if outcome.finished:
        view.say(f"session {plan.session_id} complete: {done} of {plan.n_trials} trials "
                 f"recorded ({counts['scored']} scored, {counts['skipped']} skipped)",
                 style="bold green")
        view.say(f"next: evalband session analyze {plan.session_id}{store_opt}")
    else:
        view.say(f"stopped: {done} of {plan.n_trials} trials recorded, every confirmed trial "
                 "saved", style="bold")
        view.say(f"resume: evalband session run {plan.session_id}{robot}{store_opt}")
