"""Tests of the reaching lab env, its conditions and its batch simulator.

Oracle: the reaching-lab seed (shared/seeds/002_4e7e9c5b524a571b.txt), "Robot policy
evaluation: success, failure, and episode counts":
* its standard-library program ("Reproduce the batch in Python"), embedded below with its
  logic verbatim (only parametrised: seed, N, STEPS, NOISE, and the changed/nominal gain
  mapping of the seed's BC exercise), compared episode by episode;
* the numbers the seed publishes (tables, "Inspect the policy evaluation experiment",
  "Try these changes", the hand-worked step, Exercise 2).
Nothing here is asserted against numbers copied from evalband's own output.
"""

from __future__ import annotations

import importlib
from math import sqrt

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalband.envs
from evalband.envs import ENV_ID, Reach1DEnv, advance, episode_condition_seed, rollout_batch
from evalband.envs._lcg import lcg_jump, lcg_states, lcg_uniforms
from evalband.envs._reach1d_core import (
    DRAWS_PER_EPISODE,
    classify_samples,
    conditions,
    episode_condition_seeds,
    judge,
    settle,
    unit_errors,
)
from evalband.envs.reach1d import OPTION_KEYS
from evalband.errors import EvalbandError, InvalidInputError, InvalidParameterError
from evalband.policies.reach1d import baseline, damped

# --------------------------------------------------------------------------------------
# The seed's program, logic verbatim (globals turned into parameters).
# --------------------------------------------------------------------------------------


def seed_program(seed=7, N=64, STEPS=30, NOISE=0.02, DT=0.2, dynamics="lab"):  # noqa: N803
    state = seed

    def draw():
        nonlocal state
        state = (1664525 * state + 1013904223) % (2**32)
        return state / (2**32)

    conditions = []
    for _ in range(N):
        x, v = -1 + draw(), -0.2 + 0.4 * draw()
        if dynamics == "lab":
            gain, disturbance = 0.8 + 0.4 * draw(), -0.3 + 0.6 * draw()
        elif dynamics == "changed":  # the BC exercise: g ~ U[0.6, 1.4], d ~ U[-0.25, 0.25]
            gain, disturbance = 0.6 + 0.8 * draw(), -0.25 + 0.5 * draw()
        else:  # nominal: g = 1, d = 0 (the two draws are still consumed)
            draw(), draw()
            gain, disturbance = 1, 0
        errors = [2 * draw() - 1 for _ in range(40)]
        conditions.append((x, v, gain, disturbance, errors))

    def episode(condition, damping):
        x, v, gain, disturbance, errors = condition
        settled = 0
        for k in range(STEPS):
            u = max(-1, min(1, -2 * (x + NOISE * errors[k]) - damping * v))
            acceleration = gain * u + disturbance
            new_v = v + DT * acceleration
            x += DT * (v + new_v) / 2
            v = new_v
            settled = settled + 1 if abs(x) <= 0.1 and abs(v) <= 0.15 else 0
            if abs(x) >= 1.25:
                return "failure", (k + 1) * DT
            if settled >= 3:
                return "success", (k + 1) * DT
        return "timeout", STEPS * DT

    base = [episode(c, 0.2) for c in conditions]
    damp = [episode(c, 1.8) for c in conditions]
    return conditions, base, damp


def seed_wilson(successes, N):  # noqa: N803 - the seed's wilson(), verbatim
    z, p = 1.959963984540054, successes / N
    denominator = 1 + z * z / N
    center = (p + z * z / (2 * N)) / denominator
    half = z * sqrt(p * (1 - p) / N + z * z / (4 * N * N)) / denominator
    return center - half, center + half


def run_env(policy, condition_seed, **kwargs):
    """One episode through the Gymnasium API; returns (outcome, sim_time, term, trunc, info)."""
    env = Reach1DEnv(**kwargs)
    obs, _ = env.reset(seed=condition_seed)
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        if terminated or truncated:
            return info["outcome"], info["steps"] * env.dt, terminated, truncated, info


DEFAULT = episode_condition_seeds(7, 64)


