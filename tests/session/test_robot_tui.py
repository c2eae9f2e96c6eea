"""The operator's terminal on a robot session, and the loop's timing warning on the real clock.

The terminal is driven by scripted keys (one per line, as ``LineKeys`` reads a pipe); what is
checked is what reached the store and the lines the operator saw.
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

from robotkit import machine, plan

from evalband.session import SessionMachine, SessionStore, resolve_robot
from evalband.session._attempts import AttemptLog
from evalband.session._clock import RealClock
from evalband.session._robot_tui import run_robot_session
from evalband.session._tui import LineKeys


def test_the_operator_scores_from_the_keyboard(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "t1", policies=("sim-arm:grasp",), attempts=2, blind=False)
    # trial 1: stage, run, override with 0, confirm; trial 2: stage, run, accept (Enter)
    keys = LineKeys(io.StringIO("\n\n0\ny\n\n\n\n"))
    out = io.StringIO()
    with SessionStore(store) as ss:
        outcome = run_robot_session(machine(ss, "t1", operator="human"), keys=keys, out=out)
        records = {r.trial_index: r for r in ss.records("t1")}
    text = out.getvalue()
    assert outcome.finished and outcome.confirmed == 2
    assert "the machine suggests" in text and "complete: 2 of 2" in text
    assert records[0].score == 0 and records[0].play["suggestion"] == 2  # overridden
    assert records[1].score == records[1].play["suggestion"]  # Enter accepted it
    assert {r.play["operator"] for r in records.values()} == {"human"}


class Interrupting:
    """A policy during which the operator presses Ctrl-C."""

    def reset(self, context: Any) -> None:
        self.n = 0

    def act(self, obs: Any) -> Any:
        self.n += 1
        if self.n == 10:
            raise KeyboardInterrupt
        return {"gripper.pos": 100.0}


def test_ctrl_c_stops_the_robot_and_ends_the_session_resumable(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "t2", policies=("sim-arm:grasp",), attempts=1, blind=False)
    out = io.StringIO()
    with SessionStore(store) as ss:
        m = machine(ss, "t2", operator="human", policies={"sim-arm:grasp": Interrupting})
        outcome = run_robot_session(m, keys=LineKeys(io.StringIO("\n\n")), out=out)
        (attempt,) = AttemptLog(ss).attempts("t2")
        assert ss.records("t2") == []
    assert not outcome.finished and not m.robot.is_connected
    assert attempt.status == "aborted" and "Ctrl-C" in (attempt.reason or "")
    assert "robot is disconnected" in out.getvalue() and "resume: evalband session run t2" in (
        out.getvalue())


class Slow:
    """A policy slower than the 30 Hz control period."""

    def reset(self, context: Any) -> None:
        pass

    def act(self, obs: Any) -> Any:
        time.sleep(0.06)
        return {"gripper.pos": 100.0}


def test_the_timing_warning_fires_when_the_policy_is_slower_than_the_period(
        tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "w1", policies=("slow",), attempts=1, blind=False, time_limit_s=0.5,
         capture=None, replace=False, trigger=None, stress=None, suggest=None, warmup=False)
    clock = RealClock()
    with SessionStore(store) as ss:
        m = SessionMachine(ss, "w1", resolve_robot("sim-arm", clock=clock.now),
                           robot_spec="sim-arm", clock=clock, operator="human",
                           policies={"slow": Slow})
        out = io.StringIO()
        run_robot_session(m, keys=LineKeys(io.StringIO("\n\n1\ny\n")), out=out)
        (record,) = ss.records("w1")
    assert "WARNING" in out.getvalue() and "cannot keep 30 Hz" in out.getvalue()
    timing = record.play["timing"]
    assert record.play["warning"] and timing["policy_ms_p95"] > 1000 / 30
    assert timing["missed"] >= timing["steps"] - 1 and timing["achieved_hz"] < 20
