"""Built-in names and the modules behind them: plain tables, loaded before anything heavy.

``evalband run --backend process`` reads them before numpy, gymnasium or MuJoCo load, to
tell the worker processes' forkserver what to import while the command loads its own
modules (:func:`worker_preload`). :mod:`evalband.policies` and :mod:`evalband.envs` take
their built-in tables from here, so there is one copy of each.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalband._util.imports import is_import_path

__all__ = ["BUILTIN_POLICIES", "CHECKPOINT_SUFFIX", "BUILTIN_ENV_ENTRY_POINTS",
           "env_module", "worker_preload"]

BUILTIN_POLICIES: dict[str, str] = {
    "reach1d:baseline": "evalband.policies.reach1d:baseline",
    "reach1d:damped": "evalband.policies.reach1d:damped",
    "reach1d:expert": "evalband.policies.reach1d:expert",
    "pusht:expert": "evalband.policies.pusht:expert",
    "reacher:ik_pd": "evalband.policies.classical:reacher_ik_pd",
    "inverted_pendulum:pd": "evalband.policies.classical:inverted_pendulum_pd",
    "point_maze:p": "evalband.policies.classical:point_maze_p",
    "gym_pusht:push": "evalband.policies.classical:pusht_push",
    "fetch_reach:p": "evalband.policies.classical:fetch_reach_p",
    "point_mass:pd": "evalband.policies.classical:point_mass_pd",
    "metaworld:reach": "evalband.policies.scripted:metaworld_reach",
    "metaworld:push": "evalband.policies.scripted:metaworld_push",
    "aloha:hold": "evalband.policies.classical:aloha_hold",
    "random": "evalband.policies._builtin:RandomPolicy",
    "sim-arm:grasp": "evalband.policies.sim_arm:grasp",
    "sim-arm:weak": "evalband.policies.sim_arm:weak",
    "sim-arm:never": "evalband.policies.sim_arm:never",
    "robosuite:door": "evalband.policies.manipulation:robosuite_door",
    "robosuite:lift": "evalband.policies.manipulation:robosuite_lift",
    "robosuite:nut": "evalband.policies.manipulation:robosuite_nut",
    "robosuite:pickplace": "evalband.policies.manipulation:robosuite_pickplace",
    "robosuite:random": "evalband.policies.manipulation:robosuite_random",
    "robosuite:stack": "evalband.policies.manipulation:robosuite_stack",
}
"""Built-in policy name -> ``module:attr`` import path."""

CHECKPOINT_SUFFIX = ".pt"
"""File names ending in this are behavior-cloning checkpoints (see ``evalband.policies.bc``)."""

BUILTIN_ENV_ENTRY_POINTS: dict[str, str] = {
    "evalband/Reach1D-v0": "evalband.envs.reach1d:Reach1DEnv",
    "evalband/PushT-v0": "evalband.envs.pusht:PushTEnv",
    "evalband/Coin-v0": "evalband.envs._coin:CoinEnv",
}
"""evalband's own Gymnasium ids -> the class each is registered with (``evalband.envs``)."""


def env_module(env: str) -> str | None:
    """The module defining ``env`` when that is known without importing anything.

    A built-in id's module, or the module of ``module:attr`` / ``module:id``; ``None`` for
    another package's Gymnasium id (only its registration knows).

    >>> env_module("evalband/PushT-v0"), env_module("pkg.mod:Env"), env_module("Hopper-v5")
    ('evalband.envs.pusht', 'pkg.mod', None)
    """
    entry = BUILTIN_ENV_ENTRY_POINTS.get(env)
    if entry is not None:
        return entry.partition(":")[0]
    if is_import_path(env):
        return env.partition(":")[0]
    return None


def worker_preload(env_module: str | None, imports: Sequence[str], policy: str) -> list[str]:
    """What a worker process imports to play ``policy`` on an env from ``env_module``.

    The run loop, the panel's ``imports`` (the packages that register its env), the env's
    module and the policy's (a checkpoint's loader, the remote client, or the module of a
    ``module:attr``); imported once by the forkserver, then inherited by every worker.

    >>> worker_preload("evalband.envs.pusht", [], "pusht:expert")
    ['evalband.run._execute', 'evalband.envs.pusht', 'evalband.policies.pusht']
    >>> worker_preload(None, ["gymnasium_robotics"], "ws://127.0.0.1:8000")
    ['evalband.run._execute', 'gymnasium_robotics', 'evalband.policies.remote']
    """
    modules = ["evalband.run._execute", *imports]
    if env_module is not None:
        modules.append(env_module)
    target = BUILTIN_POLICIES.get(policy, policy)
    if target.endswith(CHECKPOINT_SUFFIX):
        modules.append("evalband.policies.bc")
    elif target.startswith(("ws://", "wss://")):
        modules.append("evalband.policies.remote")
    elif ":" in target:
        modules.append(target.partition(":")[0])
    return modules