# --------------------------------------------------------------------------------------
# LCG and conditions
# --------------------------------------------------------------------------------------


def naive_states(seed, n):
    out = []
    for _ in range(n):
        seed = (1664525 * seed + 1013904223) % (2**32)
        out.append(seed)
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.integers(0, 300))
def test_lcg_jump_matches_iteration_and_composes(state, a, b):
    assert lcg_jump(state, a) == ([state, *naive_states(state, a)])[a]
    assert lcg_jump(lcg_jump(state, a), b) == lcg_jump(state, a + b)


def test_lcg_jump_large_stride_is_fast_and_consistent():
    # 10**12 steps composed two ways; O(log n) makes this instant.
    assert lcg_jump(7, 10**12) == lcg_jump(lcg_jump(7, 10**12 - 44), 44)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=5),
    st.integers(0, 60),
    st.integers(0, 50),
)
def test_vectorised_jump_ahead_equals_the_sequential_lcg(seeds, first, count):
    # Brute-force oracle: step each stream one draw at a time with Python integers.
    got = lcg_states(seeds, count, first=first)
    assert got.dtype == np.uint32 and got.shape == (count, len(seeds))
    for i, s in enumerate(seeds):
        assert got[:, i].tolist() == [s, *naive_states(s, first + count)][first:][:count]
    u = lcg_uniforms(seeds, count)
    for i, s in enumerate(seeds):
        assert u[i].tolist() == [state / 2**32 for state in naive_states(s, count)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=20))
def test_unit_errors_equal_the_seed_expression(states):
    # The seed's errors are 2 * draw() - 1 with draw() = state / 2**32.
    got = unit_errors(np.asarray(states, dtype=np.uint32))
    assert got.tolist() == [2 * (s / 2**32) - 1 for s in states]


def test_in_place_advance_and_settle_equal_the_allocating_forms():
    rng = np.random.default_rng(3)
    x, v, u, g, d = (rng.uniform(-1.5, 1.5, 500) for _ in range(5))
    ref_x, ref_v = advance(x, v, u, g, d, 0.2)
    buffers = (np.empty(500), np.empty(500))
    out_x, out_v = advance(x, v, u, g, d, 0.2, out=buffers)
    assert out_x is buffers[0] and out_v is buffers[1]
    assert out_x.tolist() == ref_x.tolist() and out_v.tolist() == ref_v.tolist()
    # The seed's scalar arithmetic, one episode at a time.
    for i in range(500):
        new_v = v[i] + 0.2 * (g[i] * u[i] + d[i])
        assert (ref_x[i], ref_v[i]) == (x[i] + 0.2 * (v[i] + new_v) / 2, new_v)
    streak = rng.integers(0, 3, 500).astype(np.int8)
    expected, _ = judge(x * 0.1, v * 0.2, streak.astype(np.int64), 1, 30)
    abs_x, inside = np.empty(500), np.empty(500, dtype=bool)
    settle(x * 0.1, v * 0.2, streak, abs_x, inside, np.empty(500))
    assert streak.tolist() == expected.tolist() and abs_x.tolist() == np.abs(x * 0.1).tolist()


def test_episode_condition_seed_is_the_stream_position():
    states = [7, *naive_states(7, 44 * 10)]
    assert DRAWS_PER_EPISODE == 44
    for i in range(10):
        assert episode_condition_seed(7, i) == states[44 * i]
    assert episode_condition_seeds(7, 10).tolist() == [states[44 * i] for i in range(10)]
    assert episode_condition_seeds(7, 3, start=5).tolist() == [states[44 * i] for i in (5, 6, 7)]
    assert episode_condition_seeds(7, 0).tolist() == []


@pytest.mark.parametrize("dynamics", ["lab", "nominal", "changed"])
def test_conditions_equal_the_seed_program_draws(dynamics):
    ref, _, _ = seed_program(seed=7, N=256, dynamics=dynamics)
    got = conditions(episode_condition_seeds(7, 256), dynamics=dynamics)
    for i, (x, v, g, d, errors) in enumerate(ref):
        assert (got.x0[i], got.v0[i], got.gain[i], got.disturbance[i]) == (x, v, g, d)
        assert got.errors[i].tolist() == errors


