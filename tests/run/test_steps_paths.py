"""Step data from every way of playing: lockstep, the vector backend, until-decided, observations.

Each path must keep the very columns the one-at-a-time player keeps (the same bytes, so the
same content-addressed file), and stored observations must be what the env gives when the
stored actions are replayed from the episode's seed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalband.envs import make_env
from evalband.envs._resolve import close_env
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.panel import load_panel
from evalband.run import run_panel
from evalband.run._execute import env_options
from evalband.store import RunStore, read_steps
from evalband.store._steps import steps_ref


def _refs(store: RunStore, run_id: str) -> dict[tuple[str, int, int], str]:
    out = {}
    for record in store.episode_records(run_id):
        ref = steps_ref(record)
        assert ref is not None, record.key
        out[record.key] = ref["sha256"]
    return out


def test_lockstep_and_vector_keep_the_serial_step_data_with_observations(
        store: RunStore) -> None:
    panel = load_panel("reach1d").with_overrides(episodes=2)
    run_panel(panel, "reach1d:damped", store, run_id="serial", batch=False, record_steps="obs")
    run_panel(panel, "reach1d:damped", store, run_id="lockstep", batch_size=3,
              record_steps="obs")
    run_panel(panel, "reach1d:damped", store, run_id="vector", backend="vector", workers=2,
              record_steps="obs")
    serial = _refs(store, "serial")
    assert len(serial) == 2 * len(panel.cells())
    assert _refs(store, "lockstep") == serial  # the same columns, byte for byte
    assert _refs(store, "vector") == serial
    assert store.require_run("vector").extra["record_obs"] is True

    # the stored observations are the env's: replay the stored actions from the seed
    for record in store.episode_records("lockstep"):
        data = read_steps(store.path, record)
        assert data is not None and set(data.obs) == {"obs"}
        assert data.obs["obs"].shape[0] == data.steps == record.steps
        (spec,) = [s for s in panel.episode_specs() if s.key == record.key]
        env = make_env(panel.env, {**panel.env_kwargs, **spec.env_kwargs})
        try:
            obs, _ = env.reset(seed=spec.condition_seed, options=env_options(spec))
            seen = []
            for action in data.action:
                seen.append(np.array(obs, copy=True))
                obs, *_ = env.step(action)
        finally:
            close_env(env)
        assert np.array_equal(np.stack(seen), data.obs["obs"])


def test_a_camera_observation_is_left_out_and_said(store: RunStore) -> None:
    pytest.importorskip("gym_pusht")
    panel = load_panel({"name": "pusht-obs", "env": "gym_pusht/PushT-v0",
                        "imports": ["gym_pusht"], "episodes": 1, "seed": 0,
                        "env_kwargs": {"obs_type": "pixels_agent_pos"},
                        "budget": {"steps": 4}})
    run_panel(panel, "evalband.policies._builtin:zero_action", store, run_id="p",
              record_steps="obs")
    (record,) = store.episode_records("p")
    data = read_steps(store.path, record)
    assert data is not None and sorted(data.obs) == ["obs/agent_pos"]
    assert data.obs["obs/agent_pos"].shape == (record.steps, 2)
    note = record.extra["step_data_note"]
    assert "observation 'pixels' is not kept" in note and "4096" in note


def test_record_steps_takes_true_false_or_obs(store: RunStore) -> None:
    panel = load_panel("reach1d").with_overrides(episodes=1)
    with pytest.raises(InvalidParameterError, match="'obs'"):
        run_panel(panel, "reach1d:damped", store, record_steps="images")
    assert store.list_runs() == []


def test_until_decided_keeps_step_data_of_every_chunk(tmp_path: Path, capsys) -> None:
    from evalband.cli import main
    from evalband.store import open_store

    db = str(tmp_path / "s.sqlite")
    panel = tmp_path / "reach.yaml"  # a short panel: two chunks of 8 episodes
    panel.write_text("name: reach-short\nenv: evalband/Reach1D-v0\nepisodes: 16\nseed: 7\n"
                     "budget: {steps: 30}\n")
    assert main(["run", str(panel), "-p", "reach1d:baseline", "--run-id", "base",
                 "--store", db, "--json"]) == 0
    code = main(["run", str(panel), "-p", "reach1d:damped", "--against", "base",
                 "--until-decided", "--chunk", "8", "--record-obs", "--run-id", "cand",
                 "--store", db, "--json"])
    capsys.readouterr()
    assert code in (0, 3, 4, 5, 6)  # decided or not: what it played keeps its steps
    with open_store(db) as st:
        records = st.episode_records("cand")
        assert records and st.require_run("cand").extra["record_steps"] is True
        for record in records:
            data = read_steps(st.path, record)
            assert data is not None and data.steps == record.steps and "obs" in data.obs


def test_the_recorder_stores_step_data_from_a_users_own_loop(store: RunStore) -> None:
    """A user's loop on the real Reacher-v5: what the Recorder stored replays to the same."""
    pytest.importorskip("gymnasium.envs.mujoco")
    from evalband.run import Recorder
    from evalband.store._steps import StepData

    panel = load_panel({"name": "reacher-own-loop", "env": "Reacher-v5", "episodes": 2,
                        "seed": 1, "budget": {"steps": 8}, "metrics": ["reward_dist"]})
    rng = np.random.default_rng(0)
    played = {}
    with Recorder(store, panel, "my-loop", run_id="own") as rec:
        for spec in panel.episode_specs():
            env = make_env(panel.env, dict(panel.env_kwargs))
            steps = rec.steps(observations=True)
            try:
                obs, _ = env.reset(seed=spec.condition_seed)
                for _ in range(8):
                    action = rng.uniform(-1, 1, size=2).astype(np.float32)
                    new_obs, reward, _, _, info = env.step(action)
                    steps.add(action, reward, info, obs=obs)
                    obs = new_obs
            finally:
                close_env(env)
            record = rec.log(episode=spec.episode, outcome="timeout", step_data=steps)
            played[record.key] = spec.condition_seed
        with pytest.raises(InvalidInputError, match="step_data takes"):
            rec.log(episode=1, outcome="timeout", step_data=[1, 2])  # type: ignore[arg-type]
    records = store.episode_records("own")
    assert len(records) == 2
    for record in records:
        data = read_steps(store.path, record)
        assert isinstance(data, StepData) and data.steps == record.steps == 8
        assert data.obs["obs"].shape == (8, 10) and not np.isnan(data.info["reward_dist"]).any()
        env = make_env(panel.env, dict(panel.env_kwargs))
        try:
            obs, _ = env.reset(seed=played[record.key])
            for t, action in enumerate(data.action):
                assert np.array_equal(obs, data.obs["obs"][t])
                obs, reward, _, _, info = env.step(action)
                assert reward == data.reward[t] and info["reward_dist"] == data.info[
                    "reward_dist"][t]
        finally:
            close_env(env)
