"""Classical controllers for the shipped benchmark panels (``examples/``): positive controls.

Each is a stateless function of the observation, so one-at-a-time, lockstep and process
runs give the same records. The array controllers take one observation ``(D,)`` or a batch
``(B, D)`` (``batched = True``) and compute each row with the same elementwise operations,
so a batched call equals the single calls bit for bit.

* :func:`reacher_ik_pd` — gymnasium ``Reacher-v5``: two-link inverse kinematics to the
  target, then a joint PD controller.
* :func:`inverted_pendulum_pd` — gymnasium ``InvertedPendulum-v5``: a linear state feedback.
* :func:`point_maze_p` — gymnasium-robotics ``PointMaze_Open-v3``: a P-controller toward
  the goal with velocity damping (dict observations).
* :func:`pusht_push` — gym-pusht ``PushT-v0`` (state observations): pushes the block's
  centre onto the goal's (a weak, scripted positive control; it rarely meets the full
  coverage rule).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["reacher_ik_pd", "inverted_pendulum_pd", "point_maze_p", "pusht_push"]

Array = NDArray[np.float64]

REACHER_LINKS = (0.1, 0.11)
"""Reacher's link lengths (m): shoulder to elbow, elbow to fingertip."""


def _wrap(angle: Array) -> Array:
    return np.asarray((angle + np.pi) % (2.0 * np.pi) - np.pi)


def reacher_ik_pd(obs: Any, kp: float = 2.0, kd: float = 0.1) -> Array:
    """Reacher-v5: joint targets by two-link inverse kinematics, then PD torques in [-1, 1].

    The observation is ``[cos q, sin q, target xy, joint velocities, fingertip - target]``
    (10 numbers); of the two elbow solutions, the one nearer the current joints is used.

    >>> obs = np.array([1.0, 1.0, 0.0, 0.0, 0.0, 0.21, 0.0, 0.0, 0.21, -0.21])
    >>> reacher_ik_pd(obs).round(6).tolist()  # arm along x, target along y: turn the shoulder
    [1.0, 0.0]
    """
    o = np.asarray(obs, dtype=np.float64)
    l1, l2 = REACHER_LINKS
    q0 = np.arctan2(o[..., 2], o[..., 0])
    q1 = np.arctan2(o[..., 3], o[..., 1])
    x, y = o[..., 4], o[..., 5]
    cos_elbow = np.clip((x * x + y * y - l1 * l1 - l2 * l2) / (2.0 * l1 * l2), -1.0, 1.0)
    errors = []
    for elbow in (np.arccos(cos_elbow), -np.arccos(cos_elbow)):
        shoulder = np.arctan2(y, x) - np.arctan2(l2 * np.sin(elbow), l1 + l2 * np.cos(elbow))
        errors.append((_wrap(shoulder - q0), _wrap(elbow - q1)))
    (a0, a1), (b0, b1) = errors
    first = np.abs(a0) + np.abs(a1) <= np.abs(b0) + np.abs(b1)
    e0, e1 = np.where(first, a0, b0), np.where(first, a1, b1)
    tau = np.stack([kp * e0 - kd * o[..., 6], kp * e1 - kd * o[..., 7]], axis=-1)
    return np.asarray(np.clip(tau, -1.0, 1.0))


reacher_ik_pd.batched = True  # type: ignore[attr-defined]

PENDULUM_GAINS = (1.0, 10.0, 1.0, 2.0)
"""Feedback gains on ``[cart position, pole angle, cart velocity, pole angular velocity]``."""


def inverted_pendulum_pd(obs: Any) -> Array:
    """InvertedPendulum-v5: force ``k . obs`` clipped to [-3, 3] (balances 1000 steps).

    >>> inverted_pendulum_pd(np.array([0.0, 0.1, 0.0, 0.0])).tolist()
    [1.0]
    """
    o = np.asarray(obs, dtype=np.float64)
    k = PENDULUM_GAINS
    force = k[0] * o[..., 0] + k[1] * o[..., 1] + k[2] * o[..., 2] + k[3] * o[..., 3]
    return np.asarray(np.clip(force, -3.0, 3.0))[..., None]


inverted_pendulum_pd.batched = True  # type: ignore[attr-defined]


def point_maze_p(obs: dict[str, Any], kp: float = 10.0, kd: float = 1.0) -> Array:
    """PointMaze_Open-v3: ``kp (goal - position) - kd velocity``, clipped to [-1, 1].

    >>> point_maze_p({"observation": np.array([0.0, 0.0, 0.0, 0.0]),
    ...               "achieved_goal": np.zeros(2), "desired_goal": np.array([0.05, -1.0])})
    array([ 0.5, -1. ])
    """
    goal = np.asarray(obs["desired_goal"], dtype=np.float64)
    here = np.asarray(obs["achieved_goal"], dtype=np.float64)
    velocity = np.asarray(obs["observation"], dtype=np.float64)[2:4]
    return np.asarray(np.clip(kp * (goal - here) - kd * velocity, -1.0, 1.0))


PUSHT_GOAL = (256.0, 256.0)
"""gym-pusht's goal position of the T (pixels)."""


def pusht_push(obs: Any, standoff: float = 45.0) -> Array:
    """gym-pusht (``obs_type: state``): put the agent behind the block and push it to the goal.

    The observation is ``[agent x, agent y, block x, block y, block angle]``; the action is
    the agent's target position. Behind the block (opposite the goal) the agent pushes
    toward the goal; otherwise it moves to the standoff point first.

    >>> pusht_push(np.array([300.0, 300.0, 200.0, 256.0, 0.0])).round(1).tolist()
    [155.0, 256.0]
    """
    o = np.asarray(obs, dtype=np.float64)
    agent, block = o[:2], o[2:4]
    to_goal = np.asarray(PUSHT_GOAL) - block
    distance = float(np.hypot(*to_goal))
    if distance < 1.0:
        return np.asarray(agent.copy())
    direction = to_goal / distance
    behind = block - standoff * direction
    offset = agent - block
    along = float(offset @ direction)
    across = float(abs(offset[0] * direction[1] - offset[1] * direction[0]))
    if along < -0.5 * standoff and across < 0.3 * standoff:  # behind it: push through
        return np.asarray(np.clip(block + min(distance, 40.0) * direction, 0.0, 512.0))
    return np.asarray(np.clip(behind, 0.0, 512.0))