def test_episode_one_conditions_match_the_seed():
    # Seed, lab panel "Inspect episode 1 of 64" (index 0 of seed 7).
    c = conditions([episode_condition_seed(7, 0)])
    assert round(float(c.x0[0]), 6) == -0.761219
    assert round(float(c.v0[0]), 6) == 0.165397
    assert round(float(c.gain[0]), 6) == 1.044997
    assert round(float(c.disturbance[0]), 6) == 0.256189


def test_256_episodes_keep_the_first_64():
    # Seed, "Select 256 episodes. The first 64 conditions stay fixed".
    c64 = conditions(episode_condition_seeds(7, 64))
    c256 = conditions(episode_condition_seeds(7, 256))
    for name in ("x0", "v0", "gain", "disturbance", "errors"):
        np.testing.assert_array_equal(getattr(c256, name)[:64], getattr(c64, name))
    assert len(np.unique(c256.x0)) == 256


def test_per_episode_dynamics_mix_rows():
    seeds = DEFAULT[:3]
    mixed = conditions(seeds, dynamics=["lab", "NOMINAL", "changed"])
    for i, dyn in enumerate(["lab", "nominal", "changed"]):
        single = conditions(seeds[i : i + 1], dynamics=dyn)
        assert (mixed.gain[i], mixed.disturbance[i]) == (single.gain[0], single.disturbance[0])
    assert mixed.dynamics.tolist() == ["lab", "nominal", "changed"]


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: conditions([-1]), "[0, 2**32)"),
        (lambda: conditions([2**32]), "[0, 2**32)"),
        (lambda: conditions([1.5]), "integers"),
        (lambda: conditions([7], dynamics="wobbly"), "lab, nominal, changed"),
        (lambda: conditions([7, 8], dynamics=["lab"]), "one per episode"),
        (lambda: episode_condition_seed(7, -1), ">= 0"),
        (lambda: episode_condition_seed(2**32, 0), "[0, 2**32)"),
        (lambda: lcg_jump(7, -3), ">= 0"),
    ],
)
def test_bad_condition_input_raises_named_errors(call, fragment):
    with pytest.raises(InvalidInputError) as info:
        call()
    assert fragment in str(info.value)


# --------------------------------------------------------------------------------------
# Dynamics and outcome rule
# --------------------------------------------------------------------------------------


def test_hand_worked_step():
    # Seed: x=-0.5, v=0.1, g=1, d=0.1, eps=0; baseline u = 0.98, x' = -0.4584, v' = 0.316.
    u = baseline(np.array([-0.5, 0.1]))
    assert u.shape == (1,)
    assert u[0] == pytest.approx(0.98, abs=1e-15)
    x1, v1 = advance(-0.5, 0.1, u[0], 1.0, 0.1, 0.2)
    assert float(x1) == pytest.approx(-0.4584, abs=1e-12)
    assert float(v1) == pytest.approx(0.316, abs=1e-12)
    out = classify_samples([float(x1)], [float(v1)], max_steps=30)
    assert out.outcome is None and out.streaks == (0,)  # "satisfies neither success band"


def test_exercise_2_stopping_rule_priority():
    # Seed, Exercise 2: the final three allowed samples; earlier samples had no streak.
    prefix_x, prefix_v = [0.5] * 27, [0.0] * 27
    xs = [*prefix_x, 0.08, 0.07, 0.06]
    late = classify_samples(xs, [*prefix_v, 0.10, 0.16, 0.10], max_steps=30)
    assert late.streaks[-3:] == (1, 0, 1)
    assert (late.outcome, late.steps, late.terminated, late.truncated) == (
        "timeout", 30, False, True,
    )
    settled = classify_samples(xs, [*prefix_v, 0.10, 0.14, 0.10], max_steps=30)
    assert settled.streaks[-3:] == (1, 2, 3)
    assert (settled.outcome, settled.steps, settled.terminated, settled.truncated) == (
        "success", 30, True, False,
    )


