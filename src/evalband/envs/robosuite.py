"""robosuite tasks as Gymnasium envs whose start is fixed by the condition seed.

robosuite (the simulator under robomimic and LIBERO; the ``envs-robosuite`` extra) is not a
Gymnasium package: ``robosuite.make`` returns an env whose ``reset()`` takes no seed (its
object placement and the arm's start noise draw from NumPy's global generator), whose
``step`` returns four values and whose success is the method ``_check_success()``.
:class:`RobosuiteEnv` puts a Gymnasium face on it:

* ``reset(seed=s)`` draws the start from a generator seeded with ``s`` (NumPy's global state
  is saved and restored around the reset, so nothing else in the process is disturbed): the
  same seed gives the same start in any env, fresh or used;
* the observation is robosuite's dict of state arrays (cameras off: ``use_camera_obs=False``);
* ``info["success"]`` is the task's own ``_check_success()`` after each step: panels use
  ``success: {rule: any_step, key: success}``, the rule of robomimic's rollouts;
* ``control_dt`` is ``1 / control_freq`` (20 Hz by default), the task's real control period.

A panel names it with ``env: evalband.envs.robosuite:make`` and ``env_kwargs: {task: Lift}``
(any robosuite env name: ``Lift``, ``Stack``, ``Door``, ``PickPlaceCan``,
``NutAssemblySquare``, ...). Version: robosuite 1.4 (LIBERO's; the task assets ship in its
wheel). Source: robosuite 1.4.0, ``robosuite/environments/base.py`` and the task modules.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium
import numpy as np

from evalband.errors import EnvError

__all__ = ["INSTRUCTIONS", "RobosuiteEnv", "make", "seeded_global_rng"]

INSTRUCTIONS = {
    "Lift": "lift the red cube off the table",
    "Stack": "stack the red cube on top of the green cube",
    "Door": "open the door",
    "PickPlace": "put each object into its bin",
    "PickPlaceMilk": "put the milk carton into its bin",
    "PickPlaceBread": "put the bread into its bin",
    "PickPlaceCereal": "put the cereal box into its bin",
    "PickPlaceCan": "put the can into its bin",
    "NutAssembly": "fit each nut onto its peg",
    "NutAssemblySquare": "fit the square nut onto the square peg",
    "NutAssemblyRound": "fit the round nut onto the round peg",
}
"""The instruction each shipped panel gives the policy (robosuite itself has none)."""


@contextmanager
def seeded_global_rng(seed: int | None) -> Iterator[None]:
    """Run a block with NumPy's global generator seeded with ``seed``; restore it after.

    ``None`` leaves the global generator alone (its next draws, as robosuite would).

    >>> with seeded_global_rng(3):
    ...     a = np.random.uniform()
    >>> with seeded_global_rng(3):
    ...     b = np.random.uniform()
    >>> a == b
    True
    """
    if seed is None:
        yield
        return
    saved = np.random.get_state()
    np.random.seed(int(seed) % 2**32)
    try:
        yield
    finally:
        np.random.set_state(saved)


def _space(obs: dict[str, Any]) -> gymnasium.spaces.Dict:
    return gymnasium.spaces.Dict({
        key: gymnasium.spaces.Box(-np.inf, np.inf, np.shape(value), dtype=np.float64)
        for key, value in obs.items()
    })


class RobosuiteEnv(gymnasium.Env):
    """A robosuite task behind the Gymnasium API (see the module docstring).

    Args:
        env: the robosuite env (``robosuite.make(...)``), built with ``ignore_done=True``:
            the panel's budget ends an episode, not robosuite's horizon.
        task: its name (for messages and the instruction).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, env: Any, task: str) -> None:
        self.env = env
        self.task = task
        self.instruction = INSTRUCTIONS.get(task, "")
        low, high = env.action_spec
        self.action_space = gymnasium.spaces.Box(
            np.asarray(low, np.float64), np.asarray(high, np.float64), dtype=np.float64)
        self.observation_space = _space(self._observation(env.observation_spec()))
        self.control_dt = 1.0 / float(env.control_freq)

    @staticmethod
    def _observation(obs: dict[str, Any]) -> dict[str, np.ndarray]:
        return {key: np.asarray(value, dtype=np.float64) for key, value in obs.items()}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset to the start drawn from ``seed`` (robosuite's placement and arm noise)."""
        super().reset(seed=seed)
        with seeded_global_rng(seed):
            obs = self.env.reset()
        return self._observation(obs), {"success": False}

    def step(
        self, action: Any
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """One control step; ``info["success"]`` is the task's ``_check_success()``."""
        obs, reward, _done, info = self.env.step(np.asarray(action, dtype=np.float64))
        info = dict(info)
        info["success"] = bool(self.env._check_success())
        return self._observation(obs), float(reward), False, False, info

    def close(self) -> None:
        """Close the robosuite env."""
        self.env.close()


def make(
    task: str = "Lift",
    robots: str | list[str] = "Panda",
    controller: str = "OSC_POSE",
    control_freq: int = 20,
    reward_shaping: bool = False,
    **kwargs: Any,
) -> RobosuiteEnv:
    """Build robosuite's ``task`` (state observations, no cameras, no renderer).

    Needs the ``envs-robosuite`` extra (robosuite 1.4). ``kwargs`` go to ``robosuite.make``
    (e.g. ``placement_initializer``, ``table_full_size``).

    Raises:
        EnvError: robosuite is not installed, or has no task of that name.
    """
    try:
        import robosuite
        from robosuite.controllers import load_controller_config
    except ImportError as exc:
        raise EnvError(
            f"the robosuite panels need robosuite 1.4 (pip install 'evalband[envs-robosuite]'); "
            f"importing it failed: {exc}") from None
    if task not in robosuite.ALL_ENVIRONMENTS:
        known = ", ".join(sorted(n for n in robosuite.ALL_ENVIRONMENTS if "TwoArm" not in n))
        raise EnvError(f"robosuite has no task {task!r}; use one of {known}")
    env = robosuite.make(
        task,
        robots=robots,
        controller_configs=load_controller_config(default_controller=controller),
        has_renderer=False,
        has_offscreen_renderer=False,
        use_camera_obs=False,
        use_object_obs=True,
        reward_shaping=reward_shaping,
        control_freq=control_freq,
        ignore_done=True,
        **kwargs,
    )
    return RobosuiteEnv(env, task)
