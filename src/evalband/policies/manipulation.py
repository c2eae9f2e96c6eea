"""Scripted and random controls for the manipulation benchmark panels (robosuite, LIBERO).

* :func:`robosuite_lift` — robosuite ``Lift`` with the ``OSC_POSE`` controller: a scripted
  positive control (over the cube, down, close until the fingers stall on it, up). Stateless
  (a function of the observation: cube position, gripper position, finger positions and
  velocities), one observation or a batch (``batched = True``; rows are computed with the
  same elementwise operations, so a batch equals the single calls bit for bit).
* :func:`robosuite_stack` — robosuite ``Stack``: the Lift control on the red cube, then over
  the green cube, down until the red one sits on it, open. Stateless and batched too.
* :func:`robosuite_pickplace` — robosuite's single-object ``PickPlace`` variants (``Can``,
  ``Milk``, ``Bread``, ``Cereal``; the object is the one whose ``<Name>_pos`` is observed):
  the Lift control on the object, then carried at 1.03 m over its bin quadrant and dropped
  there, the gripper rising away (success needs it 7 cm off the object). One observation.
* :func:`robosuite_nut` — robosuite ``NutAssemblyRound`` / ``NutAssemblySquare``: the gripper
  turns to the nut's yaw, grasps the handle (6 cm from the nut's centre along its x axis),
  lifts the nut above the peg while turning the handle away from the far side of the
  workspace, carries the hole over the peg, lowers it and lets go. One observation.
* :func:`robosuite_door` — robosuite ``Door`` (with its latch): the gripper pitched to point
  at the door, fingers closing vertically, grasps the handle 4 cm in from its end, pushes
  it down along its arc (turning the wrist with it, up to 1 rad: the wrist's limit) until
  the latch clears (handle past 1.3 rad), then pulls the door along its swing. One
  observation.
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

__all__ = ["UniformRandom", "robosuite_door", "robosuite_lift", "robosuite_nut",
           "robosuite_pickplace", "robosuite_random", "robosuite_stack"]

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


def _object_in(obs: Any, names: Any, control: str, tasks: str) -> str:
    """The one object of ``names`` whose ``<Name>_pos`` the observation carries."""
    name = next((n for n in names if f"{n}_pos" in obs), None)
    if name is None:
        raise KeyError(f"{control} needs one of {sorted(names)}_pos in the observation "
                       f"({tasks})")
    return str(name)


BIN_QUADRANTS = {"Milk": (0.0025, 0.1575), "Bread": (0.1975, 0.1575),
                 "Cereal": (0.0025, 0.4025), "Can": (0.1975, 0.4025)}
"""robosuite 1.4 PickPlace: each object's target quadrant centre in bin 2 (x, y in m), from
``PickPlace.bin2_pos`` (0.1, 0.28) and ``bin_size`` (0.39 x 0.49) as ``_get_placement_initializer``
lays them out."""

_IN_QUADRANT = np.array([0.07, 0.09])
"""Object centre within this of its quadrant's centre (x, y): inside the quadrant's walls."""


def robosuite_pickplace(obs: Any, gain: float = 10.0) -> Array:
    """Robosuite single-object PickPlace (OSC_POSE): pick the object, drop it in its bin.

    Not holding it: :func:`robosuite_lift` on the object. Holding it (within 3 cm, fingers
    closed): up to 1.03 m, then over the quadrant's centre; within 3 cm of it, open. Once
    the object is over its quadrant, the gripper opens and rises (robosuite counts the
    object in only with the gripper 7 cm away).

    >>> obs = {"Can_pos": np.array([0.19, 0.39, 1.0]),
    ...        "robot0_eef_pos": np.array([0.19, 0.39, 1.02]),
    ...        "robot0_gripper_qpos": np.array([0.02, -0.02]), "robot0_gripper_qvel": np.zeros(2)}
    >>> robosuite_pickplace(obs).tolist()  # over the can's quadrant: let go, rise
    [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0]
    """
    name = _object_in(obs, BIN_QUADRANTS, "robosuite_pickplace",
                      "robosuite's single-object PickPlace<Object> tasks")
    item = np.asarray(obs[f"{name}_pos"], dtype=np.float64)
    eef = np.asarray(obs["robot0_eef_pos"], dtype=np.float64)
    fingers = np.asarray(obs["robot0_gripper_qpos"], dtype=np.float64)
    goal = np.array(BIN_QUADRANTS[name])
    if bool(np.all(np.abs(item[:2] - goal) < _IN_QUADRANT)):
        return np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0])
    holding = np.linalg.norm(item - eef) < 0.03 and fingers[0] - fingers[1] < 0.07
    if holding and item[2] > 0.83:
        across = goal - eef[:2]
        if np.linalg.norm(across) < 0.03:
            return np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0])
        up = np.clip(gain * (1.03 - eef[2]), -1.0, 1.0)
        move = np.clip(gain * across, -1.0, 1.0) if eef[2] > 0.95 else np.zeros(2)
        return np.concatenate([move, [up], np.zeros(3), [1.0]])
    return robosuite_lift({"cube_pos": item, "robot0_eef_pos": eef,
                           "robot0_gripper_qpos": fingers,
                           "robot0_gripper_qvel": obs["robot0_gripper_qvel"]}, gain)


NUT_PEGS = {"SquareNut": (0.23, 0.1), "RoundNut": (0.23, -0.1)}
"""robosuite 1.4 NutAssembly: each nut's peg (x, y in m; ``peg1``/``peg2`` of its arena)."""