def test_boundary_failure_has_priority_and_bands_are_inclusive():
    assert classify_samples([1.25], [0.0], 5).outcome == "failure"
    assert classify_samples([-1.25], [0.0], 1).outcome == "failure"  # beats the timeout
    assert classify_samples([1.2499], [0.0], 5).outcome is None
    on_edge = classify_samples([0.10, -0.10, 0.10], [0.15, -0.15, 0.0], 30)
    assert on_edge.outcome == "success" and on_edge.steps == 3
    reset = classify_samples([0.0, 0.0, 0.2, 0.0, 0.0, 0.0], [0.0] * 6, 30)
    assert reset.streaks == (1, 2, 0, 1, 2, 3) and reset.steps == 6


# --------------------------------------------------------------------------------------
# The seed's published numbers
# --------------------------------------------------------------------------------------


def test_default_panel_counts_times_and_pairs():
    base = rollout_batch(baseline, DEFAULT)
    damp = rollout_batch(damped, DEFAULT)
    # Seed table "The default 64-episode batch gives".
    assert base.counts() == {"success": 9, "failure": 7, "timeout": 48}
    assert damp.counts() == {"success": 50, "failure": 0, "timeout": 14}
    # Mean completion time among successes: 13.6 s / 9 and 118.4 s / 50.
    assert np.nanmean(base.time_to_success_s) == pytest.approx(1.511111, abs=5e-7)
    assert np.nanmean(damp.time_to_success_s) == pytest.approx(2.368000, abs=5e-7)
    # Seed: paired counts 8 both, 1 baseline-only, 42 damped-only, 13 neither.
    b, d = base.outcome == "success", damp.outcome == "success"
    assert (int(np.sum(b & d)), int(np.sum(b & ~d)), int(np.sum(~b & d))) == (8, 1, 42)
    assert int(np.sum(~b & ~d)) == 13
    # Timeouts are truncated, task outcomes terminated.
    assert np.array_equal(base.truncated, base.outcome == "timeout")
    assert np.array_equal(base.terminated, base.outcome != "timeout")
    # The seed's Wilson bounds follow from these counts.
    assert [round(100 * w, 6) for w in seed_wilson(9, 64)] == [7.578573, 24.616282]
    assert [round(100 * w, 6) for w in seed_wilson(50, 64)] == [66.567216, 86.497681]


def test_episode_one_inspection():
    # Seed, "Inspect the policy evaluation experiment": episode 1 (index 0).
    seed0 = episode_condition_seed(7, 0)
    outcome, t, term, trunc, info = run_env(baseline, seed0, record_trace=True)
    assert (outcome, term, trunc) == ("failure", True, False)
    assert t == pytest.approx(2.6)
    trace = info["trace"]
    assert trace["t"][0] == 0.0 and len(trace["t"]) == info["steps"] + 1
    i1 = 5  # t = 1 s after five 0.2 s actions
    assert trace["t"][i1] == pytest.approx(1.0)
    assert round(trace["x"][i1], 6) == 0.020273
    assert round(trace["v"][i1], 6) == 1.246140
    outcome, t, term, trunc, info = run_env(damped, seed0)
    assert (outcome, term, trunc) == ("timeout", False, True)
    assert t == pytest.approx(6.0)
    assert round(info["x"], 6) == 0.125754
    assert abs(info["x"]) > 0.10  # "outside the position band"


def test_two_second_budget():
    # Seed, "Select Two-second budget": 7 and 16 successes; both episode-1 runs time out.
    base = rollout_batch(baseline, DEFAULT, max_steps=10)
    damp = rollout_batch(damped, DEFAULT, max_steps=10)
    assert base.counts()["success"] == 7
    assert damp.counts()["success"] == 16
    assert base.outcome[0] == "timeout" and damp.outcome[0] == "timeout"
    assert base.sim_time_s.max() == pytest.approx(2.0)


