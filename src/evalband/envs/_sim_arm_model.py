"""The sim-arm's MuJoCo model: a cylindrical arm with a parallel gripper, a block and a bin.

The arm is built for a grasp benchmark (seed ``004_1f17db57828e22d4``), not for a particular
product: a base that pans about the vertical (``shoulder_pan``, degrees), a carriage that
reaches out radially (``reach``, millimetres from the pan axis), a vertical lift (``lift``,
the fingertips' height above the table in millimetres), a wrist that rolls about the
vertical (``wrist_roll``, degrees) and a parallel gripper (``gripper``, 0 closed .. 100 fully
open, as lerobot's SO-101 reads its gripper). Joint-space commands in the units of lerobot's
``<motor>.pos`` convention, position servos with a speed limit, and a wrist camera on the
palm looking down between the fingers.

Every joint is driven by a position servo (MuJoCo ``position`` actuator with joint damping);
the arm's links compensate gravity (``gravcomp``), as a servo's holding torque does. The
fingers' servos have a bounded force (:data:`FINGER_FORCE`): a grip's squeeze is what the
command asks beyond the block's width, up to that bound, and friction against the block's
weight and the stress routine's jiggle decides whether it holds.
"""

from __future__ import annotations

import math

__all__ = [
    "ACTION_KEYS",
    "BLOCK_HALF",
    "BIN_CENTER",
    "CAMERA_HEIGHT",
    "FINGER_FORCE",
    "FINGER_LENGTH",
    "GRIPPER_MAX_MM",
    "HOME",
    "JOINT_LIMITS",
    "MAX_SPEED",
    "TIMESTEP",
    "model_xml",
]

TIMESTEP = 0.002
"""Physics step, seconds."""

BLOCK_HALF = 0.015
"""Half the block's edge, metres (a 30 mm cube)."""

BLOCK_MASS = 0.03
"""The block's mass, kg (a 3D-printed 30 mm cube)."""

GRIPPER_MAX_MM = 80.0
"""The gripper's opening at ``gripper.pos = 100``, millimetres."""

FINGER_LENGTH = 0.05
"""How far the fingers reach below the palm, metres."""

FINGER_FORCE = 2.0
"""The most force one finger's servo pushes with, newtons."""

CAMERA_HEIGHT = FINGER_LENGTH + 0.012
"""The wrist camera's height above the fingertips, metres (on the palm, looking down)."""

BIN_CENTER = (0.05, -0.30)
"""The bin's centre on the table, metres."""

ACTION_KEYS = ("shoulder_pan.pos", "reach.pos", "lift.pos", "wrist_roll.pos", "gripper.pos")
"""The motors, in lerobot's ``<motor>.pos`` convention, in this order."""

JOINT_LIMITS: dict[str, tuple[float, float]] = {
    "shoulder_pan.pos": (-120.0, 120.0),  # degrees
    "reach.pos": (120.0, 420.0),  # mm from the pan axis
    "lift.pos": (0.0, 250.0),  # mm, fingertips above the table
    "wrist_roll.pos": (-95.0, 95.0),  # degrees
    "gripper.pos": (0.0, 100.0),  # % of the full opening
}
"""Each motor's range, in its command units."""

MAX_SPEED: dict[str, float] = {
    "shoulder_pan.pos": 150.0,  # deg/s
    "reach.pos": 400.0,  # mm/s
    "lift.pos": 400.0,  # mm/s
    "wrist_roll.pos": 300.0,  # deg/s
    "gripper.pos": 250.0,  # %/s
}
"""The servos' speed limits (command units per second): a target moves no faster."""

HOME: dict[str, float] = {
    "shoulder_pan.pos": 0.0,
    "reach.pos": 200.0,
    "lift.pos": 150.0,
    "wrist_roll.pos": 0.0,
    "gripper.pos": 100.0,
}
"""The rest pose the arm returns to between trials."""


def _bin_walls() -> str:
    x, y = BIN_CENTER
    half, wall, height = 0.06, 0.004, 0.04
    walls = [
        (x + half, y, wall, half, height), (x - half, y, wall, half, height),
        (x, y + half, half, wall, height), (x, y - half, half, wall, height),
    ]
    geoms = [
        f'<geom name="bin_wall{i}" type="box" pos="{px:.4f} {py:.4f} {height:.4f}" '
        f'size="{sx:.4f} {sy:.4f} {height:.4f}" rgba="0.25 0.35 0.6 1"/>'
        for i, (px, py, sx, sy, _) in enumerate(walls)
    ]
    floor = (f'<geom name="bin_floor" type="box" pos="{x:.4f} {y:.4f} 0.002" '
             f'size="{half:.4f} {half:.4f} 0.002" rgba="0.25 0.35 0.6 1"/>')
    return "\n      ".join([*geoms, floor])


