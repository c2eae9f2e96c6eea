"""Built-in environments, registered with Gymnasium on import.

``evalband/Reach1D-v0``: the reaching lab (reaching-lab seed ``002_4e7e9c5b524a571b``),
a seeded 1-D point mass with matched conditions, plus its vectorised batch simulator
:func:`rollout_batch`. ``evalband/PushT-v0`` (:data:`PUSHT_ENV_ID`): the PushT harness's
MuJoCo task, ``evalband.envs.pusht.PushTEnv``; registered by name, so ``mujoco`` (the ``sim``
extra) is imported only when it is made. Both are registered without a ``TimeLimit``
wrapper: the envs truncate themselves.

>>> import gymnasium as gym
>>> import evalband.envs
>>> env = gym.make("evalband/Reach1D-v0", max_steps=10)
>>> obs, info = env.reset(seed=7)
>>> obs.shape, round(info["x0"], 6)
((2,), -0.761219)
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from evalband.envs._lcg import lcg_jump
from evalband.envs._pusht_model import ENV_ID as PUSHT_ENV_ID
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

__all__ = [
    "ENV_ID",
    "PUSHT_ENV_ID",
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
]


def _register() -> None:
    """Register the built-in envs once (re-imports and reloads are harmless)."""
    if ENV_ID not in registry:
        register(
            id=ENV_ID,
            entry_point="evalband.envs.reach1d:Reach1DEnv",
            max_episode_steps=None,
        )
    if PUSHT_ENV_ID not in registry:  # a string entry point: mujoco is imported on make only
        register(
            id=PUSHT_ENV_ID,
            entry_point="evalband.envs.pusht:PushTEnv",
            max_episode_steps=None,
        )


_register()