# --------------------------------------------------------------------------------------
# Against the seed's program, episode by episode
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [7, 0, 12345, 2**32 - 1])
@pytest.mark.parametrize(("steps", "noise"), [(30, 0.02), (10, 0.02), (40, 0.05)])
def test_batch_matches_seed_program(seed, steps, noise):
    _, ref_base, ref_damp = seed_program(seed=seed, N=256, STEPS=steps, NOISE=noise)
    seeds = episode_condition_seeds(seed, 256)
    for policy, ref in ((baseline, ref_base), (damped, ref_damp)):
        got = rollout_batch(policy, seeds, max_steps=steps, noise=noise)
        assert got.outcome.tolist() == [status for status, _ in ref]
        assert got.sim_time_s.tolist() == [t for _, t in ref]  # exact, as the seed's (k+1)*DT


@pytest.mark.parametrize("dynamics", ["nominal", "changed"])
def test_batch_matches_seed_program_other_dynamics(dynamics):
    _, ref_base, ref_damp = seed_program(seed=7, N=256, dynamics=dynamics)
    seeds = episode_condition_seeds(7, 256)
    for policy, ref in ((baseline, ref_base), (damped, ref_damp)):
        got = rollout_batch(policy, seeds, dynamics=dynamics)
        assert list(zip(got.outcome.tolist(), got.sim_time_s.tolist(), strict=True)) == ref


def test_env_matches_seed_program():
    _, ref_base, ref_damp = seed_program(seed=7, N=256)
    seeds = episode_condition_seeds(7, 256)
    for policy, ref in ((baseline, ref_base), (damped, ref_damp)):
        got = [run_env(policy, int(s))[:2] for s in seeds]
        assert got == ref


# --------------------------------------------------------------------------------------
# Env path == batch path
# --------------------------------------------------------------------------------------


def env_rows(policy, seeds, **kwargs):
    rows = []
    for s in seeds:
        outcome, t, term, trunc, info = run_env(policy, int(s), **kwargs)
        rows.append((outcome, info["steps"], term, trunc, info["x"], info["v"]))
    return rows


def batch_rows(result):
    return list(
        zip(
            result.outcome.tolist(),
            result.steps.tolist(),
            result.terminated.tolist(),
            result.truncated.tolist(),
            result.final_x.tolist(),
            result.final_v.tolist(),
            strict=True,
        )
    )


@pytest.mark.parametrize("dynamics", ["lab", "nominal", "changed"])
@pytest.mark.parametrize("policy", [baseline, damped])
def test_env_and_batch_are_identical(policy, dynamics):
    seeds = episode_condition_seeds(2024, 200)
    kwargs = {"max_steps": 25, "noise": 0.04, "dynamics": dynamics}
    assert env_rows(policy, seeds, **kwargs) == batch_rows(rollout_batch(policy, seeds, **kwargs))


def test_per_episode_arrays_equal_separate_calls():
    seeds = episode_condition_seeds(99, 60)
    dyn = np.array(["lab", "nominal", "changed"] * 20)
    noise = np.repeat([0.0, 0.02, 0.1], 20)
    budget = np.tile([10, 30, 40], 20)
    mixed = rollout_batch(damped, seeds, dynamics=dyn, noise=noise, max_steps=budget)
    for i in range(60):
        one = rollout_batch(
            damped, seeds[i : i + 1], dynamics=str(dyn[i]), noise=float(noise[i]),
            max_steps=int(budget[i]),
        )
        assert batch_rows(one)[0] == batch_rows(mixed)[i]
        env = run_env(
            damped, int(seeds[i]), dynamics=str(dyn[i]), noise=float(noise[i]),
            max_steps=int(budget[i]),
        )
        assert env[0] == mixed.outcome[i] and env[4]["steps"] == mixed.steps[i]


