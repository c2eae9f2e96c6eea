"""sim-arm: lerobot's robot interface on MuJoCo physics, following a clock, with latency.

Each property is checked on the physics itself: the servos' speed limit, the control and
camera latencies, backlash hidden from the encoders, the gripper's measured width on the
block, torque released on disconnect, and the block moved programmatically (what the
browser console's overlay test does: the difference to the reference falls as the block
returns to its captured pose).
"""

from __future__ import annotations

import numpy as np
import pytest

from evalband.envs.sim_arm import (
    ACTION_KEYS,
    CAMERA,
    JOINT_LIMITS,
    SimArm,
    SimArmNotConnectedError,
    block_pixels,
)
from evalband.session import Robot


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def run(self, arm: SimArm, seconds: float, rate: float = 30.0) -> dict:
        obs: dict = {}
        for _ in range(int(round(seconds * rate))):
            self.t += 1.0 / rate
            obs = arm.get_observation()
        return obs


@pytest.fixture
def arm() -> tuple[SimArm, Clock]:
    clock = Clock()
    robot = SimArm(seed=3, clock=clock)
    robot.connect()
    return robot, clock


def test_it_has_lerobots_robot_shape() -> None:
    robot = SimArm(clock=lambda: 0.0)
    assert isinstance(robot, Robot)
    assert list(robot.action_features) == list(ACTION_KEYS)
    assert robot.observation_features[CAMERA] == (96, 128, 3)
    with pytest.raises(SimArmNotConnectedError):
        robot.get_observation()
    robot.connect()
    with pytest.raises(ConnectionError):
        robot.connect()
    with pytest.raises(KeyError, match="no motor"):
        robot.send_action({"elbow.pos": 1.0})
    sent = robot.send_action({"lift.pos": 9999.0})
    assert sent == {"lift.pos": JOINT_LIMITS["lift.pos"][1]}  # clipped, as lerobot's servos
    robot.disconnect()
    assert not robot.is_connected


def test_physics_follows_the_clock_at_the_servos_speed(arm: tuple[SimArm, Clock]) -> None:
    robot, clock = arm
    start = robot.get_observation()["shoulder_pan.pos"]
    robot.send_action({"shoulder_pan.pos": start + 90.0})
    assert abs(robot.get_observation()["shoulder_pan.pos"] - start) < 1.0  # no time passed
    obs = clock.run(robot, 0.2)
    moved = obs["shoulder_pan.pos"] - start
    assert 5.0 < moved <= 150.0 * 0.2 + 1.5  # moving, never faster than 150 deg/s
    obs = clock.run(robot, 1.0)
    assert obs["shoulder_pan.pos"] == pytest.approx(start + 90.0, abs=1.5)


def test_a_command_takes_effect_after_the_control_latency() -> None:
    clock = Clock()
    robot = SimArm(seed=1, clock=clock, action_latency_s=0.1)
    robot.connect()
    before = robot.get_observation()["reach.pos"]
    robot.send_action({"reach.pos": before + 50.0})
    clock.run(robot, 0.08, rate=100)  # within the latency: the servo has not the goal yet
    assert abs(robot.get_observation()["reach.pos"] - before) < 0.6
    obs = clock.run(robot, 0.3, rate=100)
    assert obs["reach.pos"] > before + 20.0


def test_the_camera_shows_the_scene_as_it_was_camera_latency_ago() -> None:
    clock = Clock()
    robot = SimArm(seed=1, clock=clock, camera_latency_s=0.1)
    robot.connect()
    robot.place_block(0.2, 0.0, 0.0)  # under the camera at home
    clock.run(robot, 0.2, rate=100)
    seen = block_pixels(robot.get_observation()[CAMERA]).sum()
    assert seen > 20
    robot.place_block(0.6, 0.6, 0.0)  # out of view
    clock.run(robot, 0.05, rate=100)  # half the camera latency later: still in the frame
    assert block_pixels(robot.get_observation()[CAMERA]).sum() == seen
    clock.run(robot, 0.1, rate=100)
    assert block_pixels(robot.get_observation()[CAMERA]).sum() == 0


