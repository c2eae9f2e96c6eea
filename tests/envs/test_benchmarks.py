"""The shipped benchmark panels (examples/) on the real packages: serial = process = lockstep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from evalband.panel import load_panel
from evalband.run import run_panel
from evalband.run._check import same_play
from testkit import comparable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SHIPPED = {  # panel file -> (positive-control policy, package it needs)
    "reacher": ("reacher:ik_pd", "gymnasium.envs.mujoco"),
    "inverted-pendulum": ("inverted_pendulum:pd", "gymnasium.envs.mujoco"),
    "point-maze": ("point_maze:p", "gymnasium_robotics"),
    "gym-pusht": ("gym_pusht:push", "gym_pusht"),
}


def _shipped(name: str, **overrides: Any) -> Any:
    data = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    data.update(overrides)
    return load_panel(data)


def maze_random(obs: dict[str, Any]) -> np.ndarray:
    """Uniform random actions, seeded by the observation (reproducible on any backend)."""
    seed = np.frombuffer(np.asarray(obs["observation"], dtype=np.float64).tobytes(), np.uint32)
    return np.random.default_rng(seed.tolist()).uniform(-1.0, 1.0, 2)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_panel_same_records_on_every_path(name: str, store) -> None:
    policy, needs = SHIPPED[name]
    pytest.importorskip(needs)
    extra = {"budget": {"steps": 100}} if name == "gym-pusht" else {}
    panel = _shipped(name, episodes=4, **extra)
    _, summary = run_panel(panel, policy, store, run_id="serial")
    run_panel(panel, policy, store, run_id="proc", backend="process", workers=2)
    run_panel(panel, policy, store, run_id="lock", batch_size=4)
    serial = {r.key: r for r in store.episode_records("serial")}
    for other in ("proc", "lock"):  # metrics to 1e-9: gym-pusht's coverage reward may differ
        records = store.episode_records(other)  # in its last bit between env instances
        assert sorted(serial) == sorted(r.key for r in records)
        assert all(same_play(serial[r.key], r) for r in records)
        assert {k: comparable(r) | {"extra": None} for k, r in serial.items()} == {
            r.key: comparable(r) | {"extra": None} for r in records}
    assert all(r.metrics and r.sim_time_s for r in store.episode_records("serial"))
    if name != "gym-pusht":  # the classical controller is a positive control
        assert summary.successes == 4


def test_reacher_runs_from_a_three_line_panel(store) -> None:
    pytest.importorskip("gymnasium.envs.mujoco")
    panel = load_panel(EXAMPLES / "reacher-short.yaml")
    assert (panel.env, panel.budget.steps) == ("Reacher-v5", 50)
    _, summary = run_panel(panel, "reacher:ik_pd", store, run_id="two")
    records = store.episode_records("two")
    assert summary.counts["error"] == 0 and len(records) == 10
    assert summary.successes >= 8  # the docs' panel works: its rule can hold
    assert all(r.sim_time_s == pytest.approx(1.0) for r in records)  # 50 x 0.02 s: dt property


def test_gym_pusht_300_steps_are_30_seconds(store) -> None:
    pytest.importorskip("gym_pusht")
    panel = _shipped("gym-pusht", episodes=1)
    assert panel.budget.seconds == 30.0
    run_panel(panel, "evalband.policies._builtin:zero_action", store, run_id="pusht")
    (record,) = store.episode_records("pusht")
    assert (record.steps, record.sim_time_s) == (300, pytest.approx(30.0))
    assert "coverage" in record.metrics


@pytest.mark.slow
def test_success_rule_any_step_vs_final_step(store) -> None:
    pytest.importorskip("gymnasium_robotics")
    rules = {}
    for rule in ("any_step", "final_step"):
        panel = _shipped("point-maze", episodes=20, success={"rule": rule, "key": "success"})
        run_panel(panel, "test_benchmarks:maze_random", store, run_id=rule)
        rules[rule] = {r.key: r for r in store.episode_records(rule)}
    anywhere = {k for k, r in rules["any_step"].items() if r.success}
    at_end = {k for k, r in rules["final_step"].items() if r.success}
    assert at_end < anywhere  # a success at the last step is a success at some step
    assert all(rules["final_step"][k].steps == 300 for k in rules["final_step"])
    assert all(rules["any_step"][k].steps < 300 for k in anywhere)