def test_success_on_the_final_allowed_sample_counts():
    # Seed: "A success on the final allowed sample counts as success."
    full = rollout_batch(damped, DEFAULT)
    won = np.flatnonzero(full.outcome == "success")
    seeds, at = DEFAULT[won], full.steps[won]
    exact = rollout_batch(damped, seeds, max_steps=at)
    assert (exact.outcome == "success").all() and exact.terminated.all()
    assert not exact.truncated.any()
    short = rollout_batch(damped, seeds, max_steps=at - 1)
    assert (short.outcome == "timeout").all() and short.truncated.all()
    outcome, _, term, trunc, _ = run_env(damped, int(seeds[0]), max_steps=int(at[0]))
    assert (outcome, term, trunc) == ("success", True, False)


# --------------------------------------------------------------------------------------
# Batch-simulator mechanics
# --------------------------------------------------------------------------------------


def test_policy_called_once_per_step_on_active_episodes():
    sizes = []

    def recording(obs):
        sizes.append(obs.shape)
        return damped(obs)

    result = rollout_batch(recording, DEFAULT)
    assert result.policy_calls == len(sizes) == int(result.steps.max())
    expected = [(int(np.sum(result.steps > k)), 2) for k in range(len(sizes))]
    assert sizes == expected
    assert result.policy_seconds >= 0.0 and result.wall_seconds >= result.policy_seconds
    assert len(result) == 64


def test_observations_carry_the_position_error():
    seen = []

    def recording(obs):
        seen.append(obs.copy())
        return np.zeros((obs.shape[0], 1))

    seeds = DEFAULT[:4]
    rollout_batch(recording, seeds, max_steps=1, noise=0.05)
    c = conditions(seeds)
    np.testing.assert_array_equal(seen[0][:, 0], c.x0 + 0.05 * c.errors[:, 0])
    np.testing.assert_array_equal(seen[0][:, 1], c.v0)


def test_flat_policy_output_is_accepted():
    flat = rollout_batch(lambda obs: damped(obs)[:, 0], DEFAULT)
    assert flat.counts() == rollout_batch(damped, DEFAULT).counts()


@pytest.mark.parametrize(
    "bad",
    [lambda obs: np.zeros((obs.shape[0], 2)), lambda obs: np.zeros(3), lambda obs: "go"],
)
def test_bad_policy_output_raises(bad):
    with pytest.raises(InvalidInputError, match="policy output"):
        rollout_batch(bad, DEFAULT[:5])


def test_non_finite_policy_output_raises():
    with pytest.raises(InvalidInputError, match="finite"):
        rollout_batch(lambda obs: np.full((obs.shape[0], 1), np.nan), DEFAULT[:5])


def test_shared_conditions_equal_seed_input():
    shared = conditions(DEFAULT, dynamics="changed")
    a = rollout_batch(damped, shared)
    b = rollout_batch(damped, DEFAULT, dynamics="changed")
    assert batch_rows(a) == batch_rows(b)
    with pytest.raises(InvalidParameterError, match="fixed by the Reach1DConditions"):
        rollout_batch(damped, shared, dynamics="lab")


@pytest.mark.parametrize("noise", [0.0, 1e-300, 0.02, 0.37, "mixed"])
def test_lazy_errors_equal_precomputed_conditions_and_the_seed(noise):
    # Seeds draw each step's error lazily (one rounded product NOISE/2**31 * (state - 2**31));
    # precomputed conditions multiply NOISE by 2u - 1. Both must equal the seed program,
    # also for a bound so small (1e-300) that the folded scale would lose bits.
    seeds = episode_condition_seeds(5, 300)
    eta = np.tile([0.0, 1e-300, 0.02, 0.37], 75) if noise == "mixed" else noise
    for policy in (baseline, damped):
        lazy = rollout_batch(policy, seeds, noise=eta)
        shared = rollout_batch(policy, conditions(seeds), noise=eta)
        assert batch_rows(lazy) == batch_rows(shared)
        if noise != "mixed":
            _, ref_base, ref_damp = seed_program(seed=5, N=300, NOISE=noise)
            ref = ref_base if policy is baseline else ref_damp
            assert list(zip(lazy.outcome.tolist(), lazy.sim_time_s.tolist(), strict=True)) == ref