def model_xml() -> str:
    """The MJCF text of the sim-arm scene (works with MuJoCo 3.x and 4.x).

    >>> import mujoco
    >>> m = mujoco.MjModel.from_xml_string(model_xml())
    >>> m.nu, m.opt.timestep
    (6, 0.002)
    """
    half = BLOCK_HALF
    finger_max = GRIPPER_MAX_MM / 2000.0  # one finger's travel, metres
    deg = math.pi / 180.0
    pan_lo, pan_hi = (v * deg for v in JOINT_LIMITS["shoulder_pan.pos"])
    roll_lo, roll_hi = (v * deg for v in JOINT_LIMITS["wrist_roll.pos"])
    reach_lo, reach_hi = (v / 1000 for v in JOINT_LIMITS["reach.pos"])
    lift_lo, lift_hi = (v / 1000 for v in JOINT_LIMITS["lift.pos"])
    palm_z = FINGER_LENGTH + 0.006
    return f"""
<mujoco model="evalband-sim-arm">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{TIMESTEP}" cone="elliptic" impratio="10" integrator="implicitfast"/>
  <default>
    <geom friction="1.0 0.005 0.0001" solref="0.004 1" solimp="0.95 0.99 0.001"
          condim="4"/>
  </default>
  <worldbody>
    <light pos="0 0 1.5" dir="0 0 -1"/>
    <geom name="table" type="plane" size="0.8 0.8 0.01" rgba="0.75 0.62 0.45 1"/>
    {_bin_walls()}
    <body name="block" pos="0.25 0 {half:.4f}">
      <freejoint name="block"/>
      <geom name="block" type="box" size="{half} {half} {half}" mass="{BLOCK_MASS}"
            rgba="0.85 0.12 0.1 1" friction="0.9 0.005 0.0001"/>
    </body>
    <body name="pan" pos="0 0 0" gravcomp="1">
      <joint name="shoulder_pan" type="hinge" axis="0 0 1" range="{pan_lo:.5f} {pan_hi:.5f}"
             damping="2.0" armature="0.01"/>
      <geom type="cylinder" size="0.05 0.02" pos="0 0 0.02" mass="0.4" contype="0"
            conaffinity="0" rgba="0.2 0.2 0.2 1"/>
      <body name="carriage" pos="0 0 0" gravcomp="1">
        <joint name="reach" type="slide" axis="1 0 0" range="{reach_lo:.4f} {reach_hi:.4f}"
               damping="20" armature="0.05"/>
        <geom type="box" size="0.02 0.02 0.02" pos="0 0 0.3" mass="0.25" contype="0"
              conaffinity="0" rgba="0.3 0.3 0.3 1"/>
        <body name="lift" pos="0 0 0" gravcomp="1">
          <joint name="lift" type="slide" axis="0 0 1" range="{lift_lo:.4f} {lift_hi:.4f}"
                 damping="15" armature="0.05"/>
          <geom type="cylinder" size="0.008 0.05" pos="0 0 0.12" mass="0.1" contype="0"
                conaffinity="0" rgba="0.3 0.3 0.3 1"/>
          <body name="wrist" pos="0 0 {palm_z:.4f}" gravcomp="1">
            <joint name="wrist_roll" type="hinge" axis="0 0 1"
                   range="{roll_lo:.5f} {roll_hi:.5f}" damping="0.05" armature="0.0005"/>
            <geom name="palm" type="box" size="0.015 0.05 0.006" mass="0.08"
                  rgba="0.15 0.15 0.15 1"/>
            <body name="finger_left" pos="0 0 0" gravcomp="1">
              <joint name="finger_left" type="slide" axis="0 1 0" range="0 {finger_max:.4f}"
                     damping="1.5" armature="0.001"/>
              <geom name="finger_left" type="box" size="0.011 0.004 {FINGER_LENGTH / 2:.4f}"
                    pos="0 0.004 {-FINGER_LENGTH / 2 - 0.006:.4f}" mass="0.015"
                    friction="1.2 0.003 0.0001" rgba="0.9 0.9 0.9 1"/>
            </body>
            <body name="finger_right" pos="0 0 0" gravcomp="1">
              <joint name="finger_right" type="slide" axis="0 -1 0" range="0 {finger_max:.4f}"
                     damping="1.5" armature="0.001"/>
              <geom name="finger_right" type="box" size="0.011 0.004 {FINGER_LENGTH / 2:.4f}"
                    pos="0 -0.004 {-FINGER_LENGTH / 2 - 0.006:.4f}" mass="0.015"
                    friction="1.2 0.003 0.0001" rgba="0.9 0.9 0.9 1"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <contact>
    <exclude body1="finger_left" body2="finger_right"/>
    <exclude body1="wrist" body2="finger_left"/>
    <exclude body1="wrist" body2="finger_right"/>
  </contact>
  <actuator>
    <position name="shoulder_pan" joint="shoulder_pan" kp="30" forcerange="-20 20"/>
    <position name="reach" joint="reach" kp="400" forcerange="-60 60"/>
    <position name="lift" joint="lift" kp="400" forcerange="-60 60"/>
    <position name="wrist_roll" joint="wrist_roll" kp="2" forcerange="-1 1"/>
    <position name="finger_left" joint="finger_left" kp="80"
              forcerange="-{FINGER_FORCE} {FINGER_FORCE}"/>
    <position name="finger_right" joint="finger_right" kp="80"
              forcerange="-{FINGER_FORCE} {FINGER_FORCE}"/>
  </actuator>
</mujoco>
"""
