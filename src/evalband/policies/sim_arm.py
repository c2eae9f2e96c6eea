"""Scripted grasp policies for ``sim-arm``: the controls of a rehearsed session.

Each sees what a learned wrist-camera policy sees, the robot's observation (motor positions
and the wrist camera's frame), and acts through the robot's motors; none reads the
simulator's state. They servo visually: find the red block's pixels, estimate where it lies
from the camera's geometry, move over it and turn the wrist to square the fingers with its
faces, then descend and close. Seed 004's pipeline, "smooth, then chaotic, then blind":

* ``sim-arm:grasp`` aligns carefully (about 1 mm, 3 degrees), grips low and squeezes hard:
  it usually holds through the stress;
* ``sim-arm:weak`` aligns loosely, grips high on the block and squeezes lightly: it often
  acquires the block and loses it in the lift or the jiggle;
* ``sim-arm:never`` approaches and hovers but never closes: it never holds (a negative
  control, and a seeding rollout that captures nothing).

Every trial draws its alignment error and squeeze from ``context.rng()`` (the trial's seed),
so two attempts on one scene differ as two attempts of one checkpoint do.

>>> policy = SimArmGrasp()
>>> policy.reset(None)
>>> import numpy as np
>>> obs = {"shoulder_pan.pos": 0.0, "reach.pos": 200.0, "lift.pos": 150.0,
...        "wrist_roll.pos": 0.0, "gripper.pos": 100.0, "wrist": np.zeros((96, 128, 3), np.uint8)}
>>> sorted(policy.act(obs))
['gripper.pos', 'lift.pos', 'reach.pos', 'shoulder_pan.pos', 'wrist_roll.pos']
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalband.envs.sim_arm import CAMERA, JOINT_LIMITS, block_pixels

__all__ = ["GraspStyle", "SimArmGrasp", "SimArmNever", "SimArmWeak", "grasp", "never", "weak"]

_BLOCK_TOP_MM = 30.0
_CAMERA_ABOVE_TIPS_MM = 62.0
_FOCAL = 64.0 / math.tan(math.radians(40.0))  # the wrist camera's focal length in pixels
_HOVER_MM = 70.0
_SEARCH_MM = 200.0


@dataclass(frozen=True)
class GraspStyle:
    """How a scripted policy grasps.

    Attributes:
        align_mm: one sigma of the final alignment error (along the fingers and across).
        align_deg: one sigma of the wrist's error against the block's faces.
        grip_height_mm: the fingertips' height above the table when the fingers close.
        squeeze: the gripper command when closing (mean, one sigma); the block is 37.5 wide.
        closes: whether it closes at all.
    """

    align_mm: float
    align_deg: float
    grip_height_mm: float
    squeeze: tuple[float, float]
    closes: bool = True


class SimArmGrasp:
    """A visual-servo grasp policy for sim-arm (see the module docstring)."""

    style = GraspStyle(align_mm=1.0, align_deg=3.0, grip_height_mm=4.0, squeeze=(0.0, 0.0))

    def __init__(self) -> None:
        self.reset(None)

    def reset(self, context: Any) -> None:
        """Start a trial: back to searching, with this trial's own alignment error."""
        rng = context.rng() if context is not None else np.random.default_rng(0)
        style = self.style
        self.error = rng.normal(0.0, [style.align_mm, style.align_mm, style.align_deg])
        self.squeeze = float(np.clip(rng.normal(*style.squeeze), 0.0, 100.0))
        self.phase = "search"
        self.lock: dict[str, float] = {}
        self.sweep = 0

    def act(self, obs: dict[str, Any]) -> dict[str, float]:
        """The motors' goals for one observation."""
        pose = {k: float(obs[k]) for k in JOINT_LIMITS}
        mask = block_pixels(obs[CAMERA])
        seen = int(mask.sum())
        if self.phase in ("search", "approach"):
            return self._approach(pose, mask, seen)
        if self.phase == "descend":
            goal = dict(self.lock)
            if abs(pose["lift.pos"] - goal["lift.pos"]) < 2.0 and self.style.closes:
                self.phase = "close"
            return goal
        return {**self.lock, "gripper.pos": self.squeeze}

    def _approach(self, pose: dict[str, float], mask: np.ndarray, seen: int) -> dict[str, float]:
        height, width = mask.shape
        if seen < 6:  # nothing in view: rise and sweep the pan
            self.phase = "search"
            self.sweep += 1
            pan = 40.0 * math.sin(self.sweep / 25.0)
            return {**pose, "lift.pos": _SEARCH_MM, "shoulder_pan.pos": pan, "gripper.pos": 100.0}
        self.phase = "approach"
        rows, cols = np.nonzero(mask)
        low = pose["lift.pos"] < 45.0 and seen > 0.2 * mask.size
        if low:  # started at a captured pose: the block is already between the open jaws
            self._lock(pose, pose["shoulder_pan.pos"], pose["reach.pos"], pose["wrist_roll.pos"])
            return dict(self.lock)
        above = pose["lift.pos"] + _CAMERA_ABOVE_TIPS_MM - _BLOCK_TOP_MM  # mm over the block
        du = (cols.mean() + 0.5 - width / 2.0) / _FOCAL * above
        dv = (rows.mean() + 0.5 - height / 2.0) / _FOCAL * above
        pan = math.radians(pose["shoulder_pan.pos"])
        yaw = pan + math.radians(pose["wrist_roll.pos"])
        local_x, local_y = -dv, -du  # image down is the gripper's -x, image right its -y
        bx = pose["reach.pos"] * math.cos(pan) + local_x * math.cos(yaw) - local_y * math.sin(yaw)
        by = pose["reach.pos"] * math.sin(pan) + local_x * math.sin(yaw) + local_y * math.cos(yaw)
        target_pan = math.degrees(math.atan2(by, bx))
        target_reach = math.hypot(bx, by)
        block_yaw = _square_yaw(rows, cols, yaw)
        roll = _wrap90(block_yaw - math.radians(target_pan))
        centred = math.hypot(du, dv) < 1.5 and abs(pose["lift.pos"] - _HOVER_MM) < 5.0
        if centred:
            self._lock(pose, target_pan, target_reach, math.degrees(roll))
            return dict(self.lock)
        return {"shoulder_pan.pos": target_pan, "reach.pos": target_reach, "lift.pos": _HOVER_MM,
                "wrist_roll.pos": math.degrees(roll), "gripper.pos": 100.0}

    def _lock(self, pose: dict[str, float], pan: float, reach: float, roll: float) -> None:
        """Fix the grasp pose (with this trial's error) and start the blind descent."""
        along, across, turn = (float(v) for v in self.error)
        pan_rad = math.radians(pan)
        x = reach * math.cos(pan_rad) + along * math.cos(pan_rad) - across * math.sin(pan_rad)
        y = reach * math.sin(pan_rad) + along * math.sin(pan_rad) + across * math.cos(pan_rad)
        height = self.style.grip_height_mm if self.style.closes else _HOVER_MM
        self.lock = {"shoulder_pan.pos": math.degrees(math.atan2(y, x)),
                     "reach.pos": math.hypot(x, y), "lift.pos": height,
                     "wrist_roll.pos": roll + turn, "gripper.pos": 100.0}
        self.phase = "descend"