def test_observations_are_exact_for_every_step_and_noise_form():
    # Every observation the policy sees equals x + NOISE * errors[k] of the env's own
    # trajectory, for seeds (lazy draws) and for precomputed conditions alike.
    seeds = episode_condition_seeds(11, 40)
    for source in (seeds, conditions(seeds)):
        seen = []

        def recording(obs, seen=seen):
            seen.append(np.array(obs))
            return damped(obs)

        rollout_batch(recording, source, noise=0.05, max_steps=3)
        env = Reach1DEnv(noise=0.05, max_steps=3)
        expected = []
        for s in seeds:
            obs, _ = env.reset(seed=int(s))
            rows = [obs.tolist()]
            for _ in range(2):
                obs, *_ = env.step(damped(obs))
                rows.append(obs.tolist())
            expected.append(rows)
        for k, batch in enumerate(seen):
            assert sorted(map(tuple, batch.tolist())) == sorted(
                tuple(rows[k]) for rows in expected if len(rows) > k
            )


def test_runner_batch_hook_matches_env_with_options():
    from types import SimpleNamespace

    cells = [{}, {"dynamics": "nominal"}, {"dynamics": "changed", "noise": 0.05}, {"max_steps": 12}]
    specs = [
        SimpleNamespace(condition_seed=int(s), options=opts)
        for opts in cells
        for s in DEFAULT[:20]
    ]
    out = Reach1DEnv.batch_rollout(baseline, specs, {"noise": 0.02, "dt": 0.2}, 25)
    assert len(out["policy_call_ms"]) == max(out["steps"])
    for i, spec in enumerate(specs):
        env = Reach1DEnv(noise=0.02, max_steps=25)
        obs, _ = env.reset(seed=spec.condition_seed, options=spec.options)
        while True:
            obs, _, terminated, truncated, info = env.step(baseline(obs))
            if terminated or truncated:
                break
        row = (info["outcome"], terminated, truncated, info["steps"], info["steps"] * 0.2)
        assert row == (
            out["outcome"][i], out["terminated"][i], out["truncated"][i], out["steps"][i],
            out["sim_time_s"][i],
        )
    with pytest.raises(InvalidParameterError, match="gravity"):
        Reach1DEnv.batch_rollout(baseline, specs[:1], {"gravity": 9.8}, 30)
    bad = [SimpleNamespace(condition_seed=7, options={"gravity": 9.8})]
    with pytest.raises(InvalidParameterError, match="gravity"):
        Reach1DEnv.batch_rollout(baseline, bad, {}, 30)


def test_empty_batch():
    result = rollout_batch(damped, [])
    assert len(result) == 0 and result.policy_calls == 0


@pytest.mark.parametrize(
    "kwargs",
    [{"max_steps": 0}, {"max_steps": 41}, {"dt": 0.0}, {"noise": -0.1}, {"noise": [0.1]},
     {"max_steps": [10, 20]}, {"dynamics": "lunar"}],
)
def test_bad_batch_settings_raise(kwargs):
    with pytest.raises(InvalidParameterError):
        rollout_batch(damped, DEFAULT[:3], **kwargs)


# --------------------------------------------------------------------------------------
# Gymnasium API
# --------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*infinity:UserWarning")
@pytest.mark.filterwarnings("ignore:.*symmetric and normalized:UserWarning")
def test_registered_without_time_limit_and_passes_env_checker():
    from gymnasium.utils.env_checker import check_env

    env = gym.make(ENV_ID, max_steps=10)
    wrapper = env
    while isinstance(wrapper, gym.Wrapper):
        assert not isinstance(wrapper, gym.wrappers.TimeLimit)
        wrapper = wrapper.env
    assert isinstance(wrapper, Reach1DEnv) and wrapper.dt == 0.2
    assert gym.spec(ENV_ID).max_episode_steps is None
    check_env(Reach1DEnv(), skip_render_check=True)
    importlib.reload(evalband.envs)  # double registration is guarded
    assert ENV_ID in gym.registry


