"""``sim-arm``: a simulated arm with lerobot's robot interface, for rehearsing hardware sessions.

A MuJoCo arm with a parallel gripper, a red block and a bin (:mod:`evalband.envs.
_sim_arm_model`), a wrist camera (:mod:`evalband.envs._sim_arm_render`) and the gripper's
measured width, behind the methods of lerobot's ``Robot`` (``connect``, ``disconnect``,
``get_observation``, ``send_action``, ``observation_features``, ``action_features``, the camera
in the observation): a whole session can be rehearsed on it before robot time, and every
part of the instrument is tested on physics.

Time. The physics follows a clock (``clock``, a function returning seconds; the monotonic
clock by default): each call steps the simulation up to the clock's present, so under the
real clock the arm moves in real time and a slow policy leaves it running on a stale
command, as a real arm does; under a virtual clock (``evalband.session.VirtualClock``) a
session runs faster than real time with the same physics.

What a real arm does that the simulation does too:

* **control latency**: a command takes effect ``action_latency_s`` after ``send_action``
  (bus write, servo firmware) and the camera's frame shows the scene ``camera_latency_s``
  ago (exposure, USB);
* **servo speed limits** (:data:`~evalband.envs._sim_arm_model.MAX_SPEED`) and position
  servos with a bounded gripper force;
* **backlash**: each joint's gears add a small offset that depends on the direction it last
  moved, and the encoder reads the motor side, so the same commanded pose is not quite the
  same physical pose from visit to visit (seed 004's "sub-millimeter pose lottery");
* **sensor noise** on the joint readings, the gripper's width included.

Staging (what an operator does by hand on a real rig; not part of lerobot's interface):
:meth:`SimArm.stage_scene` puts the block at a scene's seeded place, :meth:`SimArm.
scene_state` / :meth:`SimArm.restore_scene` capture the block's pose and put it back with an
operator's alignment error, and :meth:`SimArm.place_block` / :meth:`SimArm.move_block` move it
programmatically. :meth:`SimArm.truth` says what the simulator knows and a person judges: is
the block between the fingers, how high is it.

>>> arm = SimArm(seed=1, clock=lambda: 0.0)
>>> arm.connect()
>>> obs = arm.get_observation()
>>> sorted(obs)[:3], obs["wrist"].shape
(['gripper.pos', 'lift.pos', 'reach.pos'], (96, 128, 3))
>>> arm.disconnect()
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from evalband.envs._sim_arm_model import (
    ACTION_KEYS,
    BIN_CENTER,
    BLOCK_HALF,
    CAMERA_HEIGHT,
    FINGER_LENGTH,
    GRIPPER_MAX_MM,
    HOME,
    JOINT_LIMITS,
    MAX_SPEED,
    TIMESTEP,
    model_xml,
)
from evalband.envs._sim_arm_render import Box, WristCamera, yaw_matrix

__all__ = [
    "ACTION_KEYS",
    "CAMERA",
    "HOME",
    "JOINT_LIMITS",
    "SimArm",
    "SimArmNotConnectedError",
    "block_pixels",
]

CAMERA = "wrist"
"""The camera's key in the observation."""

_DEG = math.pi / 180.0
_SCALE = np.array([_DEG, 1e-3, 1e-3, _DEG, GRIPPER_MAX_MM / 2000.0 / 100.0])  # units -> joint
_BACKLASH = np.array([0.25, 0.4, 0.3, 0.6, 0.0])  # command units, half the dead band
_READ_NOISE = np.array([0.05, 0.1, 0.1, 0.1, 0.3])  # command units, one sigma
_MAX_CATCH_UP_S = 1.0
_HISTORY = 256
_RED = (217, 31, 26)
_FINGER = (228, 228, 228)
_BIN = (64, 90, 153)


class SimArmNotConnectedError(ConnectionError):
    """A command or reading while the sim-arm is not connected (lerobot's behaviour)."""


def block_pixels(image: np.ndarray) -> np.ndarray:
    """A boolean mask of the red block's pixels in a wrist-camera frame.

    >>> img = np.zeros((4, 4, 3), np.uint8); img[1, 2] = (200, 30, 25)
    >>> int(block_pixels(img).sum())
    1
    """
    rgb = np.asarray(image, dtype=np.int16)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 90) & (r > 2.5 * g) & (r > 2.5 * b)


