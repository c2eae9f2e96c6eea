"""Tests of the reaching lab's controllers and of the policy resolver.

Oracle: the reaching-lab seed (shared/seeds/002_4e7e9c5b524a571b.txt): its controller
``max(-1, min(1, -2 * x_measured - damping * v))`` with damping 0.2 / 1.8, written here in
plain Python as in the seed's program, and its hand-worked step (u = 0.98).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalband._util.names import BUILTIN_POLICIES
from evalband.errors import EvalbandError, InvalidInputError, PolicyNotFoundError
from evalband.policies import resolve_policy
from evalband.policies.reach1d import baseline, damped, expert


def seed_controller(x_measured, v, damping):
    # The seed program's command line, verbatim in form.
    return max(-1, min(1, -2 * x_measured - damping * v))


finite = st.floats(-5, 5, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(finite, finite)
def test_single_observation_matches_seed_law(x, v):
    for policy, damping in ((baseline, 0.2), (damped, 1.8)):
        u = policy(np.array([x, v]))
        assert u.shape == (1,)
        assert u[0] == seed_controller(x, v, damping)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=30))
def test_batch_matches_single(rows):
    obs = np.array(rows, dtype=np.float64)
    for policy, damping in ((baseline, 0.2), (damped, 1.8)):
        u = policy(obs)
        assert u.shape == (len(rows), 1)
        assert u[:, 0].tolist() == [seed_controller(x, v, damping) for x, v in rows]


def test_hand_worked_command_and_saturation():
    # Seed: x = -0.5, v = 0.1 -> baseline u = 1 - 0.02 = 0.98 (below the command limit).
    assert baseline([-0.5, 0.1])[0] == pytest.approx(0.98, abs=1e-15)
    assert baseline([-3.0, 0.0])[0] == 1.0 and damped([3.0, 0.0])[0] == -1.0


def test_controllers_declare_batch_support():
    # The runner plays a panel in lockstep only for policies that declare `batched`.
    assert baseline.batched is True and damped.batched is True


def test_expert_is_the_damped_law():
    # Seed, BC exercise: the expert uses clip(-2x - 1.8v, -1, 1).
    obs = np.array([[0.3, -0.2], [-0.8, 0.15]])
    assert expert is damped
    reference = np.clip(-2 * obs[:, 0] - 1.8 * obs[:, 1], -1, 1)
    np.testing.assert_array_equal(expert(obs)[:, 0], reference)


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((4, 3)), np.zeros((2, 2, 2)), 1.0])
def test_bad_observation_shape_raises(bad):
    with pytest.raises(InvalidInputError, match=r"\(2,\) or \(B, 2\)"):
        baseline(bad)


def test_registry_names_resolve():
    assert set(BUILTIN_POLICIES) >= {"reach1d:baseline", "reach1d:damped"}
    assert resolve_policy("reach1d:baseline") is baseline
    assert resolve_policy("reach1d:damped") is damped
    assert resolve_policy("reach1d:expert") is damped
    for path in BUILTIN_POLICIES.values():  # a function, a class, or an object with act()
        policy = resolve_policy(path)
        assert callable(policy) or callable(getattr(policy, "act", None)), path
    assert resolve_policy("  evalband.policies.reach1d:damped ") is damped
    assert resolve_policy("numpy:linalg.norm") is np.linalg.norm  # dotted attribute path


@pytest.mark.parametrize(
    "name",
    [
        "reach1d:nope",  # looks like a path, module 'reach1d' does not exist
        "no_such_module_xyz:policy",
        "evalband.policies.reach1d:missing",
        "evalband.policies.reach1d:POSITION_GAIN",  # exists, not callable
        "justaname",
        "",
        ":attr",
    ],
)
def test_unknown_policy_lists_builtins(name):
    with pytest.raises(PolicyNotFoundError) as err:
        resolve_policy(name)
    message = str(err.value)
    assert "\n" not in message
    assert all(builtin in message for builtin in BUILTIN_POLICIES)
    assert isinstance(err.value, EvalbandError)


def test_broken_user_module_is_not_masked(tmp_path, monkeypatch):
    # A module that exists but fails on its own import must surface its real error.
    (tmp_path / "evalband_test_broken_policy.py").write_text(
        "import definitely_missing_dependency_xyz\n\ndef act(obs):\n    return obs\n"
    )
    (tmp_path / "evalband_test_good_policy.py").write_text("def act(obs):\n    return obs\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="definitely_missing_dependency_xyz"):
        resolve_policy("evalband_test_broken_policy:act")
    assert resolve_policy("evalband_test_good_policy:act")(3) == 3
    for mod in ("evalband_test_broken_policy", "evalband_test_good_policy"):
        sys.modules.pop(mod, None)


# --------------------------------------------------------------------------------------
# The compiled form of the law (numba, evalband._util.jit): same bits as numpy and the seed
# --------------------------------------------------------------------------------------


def test_compiled_law_equals_numpy_and_the_seed_bit_for_bit():
    from evalband.policies.reach1d import saturated_pd

    rng = np.random.default_rng(11)
    obs = rng.normal(scale=2.0, size=(5000, 2))
    obs[:12] = [[0.0, 0.0], [-0.0, -0.0], [0.5, 0.0], [-0.5, 0.0], [0.25, 1.0], [1e308, 0.0],
                [-1e308, 1e307], [5e-324, 0.0], [0.1, 0.15], [-0.1, -0.15], [0.49, 0.05],
                [-0.45, -0.5]]
    for damping in (0.2, 1.8):
        fast = saturated_pd(obs, damping, kernel="compiled")
        with np.errstate(over="ignore"):  # -2 * 1e308 overflows to -inf, then saturates
            slow = saturated_pd(obs, damping, kernel="numpy")
        assert fast.shape == slow.shape == (5000, 1)
        assert np.array_equal(fast, slow)
        assert np.array_equal(np.signbit(fast), np.signbit(slow))  # -0.0 stays -0.0
        assert fast[:, 0].tolist() == [seed_controller(x, v, damping) for x, v in obs.tolist()]


def test_compiled_law_keeps_nan_like_np_clip_and_accepts_strided_rows():
    from evalband.policies.reach1d import saturated_pd

    obs = np.array([[np.nan, 0.0], [0.0, np.inf], [np.inf, 0.0], [0.3, -0.2]] * 600)
    fast = saturated_pd(obs, 0.2, kernel="compiled")
    slow = saturated_pd(obs, 0.2, kernel="numpy")
    assert np.array_equal(fast, slow, equal_nan=True)
    assert np.isnan(fast[0, 0]) and fast[1, 0] == -1.0 and fast[2, 0] == -1.0
    wide = np.zeros((obs.shape[0], 5))  # columns 0 and 1 are strided views of a wider array
    wide[:, :2] = obs
    assert np.array_equal(saturated_pd(wide[:, :2], 1.8, kernel="compiled"),
                          saturated_pd(obs, 1.8, kernel="numpy"), equal_nan=True)


def test_auto_law_uses_the_compiled_form_from_the_threshold(monkeypatch):
    import evalband._util.jit as jit
    import evalband.policies.reach1d as module
    from evalband._util.jit import MIN_COMPILED_BATCH

    monkeypatch.setattr(jit, "numba_loaded", lambda: True)  # "auto" never imports numba
    used = []
    real = module.compiled

    def spy(fn):
        used.append(fn.__name__)
        return real(fn)

    monkeypatch.setattr(module, "compiled", spy)
    baseline(np.zeros((MIN_COMPILED_BATCH - 1, 2)))
    baseline(np.zeros(2))
    assert used == []
    baseline(np.zeros((MIN_COMPILED_BATCH, 2)))
    assert used == ["saturated_pd_rows"]
