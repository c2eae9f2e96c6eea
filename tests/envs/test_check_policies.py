"""check-env takes every policy ``run`` takes, plays a positive control until it succeeds,
and says a rendering failure in one line (issue 33, item 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalband.cli import main
from evalband.panel import load_panel
from evalband.run._check import check_env

COIN = {"name": "coin", "env": "evalband/Coin-v0", "episodes": 4, "seed": 0,
        "budget": {"steps": 5}, "env_kwargs": {"p": 0.5, "length": 2}}


class Stateful:
    """A policy class with an episode lifecycle (a factory: one per slot)."""

    def reset(self, context: Any) -> None:
        self.steps = 0

    def act(self, obs: Any) -> np.ndarray:
        self.steps += 1
        return np.zeros(1)


stateful = Stateful()  # an instance (run refuses --batch for it: per-slot state undeclared)


class Slots:
    """A per-slot batched policy (``act_batch(observations, slots)``)."""

    def reset(self, context: Any) -> None:
        pass

    def act_batch(self, observations: Any, slots: Any) -> np.ndarray:
        return np.zeros((len(slots), 1))


slots = Slots()


@pytest.mark.parametrize("policy", ["test_check_policies:Stateful",
                                    "test_check_policies:stateful",
                                    "test_check_policies:slots", "random"])
def test_every_kind_of_policy_is_checked(policy: str) -> None:
    findings = check_env(load_panel(COIN), policy)
    assert [f for f in findings if f.level == "problem"] == [], findings
    assert any(f.check == "success" and "succeed" in f.message for f in findings)


def test_a_served_policy_is_checked() -> None:
    from evalband.policies import PolicyServer

    server = PolicyServer(lambda obs: np.zeros(1), name="zeros", port=0)
    port = server.start_in_thread()
    try:
        findings = check_env(load_panel(COIN), f"ws://127.0.0.1:{port}")
    finally:
        server.stop()
    assert [f for f in findings if f.level == "problem"] == [], findings


def test_a_dead_server_is_one_problem_line(capsys) -> None:
    import socket

    with socket.socket() as sock:  # bound, never listening: refused, and no one else's
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        findings = check_env(load_panel(COIN), f"ws://127.0.0.1:{port}?retries=0")
    problems = [f.line() for f in findings if f.level == "problem"]
    assert len(problems) == 1 and "ws://127.0.0.1" in problems[0], problems


def test_a_positive_control_plays_until_its_first_success() -> None:
    # p = 0.1: 3 episodes fail together 73% of the time; played until the first success
    rare = {**COIN, "env_kwargs": {"p": 0.1, "length": 2}, "episodes": 30}
    findings = check_env(load_panel(rare), "evalband.policies._builtin:zero_action")
    (success,) = [f for f in findings if f.check == "success"]
    assert success.level == "note" and "1/" in success.message, success
    assert "until the first success" in success.message


class Unrenderable:
    """An env whose reset fails as MuJoCo does without a display."""

    def __init__(self, **kwargs: Any) -> None:
        import gymnasium

        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,))

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        raise RuntimeError("an OpenGL platform library has not been loaded into this process")

    def step(self, action: Any) -> Any:
        raise AssertionError("never stepped")

    def close(self) -> None:
        pass


def test_a_rendering_failure_is_one_build_line(tmp_path: Path, capsys,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).parent)
    panel = tmp_path / "p.yaml"
    panel.write_text("name: p\nenv: test_check_policies:Unrenderable\nepisodes: 2\n"
                     "budget: {steps: 3}\n")
    assert main(["check-env", str(panel), "-p", "random"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    (line,) = [x for x in out.splitlines() if x.startswith("problem")]
    assert line.startswith("problem [build]") and "MUJOCO_GL=egl" in line
