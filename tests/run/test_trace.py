"""Traces recorded while episodes are played: which ones, the same on every path, bounded."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalband.envs.reach1d import Reach1DEnv
from evalband.panel import load_panel
from evalband.policies.reach1d import damped
from evalband.run import run_panel
from evalband.run._trace import DIGITS, MAX_POINTS, TRACE_EPISODES
from testkit import coin_panel


def _traces(store, run_id: str) -> dict[tuple[str, int, int], dict]:
    return {r.key: r.extra["trace"] for r in store.episode_records(run_id)
            if "trace" in r.extra}


def test_the_first_episodes_of_each_cell_carry_the_same_trace_on_every_path(store) -> None:
    panel = load_panel("reach1d-dynamics").model_copy(update={"episodes": 12})
    run_panel(panel, "reach1d:damped", store, run_id="single", batch=False)
    single = _traces(store, "single")
    cells = sorted({c.key for c in panel.cells()})
    assert len(cells) == 2
    assert sorted(single) == [(c, e, 0) for c in cells for e in range(TRACE_EPISODES)]
    # The env's batch simulator (the default), lockstep, and worker processes: same traces.
    run_panel(panel, "reach1d:damped", store, run_id="sim")
    run_panel(panel, "reach1d:damped", store, run_id="lock", batch=False, batch_size=5)
    run_panel(panel, "reach1d:damped", store, run_id="proc", backend="process", workers=2)
    for run_id in ("sim", "lock", "proc"):
        assert _traces(store, run_id) == single, run_id
    sim = {r.key: r for r in store.episode_records("sim")}
    assert sim[(cells[0], TRACE_EPISODES, 0)].extra.get("batched") is True  # untraced: batched


def test_a_stored_trace_is_the_envs_own_trajectory(store) -> None:
    panel = load_panel("reach1d-dynamics").model_copy(update={"episodes": 3})
    run_panel(panel, "reach1d:damped", store, run_id="r", batch=False)
    records = {r.key: r for r in store.episode_records("r")}
    spec = panel.episode_specs()[4]
    env = Reach1DEnv(record_trace=True, max_steps=30)
    obs, _ = env.reset(seed=spec.condition_seed, options=dict(spec.options))
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(damped(obs))
        done = terminated or truncated
    stored = records[spec.key].extra["trace"]
    assert set(stored) == {"t", "x", "v"} and len(stored["x"]) == records[spec.key].steps + 1
    for key in ("t", "x", "v"):
        assert stored[key] == pytest.approx(info["trace"][key], rel=10.0 ** (1 - DIGITS),
                                            abs=1e-12)


def hold(obs: np.ndarray) -> np.ndarray:
    """PushT: keep the pusher where it is."""
    return np.asarray(obs[:2])


def test_a_long_episode_is_decimated_first_and_last_kept(store) -> None:
    pytest.importorskip("mujoco")
    panel = load_panel({"name": "pt", "env": "evalband/PushT-v0", "episodes": 1, "seed": 5,
                        "budget": {"steps": 450}})
    run_panel(panel, hold, store, run_id="pt")
    (record,) = store.episode_records("pt")
    trace = record.extra["trace"]
    assert record.steps == 450 and len(trace["t"]) == MAX_POINTS
    assert trace["t"][0] == 0.0 and trace["t"][-1] == pytest.approx(45.0)
    assert set(trace) == {"t", "pusher_x", "pusher_y", "tee_x", "tee_y", "tee_yaw"}
    assert all(math.isfinite(v) for series in trace.values() for v in series)
    assert np.all(np.diff(trace["t"]) > 0)


def test_an_env_without_a_trace_hook_stores_none(store) -> None:
    run_panel(coin_panel(), "evalband.policies._builtin:zero_action", store, run_id="c")
    assert _traces(store, "c") == {}
