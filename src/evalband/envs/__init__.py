"""Built-in environments, registered with Gymnasium on import.

``evalband/Reach1D-v0``: the reaching lab (reaching-lab seed ``002_4e7e9c5b524a571b``),
a seeded 1-D point mass with matched conditions, plus its vectorised batch simulator
:func:`rollout_batch`. ``evalband/PushT-v0`` (``evalband.envs.pusht_model.ENV_ID``): the
PushT harness's MuJoCo task, ``evalband.envs.pusht.PushTEnv``; registered by name, so
``mujoco`` (the ``sim`` extra) is imported only when it is made. ``evalband/Coin-v0``: a
coin-flip stand-in robot for the docs' examples, registered by name as well. All are
registered without a ``TimeLimit`` wrapper: the envs truncate themselves.

The env contract and env resolution (:func:`make_env`, ...) load on first use.

>>> import gymnasium as gym
>>> import evalband.envs
>>> env = gym.make("evalband/Reach1D-v0", max_steps=10)
>>> obs, info = env.reset(seed=7)
>>> obs.shape, round(info["x0"], 6)
((2,), -0.761219)
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from evalband._util.imports import lazy_attributes
from evalband._util.names import BUILTIN_ENV_ENTRY_POINTS

_LAZY = {
    "EvalEnv": "evalband.envs._contract",
    "Traces": "evalband.envs._contract",
    "control_dt": "evalband.envs._contract",
    "make_env": "evalband.envs._resolve",
    "ENV_ID": "evalband.envs.reach1d",
    "Reach1DEnv": "evalband.envs.reach1d",
    "advance": "evalband.envs.reach1d",
    "episode_condition_seed": "evalband.envs.reach1d",
    "judge": "evalband.envs.reach1d",
    "rollout_batch": "evalband.envs.reach1d",
}

__all__ = [*_LAZY]

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
