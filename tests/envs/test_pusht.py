"""evalband/PushT-v0: starts, determinism, the success rule, the scripted expert, demos, runner.

Oracles: the spec's stated start distribution and success rule, recomputed here from the
MuJoCo state with plain numpy; fresh hand-written rollouts for determinism and for
``collect_demos``' seed rule; the serial backend for the process backend.
"""

from __future__ import annotations

import math
import pickle
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mujoco")

from evalband.envs.pusht import ENV_ID, TRACE_KEYS, PushTEnv, record_traces  # noqa: E402
from evalband.envs.pusht_model import (  # noqa: E402
    ACT_DIM,
    OBS_DIM,
    OBS_NAMES,
    PUSHER_START_HALF,
    WORKSPACE,
)
from evalband.episode import Outcome  # noqa: E402
from evalband.errors import InvalidInputError, InvalidParameterError  # noqa: E402
from evalband.panel import load_panel  # noqa: E402
from evalband.policies import resolve_policy  # noqa: E402
from evalband.policies.pusht import ScriptedExpert, collect_demos, expert  # noqa: E402
from evalband.run import run_panel  # noqa: E402
from evalband.stats import interval  # noqa: E402
from testkit import comparable  # noqa: E402


def rollout(env: PushTEnv, seed: int, policy, start: str = "train"):
    """Play one episode; return (obs rows, actions, final info)."""
    obs, _ = env.reset(seed=seed, options={"start": start})
    rows, actions = [obs], []
    while True:
        action = policy(obs)
        actions.append(np.asarray(action))
        obs, _, terminated, truncated, info = env.step(action)
        rows.append(obs)
        if terminated or truncated:
            return np.array(rows), np.array(actions), info


def pusht_panel(**overrides):
    data = {
        "name": "pusht-test",
        "env": ENV_ID,
        "episodes": 5,
        "seed": 11,
        "budget": {"steps": 200},
        "factors": {"start": ["train", "held_out"]},
    }
    data.update(overrides)
    return load_panel(data)


