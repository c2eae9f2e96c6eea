"""``run --record-steps``: per-step actions, rewards and info values beside the store."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import evalband.store
from evalband.envs import make_env
from evalband.envs._resolve import close_env
from evalband.episode import EpisodeRecord
from evalband.panel import Panel, load_panel
from evalband.run import run_panel
from evalband.run._execute import env_options
from evalband.run._steps import StepRecorder
from evalband.store import RunStore, read_steps
from evalband.store._media import media_dir
from evalband.store._steps import steps_ref


def _replay(panel: Panel, record: EpisodeRecord, actions: np.ndarray,
            keys: tuple[str, ...] = ()) -> tuple[list[float], dict[str, list[float]]]:
    """Play the stored actions again in a fresh env: the rewards and info values it gives."""
    (spec,) = [s for s in panel.episode_specs() if s.key == record.key]
    env = make_env(panel.env, {**panel.env_kwargs, **spec.env_kwargs})
    try:
        env.reset(seed=spec.condition_seed, options=env_options(spec))
        rewards: list[float] = []
        info_values: dict[str, list[float]] = {k: [] for k in keys}
        for action in actions:
            _, reward, _, _, info = env.step(action)
            rewards.append(float(reward))
            for key in keys:
                info_values[key].append(float(info[key]))
    finally:
        close_env(env)
    return rewards, info_values


def test_reach1d_step_data_replays_to_the_same_rewards_and_outcome(store: RunStore) -> None:
    panel = load_panel("reach1d").with_overrides(episodes=3)
    run_id, _ = run_panel(panel, "reach1d:damped", store, run_id="steps", record_steps=True)
    records = store.episode_records(run_id)
    assert len(records) == 3 * len(panel.cells())
    assert store.require_run(run_id).extra["record_steps"] is True
    for record in records:
        data = read_steps(store.path, record)
        assert data is not None and steps_ref(record)["steps"] == record.steps  # type: ignore[index]
        assert data.steps == record.steps == data.action.shape[0]
        assert math.isclose(float(data.reward.sum()), record.metrics["return"], abs_tol=1e-9)
        rewards, _ = _replay(panel, record, data.action)
        assert rewards == data.reward.tolist()  # the same env, the stored actions: same rewards
    assert {r.outcome.value for r in records} >= {"success"}


def test_reacher_declared_info_keys_are_kept_per_step(store: RunStore, tmp_path: Path) -> None:
    panel = load_panel({"name": "reacher-steps", "env": "Reacher-v5", "episodes": 2, "seed": 3,
                        "budget": {"steps": 12}, "metrics": ["reward_dist", "reward_ctrl"],
                        "success": {"rule": "return", "threshold": -1.0}})
    run_id, _ = run_panel(panel, "random", store, run_id="reacher", record_steps=True)
    for record in store.episode_records(run_id):
        data = read_steps(store.path, record)
        assert data is not None and data.steps == record.steps == 12
        assert data.action.shape == (12, 2) and data.action.dtype == np.float32
        assert sorted(data.info) == ["reward_ctrl", "reward_dist"]
        assert data.info["reward_dist"][-1] == pytest.approx(record.metrics["reward_dist"])
        rewards, info = _replay(panel, record, data.action, ("reward_dist", "reward_ctrl"))
        np.testing.assert_allclose(data.reward, rewards, rtol=1e-12)
        np.testing.assert_allclose(data.info["reward_dist"], info["reward_dist"], rtol=1e-12)
        np.testing.assert_allclose(data.info["reward_ctrl"], info["reward_ctrl"], rtol=1e-6)


def test_a_resumed_run_keeps_the_step_data_of_every_episode(store: RunStore) -> None:
    panel = load_panel("reach1d").with_overrides(episodes=4)
    seen: list[EpisodeRecord] = []

    def stop(record: EpisodeRecord) -> bool:
        seen.append(record)
        return len(seen) == 3  # the first call stops early, as an interrupted run does

    run_panel(panel, "reach1d:damped", store, run_id="resume", record_steps=True,
              stop_when=stop)
    first = {r.key: steps_ref(r) for r in store.episode_records("resume")}
    assert len(first) == 3
    run_panel(panel, "reach1d:damped", store, run_id="resume", record_steps=True)
    records = store.episode_records("resume")
    assert len(records) == 4 * len(panel.cells())
    for record in records:
        assert read_steps(store.path, record) is not None
        if record.key in first:
            assert steps_ref(record) == first[record.key]


def test_identical_step_data_is_stored_once(store: RunStore) -> None:
    panel = load_panel("reach1d").with_overrides(episodes=2)
    for run_id in ("a", "b"):
        run_panel(panel, "reach1d:damped", store, run_id=run_id, record_steps=True)
    refs = {steps_ref(r)["sha256"] for r in store.episode_records("a")}  # type: ignore[index]
    assert refs == {steps_ref(r)["sha256"]  # type: ignore[index]
                    for r in store.episode_records("b")}
    assert len(list(media_dir(store.path).glob("*.npz"))) == len(refs)


def test_the_size_cap_keeps_the_first_steps_and_says_so(
        store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evalband.store._steps.MAX_STEP_BYTES", 10 * 16)  # 10 steps of 1 action
    panel = load_panel("reach1d").with_overrides(episodes=2)
    run_panel(panel, "reach1d:damped", store, run_id="capped", record_steps=True)
    long = [r for r in store.episode_records("capped") if r.steps > 10]
    assert long
    for record in long:
        data = read_steps(store.path, record)
        assert data is not None and data.steps == 10
        assert f"keeps the first 10 steps: the last {record.steps - 10}" in \
            record.extra["step_data_note"]


def test_process_backend_keeps_step_data(store: RunStore) -> None:
    panel = load_panel("reach1d").with_overrides(episodes=2)
    run_panel(panel, "reach1d:damped", store, run_id="proc", backend="process", workers=1,
              record_steps="obs")  # observations too: they travel from the worker
    serial = "serial"
    run_panel(panel, "reach1d:damped", store, run_id=serial, record_steps="obs")
    by_key = {r.key: steps_ref(r) for r in store.episode_records(serial)}
    for record in store.episode_records("proc"):
        assert steps_ref(record) == by_key[record.key]  # the same bytes from a worker
        assert "obs" in read_steps(store.path, record).obs  # type: ignore[union-attr]


def test_step_recorder_copies_actions_and_marks_missing_info() -> None:
    rec = StepRecorder(("coverage",))
    buffer = np.zeros(2)
    for t in range(3):
        buffer[:] = t  # a policy that reuses its output array
        rec.add(buffer, t, {} if t == 1 else {"coverage": t})
    data = evalband.store._steps.decode_steps(rec.pending()["data"])
    assert data.action[:, 0].tolist() == [0.0, 1.0, 2.0]
    assert np.isnan(data.info["coverage"][1]) and data.info["coverage"][2] == 2.0



def test_cli_record_steps(tmp_path: Path) -> None:
    from evalband.cli import main
    from evalband.store import open_store

    store = str(tmp_path / "s.sqlite")
    assert main(["run", "reach1d", "-p", "reach1d:damped", "--episodes", "1", "--run-id", "c",
                 "--record-steps", "--store", store, "--json"]) == 0
    with open_store(store) as st:
        records = st.episode_records("c")
        assert records and all(read_steps(st.path, r) is not None for r in records)


def test_step_data_travels_in_a_bundle(store: RunStore, tmp_path: Path) -> None:
    from evalband.store import open_store
    from evalband.store._bundle import export_bundle, import_bundle

    panel = load_panel("reach1d").with_overrides(episodes=1)
    run_panel(panel, "reach1d:damped", store, run_id="b", record_steps=True)
    bundle = export_bundle(store, "b", tmp_path / "bundle")
    with open_store(tmp_path / "other" / "s.sqlite") as other:
        assert import_bundle(other, bundle) == "b"
        for record in other.episode_records("b"):
            data = read_steps(other.path, record)
            assert data is not None and data.steps == record.steps
