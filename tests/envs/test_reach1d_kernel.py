"""The compiled lockstep kernel (``rollout_batch(kernel="compiled")``, numba).

Every claim is checked against an independent execution: the numpy path (whole-array
passes, its own code), the kernel's own Python source run uncompiled, and the reaching-lab
seed's program (``seed_program``, logic verbatim). Equality is exact (bits), not approximate.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_reach1d import seed_program

import evalband._util.jit as jit
import evalband.envs._reach1d_batch as batch
from evalband.envs import rollout_batch
from evalband.envs._reach1d_core import DYNAMICS, conditions, episode_condition_seeds
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.policies.reach1d import baseline, damped

FIELDS = ("condition_seeds", "outcome", "steps", "terminated", "truncated", "sim_time_s",
          "final_x", "final_v")


def assert_same(a, b):
    for name in FIELDS:
        left, right = getattr(a, name), getattr(b, name)
        assert left.dtype == right.dtype, name
        assert np.array_equal(left, right), name  # exact: same bits for the floats
    assert a.policy_calls == b.policy_calls


def mixed_settings(n, rng):
    """Per-episode dynamics, noise bounds (0, tiny, usual, large) and budgets (1..40)."""
    return {
        "dynamics": rng.choice(DYNAMICS, size=n).tolist(),
        "noise": rng.choice([0.0, 1e-300, 0.02, 0.05, 0.3], size=n),
        "max_steps": rng.integers(1, 41, size=n),
    }


@pytest.mark.parametrize("dt", [0.2, 0.1])
def test_compiled_equals_numpy_bit_for_bit_on_mixed_settings(dt):
    rng = np.random.default_rng(20261130)
    seeds = np.concatenate([episode_condition_seeds(7, 1500), episode_condition_seeds(99, 1500)])
    settings = mixed_settings(seeds.size, rng)
    outcomes = set()
    for policy in (baseline, damped):
        fast = rollout_batch(policy, seeds, dt=dt, kernel="compiled", **settings)
        slow = rollout_batch(policy, seeds, dt=dt, kernel="numpy", **settings)
        assert_same(fast, slow)
        outcomes |= set(fast.outcome.tolist())
    assert outcomes == {"success", "failure", "timeout"}  # every ending path was taken


def test_compiled_equals_the_seed_program():
    _, ref_base, ref_damp = seed_program(seed=12345, N=2500)
    seeds = episode_condition_seeds(12345, 2500)
    for policy, ref in ((baseline, ref_base), (damped, ref_damp)):
        got = rollout_batch(policy, seeds, kernel="compiled")
        assert list(zip(got.outcome.tolist(), got.sim_time_s.tolist(), strict=True)) == ref


def test_the_seed_default_panel_through_the_compiled_kernel():
    seeds = episode_condition_seeds(7, 64)
    base = rollout_batch(baseline, seeds, kernel="compiled")
    damp = rollout_batch(damped, seeds, kernel="compiled")
    assert base.counts() == {"success": 9, "failure": 7, "timeout": 48}
    assert damp.counts() == {"success": 50, "failure": 0, "timeout": 14}
    assert np.nanmean(base.time_to_success_s) == pytest.approx(13.6 / 9, abs=5e-7)
    assert np.nanmean(damp.time_to_success_s) == pytest.approx(118.4 / 50, abs=5e-7)
    two = rollout_batch(damped, seeds, max_steps=10, kernel="compiled")
    assert two.counts()["success"] == 16


def test_the_policy_sees_the_same_rows_in_the_same_order():
    rng = np.random.default_rng(5)
    seeds = episode_condition_seeds(3, 700)
    settings = mixed_settings(seeds.size, rng)
    seen: dict[str, list[np.ndarray]] = {"numpy": [], "compiled": []}
    for kernel, calls in seen.items():

        def recording(obs, calls=calls):
            calls.append(np.array(obs))  # a copy, taken during the call
            return baseline(obs)

        rollout_batch(recording, seeds, kernel=kernel, **settings)
    assert len(seen["numpy"]) == len(seen["compiled"])
    for a, b in zip(seen["numpy"], seen["compiled"], strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("shared_noise", [False, True])
def test_the_kernel_source_run_as_python_equals_its_compiled_form(monkeypatch, shared_noise):
    # Compilation changes no result: run lockstep_step as ordinary Python (slow, so a
    # small batch) and compare with the compiled run of the same batch. One noise bound
    # for all episodes takes the kernel's shared-bound branch, per-episode bounds the other.
    rng = np.random.default_rng(8)
    seeds = episode_condition_seeds(41, 150)
    settings = mixed_settings(seeds.size, rng)
    if shared_noise:
        settings["noise"] = 0.05
    compiled_run = rollout_batch(damped, seeds, kernel="compiled", **settings)
    monkeypatch.setattr(batch, "compiled", lambda fn: fn)
    python_run = rollout_batch(damped, seeds, kernel="compiled", **settings)
    assert_same(python_run, compiled_run)


def test_observations_the_policy_keeps_are_never_overwritten():
    kept, copies = [], []

    def keeping(obs):
        kept.append(obs)
        copies.append(np.array(obs))
        return damped(obs)

    rollout_batch(keeping, episode_condition_seeds(7, 300), kernel="compiled")
    assert len(kept) > 10
    for a, b in zip(kept, copies, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("kernel", ["numpy", "compiled"])
def test_non_finite_commands_raise_the_same_error(kernel):
    def bad_at_step_3(obs, calls=[]):  # noqa: B006 - counts calls within one rollout
        calls.append(1)
        u = damped(obs).copy()
        if len(calls) == 3:
            u[min(5, len(u) - 1)] = np.nan
        return u

    with pytest.raises(InvalidInputError, match="policy output must be finite, got nan"):
        rollout_batch(bad_at_step_3, episode_condition_seeds(7, 64), kernel=kernel)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_batches(n):
    seeds = episode_condition_seeds(7, n)
    assert_same(rollout_batch(damped, seeds, kernel="compiled"),
                rollout_batch(damped, seeds, kernel="numpy"))


def test_auto_takes_the_compiled_kernel_for_large_seed_batches(monkeypatch):
    monkeypatch.setattr(jit, "numba_loaded", lambda: True)  # "auto" never imports numba
    calls = []
    real = batch._lockstep_compiled

    def spy(*args):
        calls.append(len(args[1].x0))
        return real(*args)

    monkeypatch.setattr(batch, "_lockstep_compiled", spy)
    small = episode_condition_seeds(7, jit.MIN_COMPILED_BATCH - 1)
    large = episode_condition_seeds(7, jit.MIN_COMPILED_BATCH)
    rollout_batch(damped, small)
    rollout_batch(damped, conditions(large))  # precomputed errors: the numpy path
    assert calls == []
    rollout_batch(damped, large)
    assert calls == [jit.MIN_COMPILED_BATCH]
    monkeypatch.setattr(jit, "numba_loaded", lambda: False)
    rollout_batch(damped, large)  # numba not loaded: auto stays with numpy
    assert calls == [jit.MIN_COMPILED_BATCH]


def test_without_numba_auto_falls_back_and_compiled_says_how_to_install(monkeypatch):
    monkeypatch.setattr(jit, "compiled_available", lambda: False)
    seeds = episode_condition_seeds(7, jit.MIN_COMPILED_BATCH)
    reference = rollout_batch(damped, seeds, kernel="numpy")
    assert_same(rollout_batch(damped, seeds), reference)  # auto: numpy, same results
    with pytest.raises(InvalidParameterError, match=r"pip install 'evalband\[fast\]'"):
        rollout_batch(damped, seeds, kernel="compiled")


def test_bad_kernel_choices_raise():
    seeds = episode_condition_seeds(7, 8)
    with pytest.raises(InvalidParameterError, match="kernel must be one of auto, numpy, compiled"):
        rollout_batch(damped, seeds, kernel="gpu")
    with pytest.raises(InvalidParameterError, match="pass seeds"):
        rollout_batch(damped, conditions(seeds), kernel="compiled")


# The kernel as one function, before it was split into helpers (issue 32): the last commit
# that changed it. The split must give the same numbers, bit for bit.
BEFORE_SPLIT = "5f77956d98f3acd1aa662dfadf6f3864ab5f14c0"
KERNEL_PATH = "src/evalband/envs/_reach1d_kernel.py"


@pytest.fixture(scope="module")
def fresh_kernels():
    """The kernel after and before the split (:data:`BEFORE_SPLIT`), compiled here.

    Both with evalband's numba options but without numba's on-disk cache, so no cached
    build is read. Skipped where git or the commit is missing.
    """
    import numba

    root = Path(__file__).resolve().parents[2]
    try:
        source = subprocess.run(["git", "-C", str(root), "show", f"{BEFORE_SPLIT}:{KERNEL_PATH}"],
                                capture_output=True, check=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"commit {BEFORE_SPLIT[:12]} (the kernel before) is not in this checkout")
    namespace: dict[str, object] = {"__name__": "reach1d_kernel_before_split"}
    exec(compile(source, f"{BEFORE_SPLIT[:12]}:{KERNEL_PATH}", "exec"), namespace)
    built = jit.compiled(batch.lockstep_step)  # evalband's options; registers the helpers
    options = {k: v for k, v in built.targetoptions.items() if k != "nopython"}  # njit's own
    return {"split": numba.njit(**options)(batch.lockstep_step),
            "before": numba.njit(**options)(namespace["lockstep_step"])}


@pytest.mark.parametrize("shared_noise", [False, True])
def test_the_split_kernel_equals_the_kernel_before_the_split(monkeypatch, fresh_kernels,
                                                             shared_noise):
    # A fixed seeded batch through the kernel before the split and after it: the same
    # results and the same observations, bit for bit.
    rng = np.random.default_rng(32)
    seeds = episode_condition_seeds(2026, 3000)
    settings = mixed_settings(seeds.size, rng)
    if shared_noise:
        settings["noise"] = 0.05
    runs, seen = {}, {}
    for name, kernel in fresh_kernels.items():
        monkeypatch.setattr(batch, "compiled", lambda fn, kernel=kernel: kernel)
        calls: list[np.ndarray] = []

        def recording(obs, calls=calls):
            calls.append(np.array(obs))
            return baseline(obs)

        runs[name], seen[name] = rollout_batch(recording, seeds, kernel="compiled",
                                               **settings), calls
    assert_same(runs["split"], runs["before"])
    assert len(seen["split"]) == len(seen["before"]) > 10
    for a, b in zip(seen["split"], seen["before"], strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert set(runs["split"].outcome.tolist()) == {"success", "failure", "timeout"}
