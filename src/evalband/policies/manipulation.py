"""Scripted and random controls for the manipulation benchmark panels (robosuite, LIBERO).

* :func:`robosuite_lift` — robosuite ``Lift`` with the ``OSC_POSE`` controller: a scripted
  positive control (over the cube, down, close until the fingers stall on it, up). Stateless
  (a function of the observation: cube position, gripper position, finger positions and
  velocities), one observation or a batch (``batched = True``; rows are computed with the
  same elementwise operations, so a batch equals the single calls bit for bit).
* :func:`robosuite_stack` — robosuite ``Stack``: the Lift control on the red cube, then over
  the green cube, down until the red one sits on it, open. Stateless and batched too.
* :class:`UniformRandom` — uniform random actions in ``[-1, 1]^dim`` from the episode's own
  seed (``context.seed``), one generator per lockstep slot: the same actions on every
  backend, batch size and worker count (a chance-level control for any panel whose actions
  are normalised, as robosuite's and LIBERO's are).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalband.policies._contract import EpisodeContext

__all__ = ["UniformRandom", "robosuite_lift", "robosuite_random", "robosuite_stack"]

Array = NDArray[np.float64]

_ABOVE = np.array([0.0, 0.0, 0.06])
_UP = np.array([0.0, 0.0, 1.0])
NEAR_M = 0.012
"""Gripper within this of the cube centre (m), horizontally and vertically: grasp."""


def robosuite_lift(obs: Any, gain: float = 10.0) -> Array:
    """Robosuite Lift (OSC_POSE, 7 actions): approach from above, grasp, lift.

    Action: position deltas ``gain x error`` clipped to [-1, 1] (1 is 5 cm per step in
    robosuite's default OSC), no rotation, gripper ``-1`` open / ``+1`` close. The fingers
    close when the gripper is within :data:`NEAR_M` of the cube; the arm lifts once they have
    stopped on it (finger velocities ~ 0 with the gap under 7 cm: the cube, whatever its
    yaw, is between them).

    >>> obs = {"cube_pos": np.array([0.0, 0.0, 0.83]), "robot0_eef_pos": np.array([0.1, 0.0, 1.0]),
    ...        "robot0_gripper_qpos": np.array([0.02, -0.02]),
    ...        "robot0_gripper_qvel": np.zeros(2)}
    >>> robosuite_lift(obs).round(2).tolist()  # far away: toward the point above the cube
    [-1.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0]
    """
    cube = np.asarray(obs["cube_pos"], dtype=np.float64)
    eef = np.asarray(obs["robot0_eef_pos"], dtype=np.float64)
    fingers = np.asarray(obs["robot0_gripper_qpos"], dtype=np.float64)
    speeds = np.asarray(obs["robot0_gripper_qvel"], dtype=np.float64)
    gap = fingers[..., 0] - fingers[..., 1]
    stalled = np.abs(speeds[..., 0] - speeds[..., 1]) < 0.01
    error = cube - eef
    across = np.linalg.norm(error[..., :2], axis=-1)
    near = (across < NEAR_M) & (np.abs(error[..., 2]) < NEAR_M)
    held = near & (gap < 0.07) & stalled
    target = np.where(near[..., None], eef,
                      np.where((across > NEAR_M)[..., None], cube + _ABOVE, cube))
    move = np.clip(gain * (target - eef), -1.0, 1.0)
    move = np.where(held[..., None], _UP, move)
    grip = np.where(near, 1.0, -1.0)[..., None]
    turn = np.zeros(move.shape[:-1] + (3,))
    return np.concatenate([move, turn, grip], axis=-1)


robosuite_lift.batched = True  # type: ignore[attr-defined]


def robosuite_stack(obs: Any, gain: float = 10.0) -> Array:
    """Robosuite Stack (OSC_POSE): lift the red cube (A), carry it over the green one (B), drop.

    While the red cube is not held above the green one, :func:`robosuite_lift` acts on it.
    Held (within 2 cm of the gripper, 3 cm above B): move it 10 cm above B, then over B
    (horizontal error under 6 mm), then down until it is 5.5 cm above B's centre; there the
    gripper opens (success is the red cube resting on the green one, released).

    >>> obs = {"cubeA_pos": np.array([0.0, 0.0, 0.90]), "cubeB_pos": np.array([0.1, 0.0, 0.83]),
    ...        "robot0_eef_pos": np.array([0.0, 0.0, 0.905]),
    ...        "robot0_gripper_qpos": np.array([0.02, -0.02]),
    ...        "robot0_gripper_qvel": np.zeros(2)}
    >>> robosuite_stack(obs).round(2).tolist()  # held: toward the point above B, closed
    [1.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0]
    """
    cube_a = np.asarray(obs["cubeA_pos"], dtype=np.float64)
    cube_b = np.asarray(obs["cubeB_pos"], dtype=np.float64)
    eef = np.asarray(obs["robot0_eef_pos"], dtype=np.float64)
    lifted = robosuite_lift({"cube_pos": cube_a, "robot0_eef_pos": eef,
                             "robot0_gripper_qpos": obs["robot0_gripper_qpos"],
                             "robot0_gripper_qvel": obs["robot0_gripper_qvel"]}, gain)
    holding = ((np.linalg.norm(cube_a - eef, axis=-1) < 0.02)
               & (cube_a[..., 2] > cube_b[..., 2] + 0.03))
    across = cube_b[..., :2] - cube_a[..., :2]
    aligned = np.linalg.norm(across, axis=-1) < 0.006
    low = cube_a[..., 2] - cube_b[..., 2] < 0.055
    height = np.where(aligned, 0.05, 0.10)[..., None]
    move = np.concatenate([np.clip(gain * across, -1.0, 1.0),
                           np.clip(gain * (cube_b[..., 2:] + height - cube_a[..., 2:]),
                                   -1.0, 1.0)], axis=-1)
    release = aligned & low
    move = np.where(release[..., None], 0.0, move)
    grip = np.where(release, -1.0, 1.0)[..., None]
    carried = np.concatenate([move, np.zeros(move.shape[:-1] + (3,)), grip], axis=-1)
    return np.where((holding | release)[..., None], carried, lifted)


robosuite_stack.batched = True  # type: ignore[attr-defined]


class UniformRandom:
    """Uniform random actions in ``[-1, 1]^dim`` drawn from each episode's own seed.

    Per-slot state (:class:`~evalband.policies.SlotPolicy`): ``reset(context)`` seeds slot
    ``context.slot`` with ``context.seed``; ``act_batch`` draws one action per row from its
    slot's generator. One at a time, it is slot 0.

    >>> policy = UniformRandom(dim=2)
    >>> policy.reset(EpisodeContext("r", "p", "", {}, 0, 0, 1, seed=3))
    >>> a = policy.act(None)
    >>> policy.reset(EpisodeContext("r", "p", "", {}, 0, 0, 1, seed=3, slot=4))
    >>> bool((policy.act_batch([None], [4])[0] == a).all())
    True
    """

    def __init__(self, dim: int = 7) -> None:
        self.dim = int(dim)
        self._rngs: dict[int, np.random.Generator] = {}

    def reset(self, context: EpisodeContext) -> None:
        """Seed the episode's slot from ``context.seed``."""
        self._rngs[context.slot] = context.rng()

    def act(self, obs: Any) -> Array:
        """An action for slot 0."""
        return self._draw(0)

    def act_batch(self, obs_batch: Any, slots: Sequence[int]) -> Array:
        """One action per row, from the row's slot."""
        return np.stack([self._draw(slot) for slot in slots])

    def _draw(self, slot: int) -> Array:
        rng = self._rngs.setdefault(slot, np.random.default_rng(0))
        return rng.uniform(-1.0, 1.0, self.dim)


robosuite_random = UniformRandom(dim=7)
"""Uniform random actions for robosuite's 7 single-arm OSC actions (and LIBERO's)."""
