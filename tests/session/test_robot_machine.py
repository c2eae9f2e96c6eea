"""The robot session's trial state machine on sim-arm physics (virtual clock).

What a terminal or a browser does to a session goes through these events: stage, run,
capture, abort, score, override, confirm, undo, skip, accept a suggestion. Each test checks
what reached the store (the episodes, the plays, the scene captures, the media), not what a
screen printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from robotkit import machine, plan

from evalband.errors import InvalidInputError
from evalband.session import SessionStore, resolve_robot
from evalband.session._attempts import AttemptLog
from evalband.session._machine import Phase


def test_the_operator_overrides_undoes_and_skips(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "h1", policies=("sim-arm:grasp", "sim-arm:never"), attempts=1, blind=False)
    with SessionStore(store) as ss:
        m = machine(ss, "h1", operator="human")
        m.start()
        assert set(m.warmup_ms) == {"sim-arm:grasp", "sim-arm:never"}  # one warm-up each
        with pytest.raises(InvalidInputError, match="scoring"):
            m.score(2)
        m.next()  # stage
        assert m.phase == Phase.READY
        state = m.next()  # run
        assert state.phase == Phase.SCORING and state.suggestion is not None
        first = state.trial
        other = 1 if state.suggestion != 1 else 0
        m.assist()
        m.note("edge grip")
        state = m.override(other)
        assert state.phase == Phase.IDLE and state.trial != first
        (rec,) = ss.records("h1")
        assert (rec.score, rec.assisted, rec.note) == (other, True, "edge grip")
        assert rec.play["operator"] == "human" and rec.play["suggestion"] != rec.score
        state = m.undo()  # back to scoring the same play: nothing replayed
        assert (state.phase, state.trial, state.chosen) == (Phase.SCORING, first, other)
        assert ss.records("h1") == []
        m.score(state.suggestion)
        m.confirm()
        state = m.skip()  # the second trial, from idle
        assert state.phase == Phase.FINISHED
        got = {r.trial_index: r for r in ss.records("h1")}
        assert got[first].score == got[first].play["suggestion"]
        assert [r.status for r in got.values()].count("skipped") == 1
        assert len(AttemptLog(ss).attempts("h1")) == 1  # the undo replayed nothing
        m.close()


class CountingArm:
    """sim-arm with its ``send_action`` calls counted (the robot's side of an abort)."""

    def __init__(self, arm: Any) -> None:
        self.arm = arm
        self.sent = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.arm, name)

    def send_action(self, action: dict[str, float]) -> dict[str, float]:
        self.sent += 1
        return self.arm.send_action(action)


def test_an_abort_stops_the_actions_at_once_and_the_trial_is_replayed(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "a1", policies=("sim-arm:grasp",), attempts=1, blind=False)
    with SessionStore(store) as ss:
        arm = CountingArm(resolve_robot("sim-arm"))
        m = machine(ss, "a1", operator="human", robot=arm)
        m.start()
        m.next()
        acts: list[int] = []

        class Aborting:
            def __init__(self, inner: Any) -> None:
                self.inner = inner

            def reset(self, context: Any) -> None:
                self.inner.reset(context)

            def act(self, obs: Any) -> Any:
                acts.append(arm.sent)
                if len(acts) == 20:
                    m.abort()  # as the operator's key, mid-trial
                return self.inner.act(obs)

        from evalband.policies import resolve_policy
        from evalband.policies._runtime import as_runtime

        original = m._runtimes["sim-arm:grasp"]
        m._runtimes["sim-arm:grasp"] = as_runtime(Aborting(resolve_policy("sim-arm:grasp")()))
        state = m.next()
        assert state.phase == Phase.ABORTED and "aborted" in state.message
        assert arm.sent == acts[-1]  # the action of the aborting step was never sent
        assert not arm.is_connected  # lerobot's disconnect: torque off
        assert ss.records("a1") == []
        (attempt,) = AttemptLog(ss).attempts("a1")
        assert attempt.status == "aborted" and attempt.result["media"]  # partial steps kept
        m._runtimes["sim-arm:grasp"] = original
        m.next()  # replay: reconnects, stages
        state = m.next()
        assert state.phase == Phase.SCORING
        m.accept_suggestion()
        assert [a.status for a in AttemptLog(ss).attempts("a1")] == ["aborted", "played"]
        assert len(ss.records("a1")) == 1
        m.close()


class Exploding:
    def reset(self, context: Any) -> None:
        self.n = 0

    def act(self, obs: Any) -> Any:
        self.n += 1
        if self.n == 5:
            raise RuntimeError("CUDA out of memory in GN_s1000")
        return {"gripper.pos": 100.0}