# --------------------------------------------------------------------------- the env
def test_import_envs_does_not_import_mujoco() -> None:
    code = (
        "import sys, evalband.envs, evalband.policies.pusht, gymnasium\n"
        "assert 'mujoco' not in sys.modules\n"
        "assert 'evalband/PushT-v0' in gymnasium.registry\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_observation_layout_and_gymnasium_checker() -> None:
    from gymnasium.utils.env_checker import check_env

    env = PushTEnv()
    obs, info = env.reset(seed=3)
    assert OBS_DIM == len(OBS_NAMES) == obs.shape[0] and obs.dtype == np.float64
    assert ACT_DIM == env.action_space.shape[0] == 2
    q = env.data.qpos  # independent read of the MuJoCo state, by joint name
    def joint(name):
        return q[env.model.joint(name).qposadr[0]]
    expected = [joint("pusher_x"), joint("pusher_y"), joint("tee_x"), joint("tee_y"),
                math.cos(joint("tee_yaw")), math.sin(joint("tee_yaw")), 0.0, 0.0, 1.0, 0.0]
    np.testing.assert_allclose(obs, expected, atol=1e-12)
    check_env(PushTEnv(), skip_render_check=True)


def test_same_seed_same_trajectory_different_seeds_differ() -> None:
    noisy = lambda seed: ScriptedExpert(noise=0.01, seed=seed)  # noqa: E731
    env = PushTEnv(max_steps=60)
    a_obs, a_act, _ = rollout(env, 123, noisy(1))
    rollout(env, 456, noisy(2), start="held_out")  # the env is reused in between
    b_obs, b_act, _ = rollout(env, 123, noisy(1))
    c_obs, _, _ = rollout(PushTEnv(max_steps=60), 123, noisy(1))  # and a fresh env
    assert np.array_equal(a_obs, b_obs) and np.array_equal(a_act, b_act)
    assert np.array_equal(a_obs, c_obs)
    d_obs, _, _ = rollout(env, 124, noisy(1))
    assert not np.array_equal(a_obs[0], d_obs[0])


@pytest.mark.parametrize(("start", "low", "high"), [("train", 0.10, 0.24),
                                                     ("held_out", 0.24, 0.30)])
def test_start_distributions(start: str, low: float, high: float) -> None:
    env = PushTEnv()
    radii, yaws = [], []
    for seed in range(300):
        obs, info = env.reset(seed=seed, options={"start": start})
        pusher, tee = obs[0:2], obs[2:4]
        radius = math.hypot(*tee)
        radii.append(radius)
        yaws.append(math.atan2(obs[5], obs[4]))
        assert low <= radius <= high
        assert math.hypot(*(pusher - tee)) > 0.13
        assert np.all(np.abs(pusher) <= PUSHER_START_HALF)
        assert info["start"] == start
    # The whole annulus and every yaw are used (300 uniform draws: misses are ~1e-10 events).
    span = high - low
    assert min(radii) < low + 0.1 * span and max(radii) > high - 0.1 * span
    assert min(yaws) < -2.8 and max(yaws) > 2.8
    assert PushTEnv().reset(seed=5)[0].tolist() == env.reset(seed=5)[0].tolist()  # default


def test_reset_options_are_checked() -> None:
    env = PushTEnv()
    with pytest.raises(InvalidParameterError, match="allowed keys: start"):
        env.reset(seed=0, options={"begin": "train"})
    with pytest.raises(InvalidParameterError, match="train, held_out"):
        env.reset(seed=0, options={"start": "far"})
    for kwargs in ({"dt": 0.0123}, {"max_steps": 0}, {"pos_tol": -1.0}, {"yaw_tol": math.nan}):
        with pytest.raises(InvalidParameterError):
            PushTEnv(**kwargs)


def test_success_rule_at_and_around_the_target() -> None:
    env = PushTEnv(pos_tol=0.02, yaw_tol=0.2)
    away = (0.3, 0.3)  # the pusher, far from the block

    def first_step(tee_xy, yaw):
        env.set_state(tee_xy, yaw, away)
        return env.step(np.array(away))

    _, reward, terminated, truncated, info = first_step((0.0, 0.0), 0.0)
    assert terminated and not truncated and info["is_success"] and info["outcome"] == "success"
    assert reward == 1.0
    assert first_step((0.0, 0.0), 2 * math.pi + 0.1)[4]["is_success"]  # yaw wraps
    assert first_step((0.012, -0.012), -0.15)[4]["is_success"]  # 0.017 m, 0.15 rad
    for tee, yaw in [((0.025, 0.0), 0.0), ((0.0, 0.0), 0.25), ((0.0, 0.0), math.pi)]:
        _, reward, terminated, truncated, info = first_step(tee, yaw)
        assert not terminated and not info["is_success"] and reward == 0.0
    # Against the rule recomputed from the MuJoCo state, along an expert rollout.
    obs, _ = env.reset(seed=8)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert(obs))
        x, y, yaw = (float(env.data.qpos[env.model.joint(n).qposadr[0]])
                     for n in ("tee_x", "tee_y", "tee_yaw"))
        wrapped = abs(math.atan2(math.sin(yaw), math.cos(yaw)))
        assert info["is_success"] == (math.hypot(x, y) <= 0.02 and wrapped <= 0.2)
        done = terminated or truncated
    assert info["outcome"] == "success"


def test_budget_truncates_and_leaving_the_table_fails() -> None:
    env = PushTEnv(max_steps=4)
    obs, _ = env.reset(seed=2)
    for step in range(4):
        obs, _, terminated, truncated, info = env.step(obs[:2])  # hold still
        assert not terminated and truncated == (step == 3)
    assert info["outcome"] == "timeout" and info["steps"] == 4
    env.set_state((0.6, 0.0), 0.0, (0.0, 0.0))
    _, _, terminated, truncated, info = env.step(np.zeros(2))
    assert terminated and not truncated and info["outcome"] == "failure"


def test_actions_are_checked_and_clipped_to_the_workspace() -> None:
    env = PushTEnv()
    obs, _ = env.reset(seed=4)
    with pytest.raises(InvalidInputError, match="2 finite numbers"):
        env.step(np.zeros(3))
    with pytest.raises(InvalidInputError):
        env.step(np.array([np.nan, 0.0]))
    env.set_state((0.0, 0.2), 0.0, (-0.3, -0.3))
    for _ in range(30):
        obs, *_ = env.step(np.array([5.0, -5.0]))
    np.testing.assert_allclose(obs[:2], [WORKSPACE, -WORKSPACE], atol=2e-3)