def test_gym_make_rollout_matches_batch():
    env = gym.make(ENV_ID)
    outcomes = []
    for s in DEFAULT[:16]:
        obs, _ = env.reset(seed=int(s))
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(damped(obs))
            done = terminated or truncated
        assert reward == (1.0 if info["outcome"] == "success" else 0.0)
        outcomes.append(info["outcome"])
    assert outcomes == rollout_batch(damped, DEFAULT[:16]).outcome.tolist()


def test_step_info_and_observation():
    env = Reach1DEnv(noise=0.1)
    c = conditions([7])
    obs, info = env.reset(seed=7)
    assert obs.dtype == np.float64 and obs.shape == (2,)
    assert obs[0] == c.x0[0] + 0.1 * c.errors[0, 0] and obs[1] == c.v0[0]
    assert info["condition_seed"] == 7 and info["gain"] == c.gain[0]
    obs, reward, terminated, truncated, info = env.step(np.array([0.5]))
    assert set(info) == {"x", "v", "streak", "is_success", "steps"}
    x1, v1 = advance(c.x0[0], c.v0[0], 0.5, c.gain[0], c.disturbance[0], 0.2)
    assert (info["x"], info["v"]) == (float(x1), float(v1))
    assert obs[0] == info["x"] + 0.1 * c.errors[0, 1]
    assert reward == 0.0 and not terminated and not truncated


def test_reset_options_and_unknown_keys():
    env = Reach1DEnv()
    _, info = env.reset(seed=7, options={"dynamics": "nominal", "noise": 0.0})
    assert (info["gain"], info["disturbance"], info["noise"]) == (1.0, 0.0, 0.0)
    _, info = env.reset(seed=7)  # options are per episode
    assert info["dynamics"] == "lab" and info["noise"] == 0.02
    with pytest.raises(InvalidParameterError) as err:
        env.reset(seed=7, options={"gravity": 9.8})
    message = str(err.value)
    assert "'gravity'" in message and all(key in message for key in OPTION_KEYS)
    with pytest.raises(InvalidParameterError, match="dynamics"):
        env.reset(seed=7, options={"dynamics": "lunar"})


def test_panel_hook_uses_the_lab_stream_for_every_cell():
    for cell in ("", "dynamics=nominal", "dynamics=changed"):
        assert [Reach1DEnv.condition_seed(7, cell, i) for i in range(64)] == DEFAULT.tolist()


def test_reset_without_seed_walks_the_default_batch():
    env = Reach1DEnv()
    got = [env.reset()[1]["condition_seed"] for _ in range(3)]
    assert got == DEFAULT[:3].tolist() and env.current_condition_seed == DEFAULT[2]
    env.reset(seed=int(DEFAULT[10]))
    assert env.reset()[1]["condition_seed"] == DEFAULT[11]


def test_env_misuse_raises():
    env = Reach1DEnv()
    with pytest.raises(EvalbandError, match="reset"):
        env.step(np.array([0.0]))
    env.reset(seed=7)
    with pytest.raises(InvalidInputError, match="shape"):
        env.step(np.array([0.0, 1.0]))
    with pytest.raises(InvalidInputError, match="finite"):
        env.step(np.array([np.inf]))
    for bad in (-1, 2**32, 1.5):
        with pytest.raises(InvalidParameterError, match="seed"):
            env.reset(seed=bad)
    with pytest.raises(InvalidParameterError, match="max_steps"):
        Reach1DEnv(max_steps=41)
    env = Reach1DEnv(max_steps=1)
    env.reset(seed=7)
    assert env.step(np.array([0.0]))[3] is True
    with pytest.raises(EvalbandError, match="reset"):
        env.step(np.array([0.0]))


def test_forty_step_budget_final_observation():
    # The 40th action uses the last drawn error; the final observation is the true position.
    env = Reach1DEnv(max_steps=40)
    env.reset(seed=7)
    for _ in range(40):
        obs, _, terminated, truncated, info = env.step(np.array([0.0]))
        if terminated or truncated:
            break
    assert info["steps"] <= 40
    if info["steps"] == 40:
        assert obs[0] == info["x"]
