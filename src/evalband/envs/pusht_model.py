"""PushT geometry, start distribution and success rule: pure numpy, no MuJoCo.

Shared by :mod:`evalband.envs.pusht` (which builds the MuJoCo model from :func:`mjcf`)
and the scripted expert in :mod:`evalband.policies.pusht` (which must not need MuJoCo).

The block is a T of two boxes, a bar ``2 BAR_HALF[0]`` wide and ``2 BAR_HALF[1]`` tall on
top of a stem ``2 STEM_HALF[0]`` wide and ``2 STEM_HALF[1]`` tall. Its body frame sits at
the T's centroid (area centre), so the block's pose ``(tee_x, tee_y, tee_yaw)`` is the
centroid position and the rotation about it. At yaw 0 the bar is on top (``+y``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from evalband.errors import InvalidParameterError

__all__ = [
    "ENV_ID",
    "BAR_HALF",
    "STEM_HALF",
    "BAR_CENTER_Y",
    "STEM_CENTER_Y",
    "TEE_HALF_HEIGHT",
    "PUSHER_RADIUS",
    "WORKSPACE",
    "TABLE_HALF",
    "TARGET",
    "TIMESTEP",
    "TEE_DAMPING",
    "TEE_YAW_DAMPING",
    "PUSHER_FRICTION",
    "STARTS",
    "START_RADII",
    "PUSHER_START_HALF",
    "PUSHER_CLEARANCE",
    "OBS_NAMES",
    "OBS_DIM",
    "ACT_DIM",
    "tee_outline",
    "wrap_angle",
    "sample_start",
    "pose_success",
    "mjcf",
]

ENV_ID = "evalband/PushT-v0"
"""The Gymnasium id of :class:`evalband.envs.pusht.PushTEnv` (registered by
``import evalband.envs`` without importing MuJoCo)."""
BAR_HALF = (0.06, 0.015)
"""Half width and half height of the T's bar (m)."""
STEM_HALF = (0.015, 0.045)
"""Half width and half height of the T's stem (m)."""
_AREA_BAR = 4.0 * BAR_HALF[0] * BAR_HALF[1]
_AREA_STEM = 4.0 * STEM_HALF[0] * STEM_HALF[1]
# Centroid below the bar's top edge (the stem hangs under the bar).
_CENTROID_BELOW_TOP = (
    _AREA_BAR * BAR_HALF[1] + _AREA_STEM * (2.0 * BAR_HALF[1] + STEM_HALF[1])
) / (_AREA_BAR + _AREA_STEM)
BAR_CENTER_Y = _CENTROID_BELOW_TOP - BAR_HALF[1]
"""The bar's centre in the block frame (m): above the centroid."""
STEM_CENTER_Y = _CENTROID_BELOW_TOP - 2.0 * BAR_HALF[1] - STEM_HALF[1]
"""The stem's centre in the block frame (m): below the centroid."""
TEE_HALF_HEIGHT = 0.01
"""Half thickness of the block (m); the pusher sphere's centre is at this height."""
PUSHER_RADIUS = 0.015
"""Radius of the round pusher (m)."""
WORKSPACE = 0.45
"""Commanded pusher positions are clipped to ``[-WORKSPACE, WORKSPACE]`` per axis (m)."""
TABLE_HALF = 0.5
"""The table is ``[-TABLE_HALF, TABLE_HALF]^2``; a block centroid beyond it has fallen off."""
TARGET = (0.0, 0.0, 0.0)
"""The fixed target pose ``(x, y, yaw)`` of the block."""
TIMESTEP = 0.005
"""MuJoCo physics step (s)."""
TEE_DAMPING = 5.0
"""Viscous damping of the block's slide joints (N s/m): it stops when not pushed."""
TEE_YAW_DAMPING = 0.008
"""Viscous damping of the block's hinge (N m s/rad)."""
PUSHER_FRICTION = 0.8
"""Sliding friction coefficient of the pusher-block contact."""