def test_the_gripper_reads_the_blocks_width_and_lets_go_on_disconnect(
        arm: tuple[SimArm, Clock]) -> None:
    robot, clock = arm
    robot.place_block(0.25, 0.0, 0.0)
    robot.send_action({"reach.pos": 250.0, "lift.pos": 60.0, "wrist_roll.pos": 0.0,
                       "shoulder_pan.pos": 0.0})
    clock.run(robot, 1.0)
    robot.send_action({"lift.pos": 5.0})
    clock.run(robot, 0.8)
    robot.send_action({"gripper.pos": 0.0})
    obs = clock.run(robot, 1.0)
    assert obs["gripper.pos"] == pytest.approx(37.5, abs=1.5)  # jaws stop at 30 mm of 80
    robot.send_action({"lift.pos": 80.0})
    clock.run(robot, 1.0)
    truth = robot.truth()
    assert truth["between_fingers"] and truth["block_height_mm"] > 50
    robot.disconnect()  # torque off: the slack gripper drops the block
    assert robot.truth()["block_height_mm"] < 40
    robot.connect()
    obs = clock.run(robot, 0.5)
    empty = obs["gripper.pos"]
    robot.send_action({"gripper.pos": 0.0})
    assert clock.run(robot, 1.0)["gripper.pos"] < 5 < empty  # empty jaws close past it


def test_backlash_is_hidden_from_the_encoders() -> None:
    clock = Clock()
    robot = SimArm(seed=0, clock=clock)
    robot.connect()
    poses = []
    for approach in (-20.0, 20.0):  # the same goal from either side
        robot.send_action({"shoulder_pan.pos": approach})
        clock.run(robot, 1.0)
        robot.send_action({"shoulder_pan.pos": 0.0})
        obs = clock.run(robot, 1.0)
        poses.append((obs["shoulder_pan.pos"], robot.physical_pose()["shoulder_pan.pos"]))
    (read_a, true_a), (read_b, true_b) = poses
    assert abs(read_a - read_b) < 0.3  # the encoders read the same pose
    assert abs(true_a - true_b) > 0.3  # the arm is not quite there twice


def test_a_moved_block_moves_in_the_image_and_the_difference_falls_back() -> None:
    robot = SimArm(seed=2, clock=lambda: 0.0)
    robot.connect()
    robot.place_block(0.21, 0.02, 10.0)
    reference = robot.render().astype(int)
    rows, cols = np.nonzero(block_pixels(reference.astype(np.uint8)))
    robot.move_block(dx_mm=20.0)  # outward: up in the image
    moved = robot.render()
    r2, c2 = np.nonzero(block_pixels(moved))
    assert r2.mean() < rows.mean() - 5 and abs(c2.mean() - cols.mean()) < 3
    diffs = []
    for _ in range(5):  # back onto the reference in steps
        robot.move_block(dx_mm=-4.0)
        diffs.append(float(np.abs(robot.render().astype(int) - reference).mean()))
    assert all(a > b for a, b in zip(diffs, diffs[1:], strict=False)) and diffs[-1] < 0.5


def test_staging_is_seeded_and_restoring_puts_the_block_back_within_a_sliver() -> None:
    robot = SimArm(clock=lambda: 0.0)
    assert robot.stage_scene(5) == robot.stage_scene(5) != robot.stage_scene(6)
    robot.stage_scene(5)
    state = robot.scene_state()
    x, y, yaw = robot.block_pose()
    robot.stage_scene(9)
    robot.restore_scene(state, seed=1)
    x2, y2, yaw2 = robot.block_pose()
    assert np.hypot(x2 - x, y2 - y) < 0.004 and abs(yaw2 - yaw) < 6.0
