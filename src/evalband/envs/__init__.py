"""Built-in environments, registered with Gymnasium on import.

``evalband/Reach1D-v0``: the reaching lab (reaching-lab seed ``002_4e7e9c5b524a571b``),
a seeded 1-D point mass with matched conditions, plus its vectorised batch simulator
:func:`rollout_batch`. ``evalband/PushT-v0`` (:data:`PUSHT_ENV_ID`): the PushT harness's
MuJoCo task, ``evalband.envs.pusht.PushTEnv``; registered by name, so ``mujoco`` (the ``sim``
extra) is imported only when it is made. ``evalband/Coin-v0`` (:data:`COIN_ENV_ID`): a
coin-flip stand-in robot for the docs' examples, registered by name as well. All are
registered without a ``TimeLimit`` wrapper: the envs truncate themselves.

The env contract and env resolution (:func:`make_env`, :func:`prepare_imports`, ...) load
on first use.

>>> import gymnasium as gym
>>> import evalband.envs
>>> env = gym.make("evalband/Reach1D-v0", max_steps=10)
>>> obs, info = env.reset(seed=7)
>>> obs.shape, round(info["x0"], 6)
((2,), -0.761219)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gymnasium.envs.registration import register, registry

from evalband._util.imports import lazy_attributes
from evalband._util.names import BUILTIN_ENV_ENTRY_POINTS
from evalband.envs._lcg import lcg_jump
from evalband.envs.pusht_model import ENV_ID as PUSHT_ENV_ID
from evalband.envs.reach1d import (
    DRAWS_PER_EPISODE,
    DYNAMICS,
    ENV_ID,
    OPTION_KEYS,
    Reach1DBatchResult,
    Reach1DConditions,
    Reach1DEnv,
    SampleClassification,
    advance,
    classify_samples,
    conditions,
    episode_condition_seed,
    episode_condition_seeds,
    judge,
    rollout_batch,
)

if TYPE_CHECKING:
    from evalband.envs._contract import EvalEnv, Traces, control_dt, simulator_time, unwrapped
    from evalband.envs._resolve import (
        accepts_kwarg,
        close_env,
        env_class,
        env_entry,
        make_env,
        passes_kwarg,
        prepare_imports,
        registered_time_limit,
        render_hint,
    )

COIN_ENV_ID = "evalband/Coin-v0"
"""The coin-flip stand-in robot (:class:`evalband.envs._coin.CoinEnv`) of the docs' examples."""

__all__ = [
    "ENV_ID",
    "PUSHT_ENV_ID",
    "COIN_ENV_ID",
    "OPTION_KEYS",
    "DRAWS_PER_EPISODE",
    "DYNAMICS",
    "Reach1DEnv",
    "Reach1DBatchResult",
    "Reach1DConditions",
    "SampleClassification",
    "lcg_jump",
    "episode_condition_seed",
    "episode_condition_seeds",
    "conditions",
    "advance",
    "judge",
    "classify_samples",
    "rollout_batch",
    # the env contract and env resolution, loaded on first use
    "EvalEnv",
    "Traces",
    "control_dt",
    "simulator_time",
    "unwrapped",
    "accepts_kwarg",
    "close_env",
    "env_class",
    "env_entry",
    "make_env",
    "passes_kwarg",
    "prepare_imports",
    "registered_time_limit",
    "render_hint",
]

_LAZY = {
    **dict.fromkeys(("EvalEnv", "Traces", "control_dt", "simulator_time", "unwrapped"),
                    "evalband.envs._contract"),
    **dict.fromkeys(
        ("accepts_kwarg", "close_env", "env_class", "env_entry", "make_env", "passes_kwarg",
         "prepare_imports", "registered_time_limit", "render_hint"),
        "evalband.envs._resolve",
    ),
}

__getattr__ = lazy_attributes(__name__, _LAZY)


def _register() -> None:
    """Register the built-in envs once (re-imports and reloads are harmless).

    String entry points (``evalband._util.names.BUILTIN_ENV_ENTRY_POINTS``): MuJoCo is
    imported when PushT is made, not here. None has a registered ``TimeLimit``.
    """
    for env_id, entry_point in BUILTIN_ENV_ENTRY_POINTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point, max_episode_steps=None)


_register()