NUT_HANDLE_M = 0.06
"""The handle's site, along the nut's own x axis from its centre (robosuite's nut models)."""

_DOWN = np.diag([1.0, -1.0, -1.0])
"""The gripper pointing down, fingers closing along world y (robosuite's start)."""


def _quat_matrix(quat: Array) -> Array:
    """Rotation matrix of a robosuite (x, y, z, w) quaternion."""
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _rotvec(rotation: Array) -> Array:
    """Axis x angle of a rotation matrix (world frame, what OSC_POSE's rotation deltas are)."""
    angle = float(np.arccos(np.clip((np.trace(rotation) - 1.0) / 2.0, -1.0, 1.0)))
    if angle < 1e-9:
        return np.zeros(3)
    axis: Array = np.array([rotation[2, 1] - rotation[1, 2], rotation[0, 2] - rotation[2, 0],
                            rotation[1, 0] - rotation[0, 1]])
    scaled: Array = axis * float(angle / (2.0 * np.sin(angle)))
    return scaled


def _yaw(angle: float) -> Array:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _wrap(angle: float) -> float:
    return float(np.arctan2(np.sin(angle), np.cos(angle)))


def robosuite_nut(obs: Any, gain: float = 10.0) -> Array:
    """Robosuite single-nut NutAssembly (OSC_POSE): the nut's handle onto its peg.

    The handle is found from the nut's pose (:data:`NUT_HANDLE_M` along its yaw). Not
    holding it: the gripper turns to the nut's yaw (either way: the fingers are symmetric),
    goes over the handle, down, and closes. Holding it: up until the nut is over 1 m high,
    turning (at most 0.15 rad a step) so that the handle points back toward the robot (the
    far side of the peg is out of the arm's reach), then over the peg (its centre within
    8 mm), down, and, once the nut is round the peg under 0.87 m, open and rise.

    >>> obs = {"RoundNut_pos": np.array([0.23, -0.1, 0.86]),
    ...        "RoundNut_quat": np.array([0.0, 0.0, 1.0, 0.0]),
    ...        "robot0_eef_pos": np.array([0.17, -0.1, 0.86]),
    ...        "robot0_eef_quat": np.array([1.0, 0.0, 0.0, 0.0]),
    ...        "robot0_gripper_qpos": np.array([0.015, -0.015]), "robot0_gripper_qvel": np.zeros(2)}
    >>> robosuite_nut(obs).round(2).tolist()  # round the peg: let go, rise
    [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0]
    """
    name = _object_in(obs, NUT_PEGS, "robosuite_nut",
                      "robosuite's NutAssemblyRound / NutAssemblySquare")
    nut = np.asarray(obs[f"{name}_pos"], dtype=np.float64)
    quat = np.asarray(obs[f"{name}_quat"], dtype=np.float64)
    eef = np.asarray(obs["robot0_eef_pos"], dtype=np.float64)
    fingers = np.asarray(obs["robot0_gripper_qpos"], dtype=np.float64)
    speeds = np.asarray(obs["robot0_gripper_qvel"], dtype=np.float64)
    peg = np.array(NUT_PEGS[name])
    yaw = 2.0 * float(np.arctan2(quat[2], quat[3]))
    handle = nut + NUT_HANDLE_M * np.array([np.cos(yaw), np.sin(yaw), 0.0])
    current = _quat_matrix(_as_array(obs["robot0_eef_quat"]))
    gripper_yaw = float(np.arctan2(current[1, 0], current[0, 0]))
    aim = yaw + np.pi * np.round((gripper_yaw - yaw) / np.pi)
    rot = np.clip(_rotvec(_yaw(aim) @ _DOWN @ current.T) / 0.25, -1.0, 1.0)
    to_peg = peg - nut[:2]
    if np.linalg.norm(to_peg) < 0.02 and nut[2] < 0.87:
        return np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0])
    error = handle - eef
    across = float(np.linalg.norm(error[:2]))
    gap = fingers[0] - fingers[1]
    held = np.linalg.norm(error) < 0.02 and gap < 0.06 and abs(speeds[0] - speeds[1]) < 0.01
    if held:
        want = yaw if np.cos(yaw) < -0.2 else float(np.sign(np.sin(yaw) + 1e-9)) * (np.pi / 2 + 0.2)
        turn = _wrap(want - yaw)
        if nut[2] > 0.97:
            rot = np.clip(_rotvec(_yaw(gripper_yaw + turn) @ _DOWN @ current.T) / 0.25,
                          -0.3, 0.3)
        if np.linalg.norm(to_peg) < 0.008:
            up = -0.5
        elif nut[2] < 1.0:
            up = 1.0
        else:
            up = float(np.clip(gain * (1.02 - nut[2]), -1.0, 1.0))
        move = (np.clip(gain * to_peg, -1.0, 1.0) if nut[2] > 0.97 and abs(turn) < 0.2
                else np.zeros(2))
        return np.concatenate([move, [up], rot, [1.0]])
    if across < 0.01 and abs(error[2]) < 0.01:
        return np.concatenate([np.clip(gain * error, -1.0, 1.0), rot, [1.0]])
    aligned = abs(_wrap(aim - gripper_yaw)) < 0.1
    target = handle + np.array([0.0, 0.0, 0.06]) if across > 0.01 or not aligned else handle
    return np.concatenate([np.clip(gain * (target - eef), -1.0, 1.0), rot, [-1.0]])