STARTS = ("train", "held_out")
"""Values of the ``start`` reset option."""
START_RADII = {"train": (0.10, 0.24), "held_out": (0.24, 0.30)}
"""Distance of the block's start from the target (m) for each start distribution."""
PUSHER_START_HALF = 0.32
"""The pusher starts uniformly in ``[-PUSHER_START_HALF, PUSHER_START_HALF]^2``."""
PUSHER_CLEARANCE = 0.13
"""The pusher starts more than this far from the block's centroid (m)."""

OBS_NAMES = (
    "pusher_x",
    "pusher_y",
    "tee_x",
    "tee_y",
    "tee_cos_yaw",
    "tee_sin_yaw",
    "target_x",
    "target_y",
    "target_cos_yaw",
    "target_sin_yaw",
)
"""Names of the observation's entries (the last four are constant: the fixed target)."""
OBS_DIM = len(OBS_NAMES)
"""Length of the observation vector."""
ACT_DIM = 2
"""Length of the action: the pusher's commanded ``(x, y)`` position (m)."""


def tee_outline() -> NDArray[np.float64]:
    """The T's outline in the block frame, counter-clockwise, shape ``(8, 2)``.

    >>> tee_outline().shape
    (8, 2)
    """
    bx, by = BAR_HALF
    sx, sy = STEM_HALF
    top, under = BAR_CENTER_Y + by, BAR_CENTER_Y - by
    bottom = STEM_CENTER_Y - sy
    return np.array(
        [
            [bx, top], [-bx, top], [-bx, under], [-sx, under],
            [-sx, bottom], [sx, bottom], [sx, under], [bx, under],
        ]
    )


def wrap_angle(angle: float) -> float:
    """An angle wrapped to ``[-pi, pi)``.

    >>> round(wrap_angle(3 * math.pi / 2), 6)
    -1.570796
    """
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def sample_start(rng: np.random.Generator, start: str) -> tuple[NDArray[np.float64], float,
                                                                NDArray[np.float64]]:
    """Draw a start: block centroid, block yaw and pusher position.

    The block's centroid is ``r`` from the target in direction ``phi`` with ``r`` uniform on
    :data:`START_RADII` ``[start]`` and ``phi`` uniform on ``[0, 2 pi)``; its yaw is uniform
    on ``[-pi, pi)``; the pusher is uniform on the square of half side
    :data:`PUSHER_START_HALF`, redrawn until it is more than :data:`PUSHER_CLEARANCE` from
    the block's centroid. Draw order: ``r, phi, yaw``, then pusher pairs.

    Args:
        rng: the episode's generator (``np.random.default_rng(seed)``).
        start: ``"train"`` or ``"held_out"``.

    Returns:
        ``(tee_xy, tee_yaw, pusher_xy)``.

    >>> tee, yaw, pusher = sample_start(np.random.default_rng(0), "train")
    >>> bool(0.10 <= np.hypot(*tee) <= 0.24), bool(np.hypot(*(pusher - tee)) > 0.13)
    (True, True)
    """
    if start not in START_RADII:
        raise InvalidParameterError(
            f"start must be one of {', '.join(STARTS)}; got {start!r}"
        )
    low, high = START_RADII[start]
    radius = rng.uniform(low, high)
    phi = rng.uniform(0.0, 2.0 * math.pi)
    yaw = rng.uniform(-math.pi, math.pi)
    tee = np.array([TARGET[0] + radius * math.cos(phi), TARGET[1] + radius * math.sin(phi)])
    while True:
        pusher = rng.uniform(-PUSHER_START_HALF, PUSHER_START_HALF, size=2)
        if math.hypot(*(pusher - tee)) > PUSHER_CLEARANCE:
            return tee, float(yaw), pusher