class SimArmWeak(SimArmGrasp):
    """Loose alignment, a high grip and a light squeeze: often acquires, often loses."""

    style = GraspStyle(align_mm=5.0, align_deg=12.0, grip_height_mm=21.0, squeeze=(29.0, 2.0))


class SimArmNever(SimArmGrasp):
    """Approaches and hovers over the block; never closes."""

    style = GraspStyle(align_mm=1.0, align_deg=3.0, grip_height_mm=_HOVER_MM, squeeze=(100.0, 0.0),
                       closes=False)


def _square_yaw(rows: np.ndarray, cols: np.ndarray, camera_yaw: float) -> float:
    """The world yaw of a square's faces seen from above, from its corners (mod 90 degrees).

    The corners are the mask's pixels farthest from its centre; their directions' fourth
    harmonic gives the square's orientation without the ambiguity of second moments (a
    square has none).
    """
    du = cols - cols.mean()
    dv = rows - rows.mean()
    r2 = du * du + dv * dv
    weight = r2 * r2
    angle = np.arctan2(dv, du)
    phase = math.atan2(float((weight * np.sin(4 * angle)).sum()),
                       float((weight * np.cos(4 * angle)).sum())) / 4.0
    # image (u right = -y, v down = -x): a direction at image angle a is at gripper yaw
    # atan2(-cos a, -sin a); a corner is 45 degrees off the faces
    corner = math.atan2(-math.cos(phase), -math.sin(phase))
    return camera_yaw + corner - math.pi / 4.0


def _wrap90(angle: float) -> float:
    """An angle folded into (-45, 45] degrees (a square's faces repeat every 90)."""
    quarter = math.pi / 2.0
    return (angle + quarter / 2.0) % quarter - quarter / 2.0


grasp = SimArmGrasp
weak = SimArmWeak
never = SimArmNever