class SimArm:
    """The simulated arm (see the module docstring).

    Args:
        seed: seeds the backlash directions and the sensor noise.
        clock: a function returning the present time in seconds (physics follows it);
            ``time.monotonic`` by default.
        camera_shape: the wrist camera's ``(height, width)``.
        action_latency_s: delay between ``send_action`` and the servos taking the command.
        camera_latency_s: age of the scene a returned camera frame shows.
        id: the robot's id (lerobot's ``config.id``).
    """

    name = "sim_arm"
    simulated = True

    def __init__(
        self,
        seed: int = 0,
        clock: Callable[[], float] | None = None,
        *,
        camera_shape: tuple[int, int] = (96, 128),
        action_latency_s: float = 0.015,
        camera_latency_s: float = 0.04,
        id: str = "sim-arm",  # noqa: A002 - lerobot's name for it
    ) -> None:
        import mujoco

        self._mj = mujoco
        self.id = id
        self.clock = clock or time.monotonic
        self.model = mujoco.MjModel.from_xml_string(model_xml())
        self.data = mujoco.MjData(self.model)
        self.camera = WristCamera(*camera_shape)
        self.action_latency_s = float(action_latency_s)
        self.camera_latency_s = float(camera_latency_s)
        self._rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5A]))
        self._connected = False
        self._torque = True
        self._t = 0.0  # physics time
        self._t0 = 0.0  # clock time at physics time 0
        self._pending: deque[tuple[float, np.ndarray]] = deque()
        self._command = self._vector(HOME)
        self._servo = self._command.copy()
        self._direction = np.where(self._rng.random(5) < 0.5, -1.0, 1.0)
        self._history: deque[tuple[float, np.ndarray]] = deque(maxlen=_HISTORY)
        ids = {n: mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, n)
               for n in ("shoulder_pan", "reach", "lift", "wrist_roll", "finger_left",
                         "finger_right", "block")}
        self._qadr = {n: int(self.model.jnt_qposadr[i]) for n, i in ids.items()}
        self._vadr = {n: int(self.model.jnt_dofadr[i]) for n, i in ids.items()}
        geoms = {n: mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, n)
                 for n in ("block", "finger_left", "finger_right")}
        self._geom = geoms
        self._set_joints(self._command)
        self.place_block(0.25, 0.0, 0.0)
        self._record()

    # -- lerobot's Robot interface -------------------------------------------------------

    @property
    def observation_features(self) -> dict[str, Any]:
        """Each motor's position (``float``) and the wrist camera's ``(height, width, 3)``."""
        return {**dict.fromkeys(ACTION_KEYS, float),
                CAMERA: (self.camera.height, self.camera.width, 3)}

    @property
    def action_features(self) -> dict[str, Any]:
        """Each motor's goal position (``float``)."""
        return dict.fromkeys(ACTION_KEYS, float)

    @property
    def is_connected(self) -> bool:
        """Whether :meth:`connect` was called (and not :meth:`disconnect` since)."""
        return self._connected

    @property
    def is_calibrated(self) -> bool:
        """Always ``True``: a simulated arm needs no calibration."""
        return True

    def calibrate(self) -> None:
        """Nothing to calibrate."""

    def configure(self) -> None:
        """Nothing to configure."""

    def connect(self, calibrate: bool = True) -> None:
        """Power the servos: the arm holds its present pose until commanded.

        Raises:
            ConnectionError: when already connected (lerobot's rule).
        """
        if self._connected:
            raise ConnectionError(f"{self} is already connected")
        now = float(self.clock())
        if self._t0 == 0.0 and self._t == 0.0:
            self._t0 = now
        else:  # the world stood still while disconnected, up to a second of it
            self._advance_to(min(now, self._t0 + self._t + _MAX_CATCH_UP_S))
            self._t0 = now - self._t
        present = self._read()
        self._command = present.copy()
        self._servo = present.copy()
        self._pending.clear()
        self._torque = True
        self._connected = True

    def disconnect(self) -> None:
        """Stop taking commands and release the torque (lerobot's ``disconnect`` semantics).

        The gripper goes slack: a block it held may slip out.

        Raises:
            ConnectionError: when not connected.
        """
        self._require()
        self._advance_to(float(self.clock()))
        self._pending.clear()
        self._torque = False
        self._connected = False
        self._advance_to(self._t0 + self._t + 0.3)  # the fingers relax

    def get_observation(self) -> dict[str, Any]:
        """Every motor's measured position and the wrist camera's latest frame.

        Raises:
            SimArmNotConnectedError: when not connected.
        """
        self._require()
        self._advance_to(float(self.clock()))
        reading = self._read()
        obs: dict[str, Any] = {k: float(v) for k, v in zip(ACTION_KEYS, reading, strict=True)}
        obs[CAMERA] = self.render(self._t - self.camera_latency_s)
        return obs

    def send_action(self, action: Mapping[str, float]) -> dict[str, float]:
        """Command goal positions (any subset of the motors); the goals actually sent.

        Goals outside a motor's range are clipped to it, as lerobot's servos clip them.

        Raises:
            SimArmNotConnectedError: when not connected.
            KeyError: an unknown motor.
        """
        self._require()
        now = float(self.clock())
        self._advance_to(now)
        goal = self._pending[-1][1].copy() if self._pending else self._command.copy()
        sent: dict[str, float] = {}
        for key, value in action.items():
            index = ACTION_KEYS.index(key) if key in ACTION_KEYS else -1
            if index < 0:
                raise KeyError(f"sim-arm has no motor {key!r}; its motors: "
                               f"{', '.join(ACTION_KEYS)}")
            lo, hi = JOINT_LIMITS[key]
            goal[index] = min(max(float(value), lo), hi)
            sent[key] = float(goal[index])
        self._pending.append((self._t + self.action_latency_s, goal))
        return sent

    def __str__(self) -> str:
        return f"{self.id} SimArm"

    # -- staging: what an operator does by hand ------------------------------------------

    def stage_scene(self, seed: int) -> dict[str, float]:
        """Put the block where scene ``seed`` has it (seeded: same seed, same place).

        The block lies in front of the arm, 200-320 mm out, within +-35 degrees of pan,
        turned up to +-40 degrees.

        >>> arm = SimArm(clock=lambda: 0.0)
        >>> arm.stage_scene(3) == arm.stage_scene(3)
        True
        """
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5CE]))
        radius = rng.uniform(0.20, 0.32)
        pan = rng.uniform(-35.0, 35.0) * _DEG
        yaw = rng.uniform(-40.0, 40.0)
        x, y = radius * math.cos(pan), radius * math.sin(pan)
        self.place_block(x, y, yaw)
        self._pads(rng)
        return {"x_mm": x * 1000, "y_mm": y * 1000, "yaw_deg": yaw}

    def _pads(self, rng: np.random.Generator) -> None:
        """The finger pads' grip this placement (dust, polish, the block's worn edges).

        Real pads do not grip the same twice: the friction coefficient is drawn per placement
        (0.55-1.2), so two attempts from one captured state can fall on either side of the
        friction cone, as seed 004's same-state pairs did.
        """
        mu = float(rng.uniform(0.55, 1.2))
        for name in ("finger_left", "finger_right"):
            self.model.geom_friction[self._geom[name], 0] = mu

    def scene_state(self) -> dict[str, list[float]]:
        """The block's pose (position and quaternion): what a start-state capture keeps."""
        adr = self._qadr["block"]
        return {"block": [float(v) for v in self.data.qpos[adr:adr + 7]]}

    def restore_scene(self, state: Mapping[str, Any], seed: int, *, error_mm: float = 0.7,
                      error_deg: float = 1.5) -> None:
        """Put the block back where ``state`` had it, with an operator's alignment error.

        The error is drawn from ``seed`` (normal, ``error_mm`` per axis, ``error_deg`` in yaw):
        a person aligning the block under the ghost overlay gets it back to within a sliver.
        """
        pose = np.asarray(state["block"], dtype=float)
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x2E9]))
        yaw = _quat_yaw(pose[3:7]) / _DEG + rng.normal(0.0, error_deg)
        dx, dy = rng.normal(0.0, error_mm / 1000.0, size=2)
        self.place_block(pose[0] + dx, pose[1] + dy, yaw)
        self._pads(rng)

    def block_pose(self) -> tuple[float, float, float]:
        """The block's ``(x, y)`` in metres and yaw in degrees."""
        adr = self._qadr["block"]
        q = self.data.qpos[adr:adr + 7]
        return float(q[0]), float(q[1]), _quat_yaw(q[3:7]) / _DEG

    def place_block(self, x: float, y: float, yaw_deg: float) -> None:
        """Put the block flat on the table at ``(x, y)`` metres, turned ``yaw_deg``, at rest."""
        adr, vadr = self._qadr["block"], self._vadr["block"]
        half = yaw_deg * _DEG / 2.0
        self.data.qpos[adr:adr + 7] = [x, y, BLOCK_HALF + 1e-4, math.cos(half), 0.0, 0.0,
                                       math.sin(half)]
        self.data.qvel[vadr:vadr + 6] = 0.0
        self._mj.mj_forward(self.model, self.data)
        self._record()

    def move_block(self, dx_mm: float = 0.0, dy_mm: float = 0.0, dyaw_deg: float = 0.0) -> None:
        """Slide the block by ``(dx, dy)`` millimetres and turn it by ``dyaw`` degrees."""
        x, y, yaw = self.block_pose()
        self.place_block(x + dx_mm / 1000.0, y + dy_mm / 1000.0, yaw + dyaw_deg)

    def truth(self) -> dict[str, Any]:
        """What the simulator knows: the block's height and whether both fingers touch it.

        >>> SimArm(clock=lambda: 0.0).truth()["between_fingers"]
        False
        """
        adr = self._qadr["block"]
        touching = set()
        block = self._geom["block"]
        for i in range(int(self.data.ncon)):
            contact = self.data.contact[i]
            pair = {int(contact.geom1), int(contact.geom2)}
            if block in pair:
                for name in ("finger_left", "finger_right"):
                    if self._geom[name] in pair:
                        touching.add(name)
        return {
            "block_height_mm": float((self.data.qpos[adr + 2] - BLOCK_HALF) * 1000.0),
            "between_fingers": len(touching) == 2,
        }

    def physical_pose(self) -> dict[str, float]:
        """Where the joints really are (the encoders read the motor side, backlash hidden)."""
        return {k: float(v) for k, v in zip(ACTION_KEYS, self._joints(), strict=True)}

    @property
    def home_pose(self) -> dict[str, float]:
        """The rest pose a session returns the arm to between trials."""
        return dict(HOME)

    @property
    def sim_time(self) -> float:
        """Seconds of physics simulated since the arm was made."""
        return self._t

    # -- rendering -----------------------------------------------------------------------

    def render(self, at: float | None = None) -> np.ndarray:
        """The wrist camera's frame of the scene at physics time ``at`` (now when ``None``).

        A scene that has not moved (by 10 micrometres or 10 microradians) since the last frame
        gives that frame again (a copy): holding still costs no rendering.
        """
        state = self._history[-1][1]
        if at is not None:
            for t, snapshot in reversed(self._history):
                state = snapshot
                if t <= at:
                    break
        cached = getattr(self, "_frame", None)
        if cached is not None and np.abs(cached[0] - state).max() < 1e-5:
            again: np.ndarray = cached[1].copy()
            return again
        image = self._draw(state)
        self._frame = (state.copy(), image)
        return image.copy()

    def _draw(self, s: np.ndarray) -> np.ndarray:
        palm, yaw, q_left, q_right = s[0:3], float(s[3]), float(s[4]), float(s[5])
        block = s[6:13]
        rot = yaw_matrix(yaw)
        tip_z = palm[2] - CAMERA_HEIGHT
        finger_half = np.array([0.011, 0.004, FINGER_LENGTH / 2])
        fingers = [
            Box(palm * [1, 1, 0] + rot @ [0.0, side * (q + 0.004), 0.0]
                + [0, 0, tip_z + FINGER_LENGTH / 2], rot, finger_half, _FINGER)
            for side, q in ((1.0, q_left), (-1.0, q_right))
        ]
        boxes = [Box(block[0:3], _quat_matrix(block[3:7]), np.full(3, BLOCK_HALF), _RED),
                 *_bin_boxes(), *fingers]
        return self.camera.render(palm, yaw, boxes)

    # -- physics -------------------------------------------------------------------------

    def _require(self) -> None:
        if not self._connected:
            raise SimArmNotConnectedError(f"{self} is not connected; call connect() first")

    @staticmethod
    def _vector(pose: Mapping[str, float]) -> np.ndarray:
        return np.array([float(pose[k]) for k in ACTION_KEYS])

    def _joints(self) -> np.ndarray:
        q = self.data.qpos
        a = self._qadr
        width = q[a["finger_left"]] + q[a["finger_right"]]
        return np.array([q[a["shoulder_pan"]] / _DEG, q[a["reach"]] * 1e3, q[a["lift"]] * 1e3,
                         q[a["wrist_roll"]] / _DEG, width / (GRIPPER_MAX_MM / 1000.0) * 100.0])

    def _read(self) -> np.ndarray:
        """The encoders: the motor side of the gears (backlash hidden) plus noise."""
        motor: np.ndarray = self._joints() - _BACKLASH * self._direction
        return motor + self._rng.normal(0.0, _READ_NOISE)

    def _set_joints(self, pose: np.ndarray) -> None:
        q = self.data.qpos
        a = self._qadr
        joint = pose * _SCALE
        for name, value in zip(("shoulder_pan", "reach", "lift", "wrist_roll"), joint[:4],
                               strict=True):
            q[a[name]] = value
        q[a["finger_left"]] = q[a["finger_right"]] = joint[4]
        self.data.ctrl[:4] = joint[:4]
        self.data.ctrl[4:6] = joint[4]
        self._mj.mj_forward(self.model, self.data)

    def _advance_to(self, now: float) -> None:
        target = now - self._t0
        if target - self._t > _MAX_CATCH_UP_S:  # a long pause: the world waited
            self._t0 += (target - self._t) - _MAX_CATCH_UP_S
            target = self._t + _MAX_CATCH_UP_S
        step = MAX_SPEED_VECTOR * TIMESTEP
        while self._t + TIMESTEP <= target + 1e-12:
            while self._pending and self._pending[0][0] <= self._t:
                self._command = self._pending.popleft()[1]
            if self._torque:
                move = np.clip(self._command - self._servo, -step, step)
                moving = np.abs(move) > 1e-9
                self._direction = np.where(moving, np.sign(move), self._direction)
                self._servo = self._servo + move
                goal = (self._servo + _BACKLASH * self._direction) * _SCALE
                self.data.ctrl[:4] = goal[:4]
                self.data.ctrl[4:6] = goal[4]
            else:  # torque off: every servo follows its joint (no force)
                q = self.data.qpos
                a = self._qadr
                self.data.ctrl[:] = [q[a[n]] for n in ("shoulder_pan", "reach", "lift",
                                                       "wrist_roll", "finger_left",
                                                       "finger_right")]
            self._mj.mj_step(self.model, self.data)
            self._t += TIMESTEP
            self._record()

    def _record(self) -> None:
        q = self.data.qpos
        a = self._qadr
        pan, reach = q[a["shoulder_pan"]], q[a["reach"]]
        palm = np.array([reach * math.cos(pan), reach * math.sin(pan),
                         q[a["lift"]] + CAMERA_HEIGHT])
        state = np.concatenate([palm, [pan + q[a["wrist_roll"]], q[a["finger_left"]],
                                       q[a["finger_right"]]], q[a["block"]:a["block"] + 7]])
        self._history.append((self._t, state))


MAX_SPEED_VECTOR = np.array([MAX_SPEED[k] for k in ACTION_KEYS])


def _bin_boxes() -> list[Box]:
    x, y = BIN_CENTER
    half, wall, height = 0.06, 0.004, 0.04
    eye = np.eye(3)
    walls = [(x + half, y, wall, half), (x - half, y, wall, half), (x, y + half, half, wall),
             (x, y - half, half, wall)]
    return [Box(np.array([px, py, height]), eye, np.array([sx, sy, height]), _BIN)
            for px, py, sx, sy in walls]


def _quat_yaw(quat: np.ndarray) -> float:
    w, x, y, z = (float(v) for v in quat)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _quat_matrix(quat: np.ndarray) -> np.ndarray:
    w, x, y, z = (float(v) for v in quat)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