def pose_success(x: float, y: float, yaw: float, pos_tol: float, yaw_tol: float) -> bool:
    """The success rule: the block's pose is within tolerance of the target pose.

    Success when ``hypot(x - x*, y - y*) <= pos_tol`` and ``|wrap(yaw - yaw*)| <= yaw_tol``
    for the target pose ``(x*, y*, yaw*)`` = :data:`TARGET`.

    >>> pose_success(0.01, 0.0, 0.1, 0.02, 0.2), pose_success(0.0, 0.0, 0.3, 0.02, 0.2)
    (True, False)
    """
    return (
        math.hypot(x - TARGET[0], y - TARGET[1]) <= pos_tol
        and abs(wrap_angle(yaw - TARGET[2])) <= yaw_tol
    )


def mjcf() -> str:
    """The MuJoCo model as an MJCF string.

    A table plane (visual only), the T on ``tee_x``/``tee_y`` slide joints and a ``tee_yaw``
    hinge with viscous damping and a little dry friction (it stops within ~0.02 s when not
    pushed), and a sphere pusher on ``pusher_x``/``pusher_y`` slide joints driven by
    position actuators (kp 400, joint damping 40: critically damped for its 1 kg; force
    capped at 12 N, so it moves at most ~0.3 m/s). Only the pusher and the T collide.

    >>> "tee_yaw" in mjcf()
    True
    """
    bx, by = BAR_HALF
    sx, sy = STEM_HALF
    h = TEE_HALF_HEIGHT
    ws = WORKSPACE
    collide = f'contype="1" conaffinity="1" friction="{PUSHER_FRICTION} 0.005 0.0001"'
    ghost = 'contype="0" conaffinity="0" rgba="0.2 0.8 0.2 0.3"'
    return f"""
<mujoco model="pusht">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{TIMESTEP}" gravity="0 0 0" integrator="implicitfast"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <geom name="table" type="plane" size="{TABLE_HALF} {TABLE_HALF} 0.01" rgba="0.9 0.9 0.9 1"/>
    <geom name="target_bar" type="box" size="{bx} {by} 0.001" pos="0 {BAR_CENTER_Y} 0.001"
          {ghost}/>
    <geom name="target_stem" type="box" size="{sx} {sy} 0.001" pos="0 {STEM_CENTER_Y} 0.001"
          {ghost}/>
    <body name="tee" pos="0 0 {h}">
      <joint name="tee_x" type="slide" axis="1 0 0" damping="{TEE_DAMPING}" frictionloss="0.05"/>
      <joint name="tee_y" type="slide" axis="0 1 0" damping="{TEE_DAMPING}" frictionloss="0.05"/>
      <joint name="tee_yaw" type="hinge" axis="0 0 1" damping="{TEE_YAW_DAMPING}"
             frictionloss="0.0005"/>
      <geom name="tee_bar" type="box" size="{bx} {by} {h}" pos="0 {BAR_CENTER_Y} 0"
            rgba="0.4 0.5 0.8 1" {collide}/>
      <geom name="tee_stem" type="box" size="{sx} {sy} {h}" pos="0 {STEM_CENTER_Y} 0"
            rgba="0.4 0.5 0.8 1" {collide}/>
    </body>
    <body name="pusher" pos="0 0 {h}">
      <joint name="pusher_x" type="slide" axis="1 0 0" damping="40"/>
      <joint name="pusher_y" type="slide" axis="0 1 0" damping="40"/>
      <geom name="pusher" type="sphere" size="{PUSHER_RADIUS}" mass="1" rgba="0.9 0.3 0.2 1"
            {collide}/>
    </body>
  </worldbody>
  <actuator>
    <position name="pusher_x" joint="pusher_x" kp="400" ctrlrange="{-ws} {ws}"
              forcerange="-12 12"/>
    <position name="pusher_y" joint="pusher_y" kp="400" ctrlrange="{-ws} {ws}"
              forcerange="-12 12"/>
  </actuator>
</mujoco>
"""
