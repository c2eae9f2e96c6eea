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
* :func:`fetch_reach_p` — gymnasium-robotics ``FetchReach-v4``: a P-controller moving the
  gripper toward the goal (dict observations).
* :func:`point_mass_pd` — dm_control ``point_mass`` via shimmy
  (``dm_control/point_mass-easy-v0``): a PD controller toward the target at the origin.
* :func:`aloha_hold` — gym-aloha (``obs_type: pixels_agent_pos``): holds the joints where
  they are (a negative control: the bimanual tasks need a learned policy).
* :func:`pusht_push` — gym-pusht ``PushT-v0`` (state observations): pushes the T onto the
  goal pose (a scripted positive control: about half its episodes meet the coverage rule).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "aloha_hold",
    "fetch_reach_p",
    "inverted_pendulum_pd",
    "point_mass_pd",
    "point_maze_p",
    "pusht_push",
    "reacher_ik_pd",
]

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


def fetch_reach_p(obs: dict[str, Any], kp: float = 10.0) -> Array:
    """FetchReach-v4: gripper displacement ``kp (goal - gripper)`` in [-1, 1], gripper still.

    >>> fetch_reach_p({"achieved_goal": np.zeros(3), "desired_goal": np.array([0.05, 0, -1])})
    array([ 0.5,  0. , -1. ,  0. ])
    """
    goal = np.asarray(obs["desired_goal"], dtype=np.float64)
    here = np.asarray(obs["achieved_goal"], dtype=np.float64)
    move = np.clip(kp * (goal - here), -1.0, 1.0)
    return np.concatenate([move, np.zeros(move.shape[:-1] + (1,))], axis=-1)


def point_mass_pd(obs: dict[str, Any], kp: float = 20.0, kd: float = 3.0) -> Array:
    """dm_control point_mass: ``-kp position - kd velocity`` in [-1, 1] (target at the origin).

    >>> point_mass_pd({"position": np.array([0.01, -0.2]), "velocity": np.zeros(2)})
    array([-0.2,  1. ])
    """
    position = np.asarray(obs["position"], dtype=np.float64)
    velocity = np.asarray(obs["velocity"], dtype=np.float64)
    return np.asarray(np.clip(-kp * position - kd * velocity, -1.0, 1.0))


def aloha_hold(obs: dict[str, Any]) -> Array:
    """gym-aloha: command the current joint positions (``agent_pos``, 14 numbers).

    >>> aloha_hold({"agent_pos": np.arange(14.0), "pixels": {}}).shape
    (14,)
    """
    return np.array(obs["agent_pos"], dtype=np.float64)


PUSHT_GOAL = (256.0, 256.0, math.pi / 4)
"""gym-pusht's goal pose of the T: position (pixels) and angle (rad)."""

_T_COG = np.array([0.0, 45.0])  # the T's centre of gravity in its body frame (gym-pusht)
_ARENA = (20.0, 492.0)  # where the agent can stand (pixels)


def _rot(angle: float) -> Array:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def _wrap1(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def _in_tee(x: float, y: float) -> bool:
    """A body-frame point inside gym-pusht's T (bar 120 x 30 on top of a 30 x 90 stem)."""
    return (-60.0 <= x <= 60.0 and 0.0 <= y <= 30.0) or (-15.0 <= x <= 15.0 and 30.0 <= y <= 120.0)


def _exit_distance(direction: Array) -> float:
    """How far from the T's centre of gravity its boundary is along a body-frame direction."""
    t = 0.0
    while t < 130.0 and _in_tee(*(_T_COG + (t + 1.0) * direction)):
        t += 1.0
    return t


def _inside_arena(point: Array) -> bool:
    return bool(np.all((point > _ARENA[0]) & (point < _ARENA[1])))


def _around(agent: Array, cog: Array, target: Array) -> Array:
    """``target``, or a waypoint on a 100 px circle around the block when the way crosses it."""
    seg = target - agent
    length2 = float(seg @ seg)
    if length2 < 1e-12:
        return target
    t = min(1.0, max(0.0, float((cog - agent) @ seg) / length2))
    here = math.atan2(*(agent - cog)[::-1])
    there = math.atan2(*(target - cog)[::-1])
    turn = _wrap1(there - here)
    if float(np.hypot(*(agent + t * seg - cog))) > 80.0 or abs(turn) < 0.6:
        return target
    angle = here + max(-0.8, min(0.8, turn))
    return np.asarray(cog + 100.0 * np.array([math.cos(angle), math.sin(angle)]))


def pusht_push(obs: Any) -> Array:
    """gym-pusht (``obs_type: state``): translate the T onto the goal, then turn it.

    The observation is ``[agent x, agent y, block x, block y, block angle]``; the action is the
    agent's target position. Stateless: each step picks a push from the pose error. Far from
    the goal, it pushes the T's centre of gravity toward the goal's (the contact point found by
    casting a ray through the T; another direction when that point is off the table); near
    it, it pushes one end of the bar to turn the T; the agent goes around the block, not
    through it. A scripted positive control, not an expert: about half of its episodes meet
    the env's 95 % coverage rule.

    >>> pusht_push(np.array([100.0, 120.0, 256.0, 256.0, math.pi / 4])).tolist()  # T on goal
    [100.0, 120.0]
    """
    o = np.asarray(obs, dtype=np.float64)
    agent, pos, angle = o[:2], o[2:4], float(o[4])
    turn = _rot(angle)
    cog = pos + turn @ _T_COG
    goal_cog = np.asarray(PUSHT_GOAL[:2]) + _rot(PUSHT_GOAL[2]) @ _T_COG
    error = goal_cog - cog
    distance = float(np.hypot(*error))
    d_angle = _wrap1(PUSHT_GOAL[2] - angle)
    if (abs(d_angle) > 0.07 and distance < 20.0) or (distance <= 2.0 and abs(d_angle) > 0.02):
        side = math.copysign(1.0, d_angle)
        contact = pos + turn @ np.array([50.0 * side, 0.0])  # the bar's outer face, one end
        normal = turn @ np.array([0.0, 1.0])
        if not _inside_arena(contact - 25.0 * normal):  # the stem's end instead
            contact = pos + turn @ np.array([15.0 * side, 110.0])
            normal = turn @ np.array([-side, 0.0])
        push = 12.0 * min(1.0, abs(d_angle) / 0.6) if distance < 20.0 else 5.0
    elif distance > 2.0:
        base = error / distance
        for k in (0, 1, -1, 2, -2, 3, -3):
            normal = _rot(0.5 * k) @ base
            contact = cog - normal * _exit_distance(turn.T @ (-normal))
            if _inside_arena(contact - 25.0 * normal):
                break
        push = min(distance, 15.0)
    else:
        return np.asarray(agent.copy())
    start = contact - 25.0 * normal
    offset = agent - start
    along = float(offset @ normal)
    lateral = abs(float(offset[0] * normal[1] - offset[1] * normal[0]))
    if lateral < 8.0 and -6.0 < along < 45.0:  # behind the contact: push
        return np.asarray(np.clip(agent + push * normal, 0.0, 512.0))
    return np.asarray(np.clip(_around(agent, cog, start), 0.0, 512.0))
