"""Robot sessions through lerobot's own code, in lerobot's venv (.venv-lerobot).

One run of ``lerobot_robot_check.py`` there (lerobot takes seconds to import) checks:

* ``--robot lerobot:so101_follower --robot-config FILE`` builds lerobot's SO-101 follower from
  lerobot's own config class and factory, and a port that does not exist is refused in one
  line naming the port and the fix, with nothing stored;
* the trial loop against a lerobot ``Robot`` subclass (lerobot's base class, sim-arm's motors:
  ``lerobot:evalband_sim_arm``) plays and stores a rehearsal;
* a plan's ``NAME=lerobot:PATH`` policy (a small random ACT with the arm's motors and wrist
  camera as features) is loaded with lerobot's code and drives the arm;
* ``evalband export --format lerobot`` writes a LeRobotDataset that lerobot's
  ``LeRobotDataset`` opens, whose frames equal the stored clip's and whose state and action
  equal the stored step data.

A missing side venv fails the test with what to do.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testkit import side_venv_python

pytestmark = [pytest.mark.lerobot, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> dict:
    python = side_venv_python(ROOT / ".venv-lerobot", (
        "the robot tests run lerobot in its own venv (lerobot pins an older torch); `make "
        "test` builds .venv-lerobot from requirements/lerobot.txt"))
    tmp = tmp_path_factory.mktemp("lerobot-robot")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HOME": str(tmp / "hf"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1",
           "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    done = subprocess.run([str(python), str(Path(__file__).with_name("lerobot_robot_check.py")),
                           str(tmp)], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_so101_is_lerobots_own_and_a_missing_port_is_one_line(found: dict) -> None:
    so = found["so101"]
    assert so["is_lerobot_robot"] and so["config"] == "SOFollowerRobotConfig"
    assert so["module"].startswith("lerobot.robots.so_follower")
    assert so["port"] == "/dev/ttyEVALBAND_NONE"
    assert so["code"] == 2
    (line,) = so["err"].strip().splitlines()
    assert "/dev/ttyEVALBAND_NONE" in line and "does not exist" in line
    assert "lerobot-find-port" in line and "nothing was recorded" in line
    assert so["stored"] == [0, 0]  # no trial, no play


def test_the_trial_loop_drives_a_lerobot_robot_subclass(found: dict) -> None:
    loop = found["loop"]
    assert loop["code"] == 0, loop["err"]
    assert loop["is_lerobot_robot"] and "lerobot.robots.robot.Robot" in loop["base"]
    assert loop["robot_id"] == "rehearsal-arm"
    assert len(loop["trials"]) == 2 and loop["attempts"] == ["played"] * 2
    assert {t["robot"] for t in loop["trials"]} == {"lerobot:evalband_sim_arm"}
    assert all(t["kinds"] == ["steps", "video"] for t in loop["trials"])
    assert sorted(t["score"] for t in loop["trials"]) == [0, 2]  # never, grasp


def test_a_lerobot_checkpoint_spec_drives_the_robot(found: dict) -> None:
    ck = found["checkpoint"]  # act=lerobot:DIR: motors as observation.state, the wrist image
    assert ck["code"] == 0, ck["err"]
    assert ck["steps"] > 30 and ck["end"] in ("trigger", "time limit")
    assert min(ck["distinct_goals"]) > 5  # the checkpoint's actions moved the motors


def test_the_exported_dataset_opens_in_lerobot_with_the_clips_frames(found: dict) -> None:
    export = found["export"]
    assert export["code"] == 0, export["err"]
    assert export["episodes"] == 2
    assert {"observation.state", "action", "observation.images.wrist"} <= set(
        export["features"])
    assert export["length"] == sum(c["frames"] for c in export["checks"])
    for check in export["checks"]:
        assert check["frames"] == check["dataset_frames"] > 0
        assert check["worst_pixel"] == 0  # the dataset's frames are the clip's
        assert check["worst_state"] < 1e-4 and check["worst_action"] < 1e-4  # float32
