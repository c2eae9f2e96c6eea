"""The control period comes from the simulator, and check-env holds it to the simulator's clock.

A rendering rate is not a control rate: dm_control's cartpole renders at 10 fps and steps
every 0.01 s; PointMaze's outer env says 50 fps while its MuJoCo env steps 0.01 s. Issue 33,
item 1. (The dm_control cartpole panel runs in .venv-mujoco3: tests/envs/test_mujoco3.py.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalband.envs import control_dt, make_env
from evalband.panel import load_panel
from evalband.run import run_panel
from evalband.run._check import check_env


class _Data:
    time = 0.0


class _Sim:
    """A MuJoCo-like env: 0.01 s per action, rendered at 10 fps."""

    frame_skip = 1
    model = type("M", (), {"opt": type("O", (), {"timestep": 0.01})()})()
    metadata = {"render_fps": 10}
    dt = 0.01

    def __init__(self) -> None:
        self.data = _Data()


class _Holder:
    """An env holding its simulator one level down (PointMaze's ``point_env``)."""

    metadata = {"render_fps": 50}

    def __init__(self) -> None:
        self.point_env = _Sim()


def test_the_simulator_period_wins_over_render_fps() -> None:
    assert control_dt(_Sim()).dt == pytest.approx(0.01)
    assert control_dt(_Sim()).source == "frame_skip x timestep"
    assert control_dt(_Holder()).dt == pytest.approx(0.01)


def test_the_simulator_clock_is_found_where_the_simulator_is() -> None:
    from evalband.envs._contract import simulator_time

    assert simulator_time(_Holder()) == 0.0 and simulator_time(object()) is None


class _Slotted:
    __slots__ = ("sim", "__dict__")

    def __init__(self) -> None:
        self.sim = None
        self.point_env = _Sim()


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's object layout")
def test_finding_the_period_leaves_the_env_s_attributes_inline() -> None:
    """Reading ``vars(env)`` would make every attribute read in the env's ``step`` slower."""
    import gc

    from evalband.envs._contract import _attribute_values

    held, sim = _Holder(), _Sim()
    assert control_dt(held).dt == pytest.approx(0.01) and control_dt(sim).dt == 0.01
    # without a __dict__ the collector sees the attribute values themselves, not one dict
    assert [v for v in gc.get_referents(held) if v is not _Holder] == [held.point_env]
    assert [v for v in gc.get_referents(sim) if v is not _Sim] == [sim.data]
    for env in (_Holder(), _Slotted(), type("Plain", (), {})(), 3):  # the same values as vars()
        found = _attribute_values(env)  # before vars() below makes the dict
        assert found == (list(vars(env).values()) if hasattr(env, "__dict__") else [])
    materialized = _Holder()
    vars(materialized)
    assert _attribute_values(materialized) == [materialized.point_env]


def test_render_fps_alone_comes_with_a_note() -> None:
    class Drawn:
        metadata = {"render_fps": 25}

    period = control_dt(Drawn())
    assert period.dt == pytest.approx(0.04) and "rendering rate" in period.note


def _zeros(obs: Any) -> np.ndarray:
    return np.zeros(2)


def test_point_maze_sim_time_is_data_time(store) -> None:
    pytest.importorskip("gymnasium_robotics")
    panel = load_panel({"name": "maze", "env": "PointMaze_Open-v3",
                        "imports": ["gymnasium_robotics"], "episodes": 2, "seed": 0,
                        "budget": {"seconds": 1.5}, "success": {"rule": "any_step",
                                                                "key": "success"}})
    run_panel(panel, _zeros, store, run_id="maze")
    for record in store.episode_records("maze"):
        env = make_env("PointMaze_Open-v3", {}, keep_time_limit=False)
        try:
            env.reset(seed=record.condition_seed)
            for _ in range(record.steps):
                env.step(np.zeros(2))
            clock = env.unwrapped.point_env.data.time  # MuJoCo's own clock
        finally:
            env.close()
        assert record.steps == 150  # 1.5 s of 0.01 s steps
        assert clock == pytest.approx(1.5) and record.sim_time_s == pytest.approx(clock)


def test_check_env_holds_the_period_to_the_simulator_clock(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium_robotics")
    data = {"name": "maze", "env": "PointMaze_Open-v3", "imports": ["gymnasium_robotics"],
            "episodes": 1, "seed": 0, "budget": {"steps": 30},
            "success": {"rule": "any_step", "key": "success"}}
    right = [f.line() for f in check_env(load_panel(data))]
    assert any("data.time" in line and line.startswith("note [time]") for line in right)
    wrong = [f.line() for f in check_env(load_panel({**data, "control_dt": 0.02}))]
    (problem,) = [line for line in wrong if line.startswith("problem [time]")]
    assert "advanced 0.01 s a step" in problem and "control_dt: 0.01" in problem
