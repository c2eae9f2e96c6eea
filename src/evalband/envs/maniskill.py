"""ManiSkill3 tasks on SAPIEN's CPU physics, state observations, as plain Gymnasium envs.

ManiSkill3 (the ``envs-maniskill`` extra) is batched at heart: even one env on the CPU
backend speaks torch tensors with a leading batch axis of 1. :class:`ManiSkillEnv` gives
one episode at a time in NumPy, as every other panel's env does:

* ``reset(seed=s, options=...)`` is ManiSkill's own seeded reset (its episode RNG draws the
  objects' and goal's placement from ``s``);
* observations are the task's ``state`` vector (``obs_mode="state"``) as float32 NumPy;
  rewards are floats; ``info["success"]`` is ManiSkill's own success flag (and
  ``info["fail"]`` its failure flag where the task has one);
* ``terminated`` / ``truncated`` are ManiSkill's (a task terminates on success or failure);
* ``control_dt`` is ``1 / control_freq`` (20 Hz for the tabletop tasks).

``backend`` selects the physics: ``cpu`` (``physx_cpu``), ``gpu`` (``physx_cuda``, where
a CUDA GPU exists) or ``auto`` (the GPU when torch sees one, else the CPU). Panels name it
``env: evalband.envs.maniskill:make`` with ``env_kwargs: {task: PickCube-v1}``.

ManiSkill builds its scenes through SAPIEN's renderer even for state observations (every
actor gets a render material), so SAPIEN needs a Vulkan device it supports: a GPU with its
Vulkan driver. Where there is none, :func:`make` says so in one line
(:data:`NO_RENDER_DEVICE`) instead of SAPIEN's ``failed to find a rendering device``.
Source: ManiSkill 3.0.1 (``mani_skill/envs/sapien_env.py``), SAPIEN 3.0.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from evalband.errors import EnvError

__all__ = ["NO_RENDER_DEVICE", "TASKS", "ManiSkillEnv", "make"]

TASKS = ("PickCube-v1", "PushCube-v1", "StackCube-v1", "PegInsertionSide-v1", "PullCube-v1",
         "LiftPegUpright-v1", "PokeCube-v1", "PlugCharger-v1", "RollBall-v1",
         "PullCubeTool-v1", "PlaceSphere-v1")
"""Tabletop tasks whose assets ship in ManiSkill's wheel (the Panda arm and primitives)."""

NO_RENDER_DEVICE = (
    "ManiSkill builds its scenes with SAPIEN's renderer even for state observations, and "
    "SAPIEN found no Vulkan device it supports on this machine: run the ManiSkill panels on "
    "a machine with a GPU and its Vulkan driver (see docs/benchmarks.md)"
)
"""The one line a ManiSkill panel says where SAPIEN cannot render."""


def _numpy(value: Any) -> Any:
    """A ManiSkill value (torch, batch axis of 1) as NumPy without the batch axis."""
    if isinstance(value, dict):
        return {key: _numpy(item) for key, item in value.items()}
    detach = getattr(value, "detach", None)
    if callable(detach):
        value = detach().cpu().numpy()
    if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == 1:
        value = value[0]
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    return value


class ManiSkillEnv(gymnasium.Env):
    """One ManiSkill3 env (``num_envs=1``) behind NumPy and the one-episode Gymnasium API."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, env: Any) -> None:
        self.env = env
        base = env.unwrapped
        self.action_space = base.single_action_space
        self.observation_space = base.single_observation_space
        self.control_dt = 1.0 / float(base.control_freq)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        """ManiSkill's seeded reset (the episode RNG draws the task's placement)."""
        super().reset(seed=seed)
        obs, info = self.env.reset(seed=seed, options=options)
        return _numpy(obs), _numpy(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One control step, in NumPy (``info["success"]`` is ManiSkill's own flag)."""
        obs, reward, terminated, truncated, info = self.env.step(
            np.asarray(action, dtype=np.float32)[None])
        return (_numpy(obs), float(_numpy(reward)), bool(_numpy(terminated)),
                bool(_numpy(truncated)), _numpy(info))

    def close(self) -> None:
        """Close ManiSkill's env."""
        self.env.close()


def _sim_backend(backend: str) -> str:
    if backend not in ("cpu", "gpu", "auto"):
        raise EnvError(f"ManiSkill backend must be cpu, gpu or auto; got {backend!r}")
    if backend == "auto":
        import torch

        backend = "gpu" if torch.cuda.is_available() else "cpu"
    return "physx_cuda" if backend == "gpu" else "physx_cpu"


def make(task: str = "PickCube-v1", backend: str = "cpu", control_mode: str | None = None,
         **kwargs: Any) -> ManiSkillEnv:
    """Build ManiSkill3's ``task`` with state observations (see the module docstring).

    ``kwargs`` go to ManiSkill's ``gym.make`` (e.g. ``robot_uids``).

    Raises:
        EnvError: ManiSkill is not installed, the task is unknown, or SAPIEN has no device
            to build scenes with (:data:`NO_RENDER_DEVICE`).
    """
    try:
        import mani_skill.envs  # noqa: F401 - registers the tasks
    except ImportError as exc:
        raise EnvError(f"the ManiSkill panels need mani-skill (pip install "
                       f"'evalband[envs-maniskill]'); importing it failed: {exc}") from None
    if task not in gymnasium.registry:
        raise EnvError(f"ManiSkill has no task {task!r}; e.g. {', '.join(TASKS[:4])}")
    options = {"obs_mode": "state", "sim_backend": _sim_backend(backend),
               "render_backend": "none", "num_envs": 1, **kwargs}
    if control_mode is not None:
        options["control_mode"] = control_mode
    try:
        env = gymnasium.make(task, **options)
    except RuntimeError as exc:
        text = str(exc)
        if "rendering device" in text or "physical device" in text or "vk::" in text:
            raise EnvError(NO_RENDER_DEVICE) from None
        raise
    return ManiSkillEnv(env)
