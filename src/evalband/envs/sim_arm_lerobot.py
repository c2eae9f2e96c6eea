"""``evalband_sim_arm``: sim-arm as a lerobot robot (lerobot's own ``Robot`` base class).

A subclass of ``lerobot.robots.Robot`` with a config registered in lerobot's
``RobotConfig`` registry, whose motors are :class:`~evalband.envs.sim_arm.SimArm`'s simulated
ones: ``--robot lerobot:evalband_sim_arm`` drives it through exactly the code path a real
lerobot arm takes (lerobot's config decoding, its ``Robot`` interface), so that path is
tested on physics. lerobot is imported by :func:`register` (which defines and registers the
classes, once), so this module imports anywhere; evalband's lerobot resolver calls it where
lerobot is installed (``.venv-lerobot``).

A YAML config for it (``--robot-config``)::

    id: rehearsal-arm
    seed: 3
    action_latency_ms: 15
    camera_latency_ms: 40
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalband.envs.sim_arm import SimArm

__all__ = ["register"]


@functools.cache
def register() -> tuple[type, type]:
    """Define ``SimArmFollowerConfig`` (registered as ``evalband_sim_arm``) and ``SimArmFollower``.

    Returns:
        ``(config class, robot class)``; defined once (lerobot's registry refuses a type
        registered twice).

    Raises:
        ModuleNotFoundError: lerobot is not installed.
    """
    from lerobot.robots import Robot, RobotConfig

    @RobotConfig.register_subclass("evalband_sim_arm")
    @dataclass
    class SimArmFollowerConfig(RobotConfig):  # type: ignore[misc]
        """lerobot config of the simulated arm."""

        seed: int = 0
        action_latency_ms: float = 15.0
        camera_latency_ms: float = 40.0

    class SimArmFollower(Robot):  # type: ignore[misc]
        """A lerobot robot whose motors and camera are sim-arm's."""

        config_class = SimArmFollowerConfig
        name = "evalband_sim_arm"
        simulated = True

        def __init__(self, config: SimArmFollowerConfig) -> None:
            super().__init__(config)
            self.config = config
            self.arm = SimArm(seed=config.seed, action_latency_s=config.action_latency_ms / 1000.0,
                              camera_latency_s=config.camera_latency_ms / 1000.0,
                              id=config.id or "evalband-sim-arm")

        def use_clock(self, clock: Callable[[], float]) -> None:
            """Have the physics follow ``clock`` (a session's virtual clock, in rehearsals)."""
            self.arm.clock = clock

        @property
        def observation_features(self) -> dict[str, Any]:
            """The motors and the wrist camera."""
            return self.arm.observation_features

        @property
        def action_features(self) -> dict[str, Any]:
            """The motors' goals."""
            return self.arm.action_features

        @property
        def is_connected(self) -> bool:
            """Whether connected."""
            return self.arm.is_connected

        def connect(self, calibrate: bool = True) -> None:
            """Power the simulated servos."""
            self.arm.connect(calibrate)

        @property
        def is_calibrated(self) -> bool:
            """Always: simulated motors need no calibration."""
            return True

        def calibrate(self) -> None:
            """Nothing to calibrate."""

        def configure(self) -> None:
            """Nothing to configure."""

        def get_observation(self) -> dict[str, Any]:
            """The motors' positions and the wrist camera's frame."""
            return self.arm.get_observation()

        def send_action(self, action: dict[str, Any]) -> dict[str, Any]:
            """Send goals; the goals sent."""
            return self.arm.send_action(action)

        def disconnect(self) -> None:
            """Torque off (lerobot's ``disable_torque_on_disconnect`` semantics)."""
            self.arm.disconnect()

        # staging, as the operator would on a real rig (see SimArm)
        def stage_scene(self, seed: int) -> dict[str, float]:
            """See :meth:`SimArm.stage_scene`."""
            return self.arm.stage_scene(seed)

        def scene_state(self) -> dict[str, list[float]]:
            """See :meth:`SimArm.scene_state`."""
            return self.arm.scene_state()

        def restore_scene(self, state: dict[str, Any], seed: int) -> None:
            """See :meth:`SimArm.restore_scene`."""
            self.arm.restore_scene(state, seed)

        def truth(self) -> dict[str, Any]:
            """See :meth:`SimArm.truth`."""
            return self.arm.truth()

        @property
        def home_pose(self) -> dict[str, float]:
            """See :attr:`SimArm.home_pose`."""
            return self.arm.home_pose

    return SimArmFollowerConfig, SimArmFollower