def _as_array(value: Any) -> Array:
    return np.asarray(value, dtype=np.float64)


_PITCHED = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]) @ _DOWN
"""The gripper pointing along world -y (at the door), fingers closing along world z."""

DOOR_UNLATCHED_RAD = 1.3
"""Handle angle past which the latch has cleared the frame (it does at about 1.15 rad)."""

_WRIST_TURN_MAX = 1.0
"""How far the wrist follows the handle's turn (joint 7 reaches its limit a little further)."""


def _about_minus_y(angle: float) -> Array:
    """Rotation by ``angle`` about world -y (the handle's axis)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]])


def robosuite_door(obs: Any, gain: float = 10.0, speed: float = 0.5) -> Array:
    """Robosuite Door (OSC_POSE, latched): grasp the handle, turn it, pull the door open.

    The grasp point is 4 cm from the handle's end toward its pivot (the handle lever turns
    about the door's normal by ``handle_qpos``). The gripper turns to point at the door
    (a top-down hand would hit it: the handle is 7.5 cm in front), comes in from 8 cm in
    front, closes; holding, it moves the grasp point along the handle's arc (wrist turning
    with it up to :data:`_WRIST_TURN_MAX`) until the handle is past
    :data:`DOOR_UNLATCHED_RAD` or the door has moved, then along the door's swing
    (``hinge_qpos``); success is the door open past 0.3 rad.

    >>> obs = {"handle_pos": np.array([-0.1, -0.25, 1.07]), "handle_qpos": np.array(0.0),
    ...        "hinge_qpos": np.array(0.0), "robot0_eef_pos": np.array([-0.06, -0.25, 1.07]),
    ...        "robot0_eef_quat": np.array([0.7071, 0.0, 0.0, 0.7071]),
    ...        "robot0_gripper_qpos": np.array([0.02, -0.02]), "robot0_gripper_qvel": np.zeros(2)}
    >>> robosuite_door(obs).round(2).tolist()  # holding the handle: push it down its arc
    [0.0, 0.0, -0.5, 0.0, 0.0, 0.0, 1.0]
    """
    turn = float(obs["handle_qpos"])
    swing = float(obs["hinge_qpos"])
    grasp = (np.asarray(obs["handle_pos"], dtype=np.float64)
             + 0.04 * np.array([np.cos(turn), 0.0, np.sin(turn)]))
    eef = np.asarray(obs["robot0_eef_pos"], dtype=np.float64)
    fingers = np.asarray(obs["robot0_gripper_qpos"], dtype=np.float64)
    speeds = np.asarray(obs["robot0_gripper_qvel"], dtype=np.float64)
    gap = fingers[0] - fingers[1]
    current = _quat_matrix(_as_array(obs["robot0_eef_quat"]))
    aim = _about_minus_y(min(max(turn, 0.0), _WRIST_TURN_MAX)) @ _PITCHED
    rotation = _rotvec(aim @ current.T)
    rot = np.clip(rotation / 0.25, -1.0, 1.0)
    error = grasp - eef
    off = float(np.linalg.norm(error[[0, 2]]))
    grasping = np.linalg.norm(error) < 0.035 and 0.02 < gap < 0.06
    near = (off < 0.015 and abs(error[1]) < 0.015) or grasping
    held = (near and gap < 0.07 and abs(speeds[0] - speeds[1]) < 0.01) or grasping
    if not near:
        if np.linalg.norm(rotation) > 0.2:
            move = np.zeros(3)
        else:
            target = grasp + np.array([0.0, 0.08, 0.0]) if off > 0.01 else grasp
            move = np.clip(gain * (target - eef), -1.0, 1.0)
    elif not held:
        move = np.clip(gain * error, -1.0, 1.0)
    elif turn < DOOR_UNLATCHED_RAD and swing < 0.05:
        move = speed * np.array([np.sin(turn), 0.0, -np.cos(turn)])
    else:
        move = speed * np.array([-np.sin(swing), np.cos(swing), 0.0])
    return np.concatenate([move, rot, [1.0 if near else -1.0]])


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