def test_a_policy_exception_is_made_safe_and_stored_without_the_blinded_name(
        tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "f1", policies=("GN_s1000", "PT_fullLR"), attempts=1, blind=True,
         specs={"PT_fullLR": "sim-arm:never"})
    with SessionStore(store) as ss:
        m = machine(ss, "f1", operator="human", policies={
            "GN_s1000": Exploding, "PT_fullLR": "sim-arm:never"})
        # a given policy spec string is resolved like the plan's
        from evalband.policies import resolve_policy

        m._given = {"GN_s1000": Exploding, "PT_fullLR": resolve_policy("sim-arm:never")}
        m.start()
        code = ss.plan("f1").codes["GN_s1000"]
        while m.state.label != code:
            m.skip()
        m.next()
        state = m.next()
        assert state.phase == Phase.ABORTED and "RuntimeError" in state.message
        assert "GN_s1000" not in json.dumps(state.as_dict()) and code in state.message
        assert not m.robot.is_connected
        failed = AttemptLog(ss).attempts("f1")[-1]
        assert failed.status == "failed" and "GN_s1000" not in failed.reason
        m.close()


def test_a_blinded_machine_never_shows_a_policy_name(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "b1", policies=("GN_s1000", "PT_fullLR"), attempts=1, blind=True,
         specs={"GN_s1000": "sim-arm:grasp", "PT_fullLR": "sim-arm:never"})
    seen: list[str] = []
    with SessionStore(store) as ss:
        m = machine(ss, "b1")
        seen.append(json.dumps(m.start().as_dict()))
        m.run_unattended(on_state=lambda s: seen.append(json.dumps(s.as_dict())))
        m.close()
    text = "\n".join(seen)
    for secret in ("GN_s1000", "PT_fullLR", "sim-arm:grasp", "sim-arm:never"):
        assert secret not in text


def test_a_session_resumes_where_the_process_died(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "k1", policies=("sim-arm:grasp",), attempts=2, blind=False)
    with SessionStore(store) as ss:
        m = machine(ss, "k1")
        m.start()
        m.next()
        played = m.next()  # played, then the process "dies" before the score is stored
        assert played.phase == Phase.SCORING
        suggestion, trial = played.suggestion, played.trial
        log = AttemptLog(ss)
        log.start("k1", 1, "sim-arm", "suggested")  # and another play was running
        again = machine(ss, "k1")
        state = again.start()
        assert (state.phase, state.trial, state.suggestion) == (Phase.SCORING, trial,
                                                                suggestion)
        assert "played again" in state.message
        again.run_unattended()
        statuses = sorted(a.status for a in log.attempts("k1"))
        assert statuses == ["interrupted", "played", "played"]
        assert sorted(r.trial_index for r in ss.records("k1")) == [0, 1]
        again.close()


def test_the_camera_and_the_reference_frame_for_an_overlay(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "c1", policies=("sim-arm:grasp",), attempts=2, blind=False)
    with SessionStore(store) as ss:
        m = machine(ss, "c1", operator="human")
        m.start()
        assert m.reference_frame() is None  # no capture yet
        live = m.latest_frame()
        assert live is not None and live.shape == (96, 128, 3)
        m.next()
        m.next()
        m.accept_suggestion()
        reference = m.reference_frame(1)
        assert reference is not None and reference.dtype == np.uint8

        def difference() -> float:
            live = m.latest_frame()
            assert live is not None and reference is not None
            return float(np.abs(live.astype(int) - reference.astype(int)).mean())

        at_home = difference()  # the arm is home between trials
        m.next()  # staged: at the captured pose, the block put back
        staged = difference()
        assert staged < 0.5 * at_home, (staged, at_home)
        m.close()


def test_a_virtual_clock_needs_a_simulated_robot_and_a_rehearsal_a_rule(tmp_path: Path) -> None:
    from evalband.session import SessionMachine
    from evalband.session._clock import VirtualClock

    store = tmp_path / "s.sqlite"
    plan(store, "v1", policies=("sim-arm:grasp",), attempts=1, blind=False)
    plan(store, "v2", policies=("sim-arm:grasp",), attempts=1, blind=False, instrument=None)

    class RealArm(CountingArm):
        simulated = False

    with SessionStore(store) as ss:
        with pytest.raises(InvalidInputError, match="real robot"):
            SessionMachine(ss, "v1", RealArm(resolve_robot("sim-arm")), robot_spec="x",
                           clock=VirtualClock())
        with pytest.raises(InvalidInputError, match="suggest"):
            machine(ss, "v2", operator="suggested")
