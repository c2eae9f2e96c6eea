"""Connecting a robot, and a robot that fails mid-trial: one line, the robot left safe.

lerobot's own SO-101 is refused in lerobot's venv (``test_robot_lerobot.py``); here the same
rules on stand-ins that fail the ways a real arm does (a port, an uncalibrated arm, a bus
error mid-trial), in the main venv.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from robotkit import machine, plan

from evalband.errors import RobotError
from evalband.session import SessionStore, connect_robot, resolve_robot
from evalband.session._attempts import AttemptLog
from evalband.session._lerobot_robot import explain_connect_error
from evalband.session._machine import Phase


class Config:
    def __init__(self, port: str) -> None:
        self.port = port
        self.type = "so101_follower"


class Uncalibrated:
    """Connects, but its motors do not match a calibration file."""

    id = "grasp-arm"
    is_connected = False
    is_calibrated = False

    def __init__(self) -> None:
        self.config = Config("/dev/ttyACM0")
        self.calls: list[Any] = []

    def connect(self, calibrate: bool = True) -> None:
        self.calls.append(("connect", calibrate))
        self.is_connected = True

    def disconnect(self) -> None:
        self.calls.append("disconnect")
        self.is_connected = False


def test_an_uncalibrated_arm_is_refused_naming_lerobots_calibration() -> None:
    arm = Uncalibrated()
    with pytest.raises(RobotError) as info:
        connect_robot(arm, "lerobot:so101_follower")
    text = str(info.value)
    assert "\n" not in text and "not calibrated" in text
    assert ("lerobot-calibrate --robot.type=so101_follower --robot.port=/dev/ttyACM0 "
            "--robot.id=grasp-arm") in text
    assert arm.calls == [("connect", False), "disconnect"]  # never lerobot's interactive one


def test_connection_failures_name_the_port_and_the_fix(tmp_path: Path) -> None:
    class Arm:
        config = Config(str(tmp_path / "ttyNONE"))

    missing = explain_connect_error(ConnectionError("x"), Arm(), "lerobot:so101_follower")
    assert "does not exist" in missing and "lerobot-find-port" in missing
    assert "ttyNONE" in missing
    Arm.config = Config(str(tmp_path / "ttyUSB0"))
    (tmp_path / "ttyUSB0").write_text("")
    other = explain_connect_error(OSError("[Errno 5] Input/output error"), Arm(), "lerobot:x")
    assert "Input/output error" in other and "ttyUSB0" in other and "\n" not in other


def test_sim_arm_options_are_checked() -> None:
    assert resolve_robot("sim-arm?action_latency_ms=30&seed=4").action_latency_s == 0.03
    with pytest.raises(RobotError, match="unknown option 'lag'"):
        resolve_robot("sim-arm?lag=3")
    with pytest.raises(RobotError, match="must be a number"):
        resolve_robot("sim-arm?seed=x")


class FaultyArm:
    """sim-arm whose bus fails after a number of readings (a loose cable mid-trial)."""

    def __init__(self, arm: Any, after: int) -> None:
        self.arm, self.after, self.reads = arm, after, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.arm, name)

    def get_observation(self) -> dict[str, Any]:
        self.reads += 1
        if self.reads == self.after:
            raise ConnectionError("Failed to sync read 'Present_Position' on ids=[1, 2]")
        return self.arm.get_observation()


def test_a_robot_fault_mid_trial_leaves_it_disconnected_and_the_trial_pending(
        tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "f2", policies=("sim-arm:grasp",), attempts=1, blind=False)
    with SessionStore(store) as ss:
        arm = resolve_robot("sim-arm")
        m = machine(ss, "f2", operator="human", robot=arm)
        faulty = FaultyArm(arm, after=200)
        m.robot = faulty
        m.start()
        m.next()
        state = m.next()
        assert state.phase == Phase.ABORTED and "Failed to sync read" in state.message
        assert not arm.is_connected and ss.records("f2") == []
        (attempt,) = AttemptLog(ss).attempts("f2")
        assert attempt.status == "failed" and "ConnectionError" in (attempt.reason or "")
        m.close()