def test_trace_is_recorded() -> None:
    env = PushTEnv(record_trace=True)
    obs0, _ = env.reset(seed=9)
    obs = obs0
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert(obs))
        done = terminated or truncated
    trace = info["trace"]
    assert set(trace) == {"t", "pusher_x", "pusher_y", "tee_x", "tee_y", "tee_yaw"}
    assert all(len(v) == info["steps"] + 1 for v in trace.values())
    np.testing.assert_allclose(np.diff(trace["t"]), env.dt)
    assert [trace[k][0] for k in ("pusher_x", "pusher_y", "tee_x", "tee_y")] == obs0[:4].tolist()
    assert [trace[k][-1] for k in ("pusher_x", "pusher_y", "tee_x", "tee_y")] == obs[:4].tolist()
    assert math.cos(trace["tee_yaw"][-1]) == pytest.approx(obs[4])
    assert "trace" not in rollout(PushTEnv(), 9, expert)[2]
    # record_traces: a few rollouts for plots, the same episodes as above.
    traces = record_traces(expert, [9, 10], start="held_out")
    assert [t["seed"] for t in traces] == [9, 10] and traces[0]["start"] == "held_out"
    again = rollout(PushTEnv(record_trace=True), 10, expert, "held_out")[2]
    assert {k: traces[1][k] for k in TRACE_KEYS} == again["trace"]
    assert traces[1]["outcome"] == again["outcome"] and traces[1]["steps"] == again["steps"]


# --------------------------------------------------------------------------- the expert
def test_expert_solves_train_starts_with_a_wilson_band() -> None:
    env = PushTEnv()
    results = {}
    for start, n in (("train", 100), ("held_out", 40)):
        outcomes = [rollout(env, 10_000 + i, expert, start)[2]["outcome"] for i in range(n)]
        k = outcomes.count("success")
        band = interval(k, n)  # Wilson
        results[start] = band
        print(f"\nPushT expert, {start} starts: {k}/{n} = {k / n:.2f}, "
              f"Wilson 95% [{band.low:.3f}, {band.high:.3f}]")
    assert results["train"].method == "wilson"
    assert results["train"].estimate >= 0.8
    assert results["train"].low >= 0.8  # the claim holds with its band, not just its estimate


def test_scripted_expert_noise_is_seeded_and_picklable() -> None:
    env = PushTEnv()
    obs, _ = env.reset(seed=1)
    a, b, c = ScriptedExpert(0.01, seed=7), ScriptedExpert(0.01, seed=7), ScriptedExpert(0.01, 8)
    first = a(obs)
    assert np.array_equal(first, b(obs)) and not np.array_equal(first, c(obs))
    clone = pickle.loads(pickle.dumps(a))
    assert np.array_equal(clone(obs), a(obs))  # the generator state travels with it
    assert np.array_equal(ScriptedExpert()(obs), expert(obs))
    assert resolve_policy("pusht:expert") is expert
    with pytest.raises(InvalidParameterError):
        ScriptedExpert(noise=-0.1)
    with pytest.raises(InvalidInputError):
        expert(np.zeros(4))


def test_collect_demos_shapes_and_seed_rule() -> None:
    obs, actions, ids = collect_demos(4, seed=20, noise=0.01, max_steps=50)
    assert obs.dtype == np.float32 and actions.dtype == np.float32 and ids.dtype == np.int64
    assert obs.shape == (len(ids), OBS_DIM) and actions.shape == (len(ids), ACT_DIM)
    assert ids.tolist() == sorted(ids.tolist()) and set(ids.tolist()) == {0, 1, 2, 3}
    env = PushTEnv(max_steps=50)
    for i in range(4):
        rows, acts, _ = rollout(env, 20 + i, ScriptedExpert(0.01, seed=20 + i))
        assert np.array_equal(obs[ids == i], rows[:-1].astype(np.float32))
        assert np.array_equal(actions[ids == i], acts.astype(np.float32))
    with pytest.raises(InvalidParameterError):
        collect_demos(0, seed=0)


# --------------------------------------------------------------------------- the runner
def test_runs_through_the_runner(store) -> None:
    panel = pusht_panel()
    run_id, summary = run_panel(panel, "pusht:expert", store, run_id="pusht")
    records = store.episode_records(run_id)
    assert len(records) == summary.n_attempted == 10
    assert {r.slices["start"] for r in records} == {"train", "held_out"}
    env = PushTEnv()
    for record in records:  # each record is the bare episode of its condition seed
        _, acts, info = rollout(env, record.condition_seed, expert, record.slices["start"])
        assert record.outcome is Outcome(info["outcome"])
        assert record.steps == len(acts) == info["steps"]
        assert record.sim_time_s == pytest.approx(record.steps * 0.1)
        assert record.terminated == (info["outcome"] != "timeout")
    assert summary.counts["success"] >= 8


def test_serial_and_process_backends_identical(store) -> None:
    panel = pusht_panel(episodes=4, budget={"steps": 40})
    run_panel(panel, "pusht:expert", store, run_id="serial")
    run_panel(panel, "pusht:expert", store, run_id="proc", backend="process", workers=2)
    a = [comparable(r) for r in store.episode_records("serial")]
    b = [comparable(r) for r in store.episode_records("proc")]
    assert len(a) == 8 and a == b
    assert any(r["outcome"] == "timeout" for r in a)  # the 40-step budget cut some short
