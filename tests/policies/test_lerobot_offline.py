"""``evalband offline`` against a direct computation with lerobot's own code (side venv).

``lerobot_offline.py`` builds a small LeRobotDataset and trains two small diffusion
checkpoints locally with lerobot's code (nothing from a hub), then computes the validation
action error on held-out episodes with evalband (API, then ``evalband offline --csv`` in the
same process) and with a plain lerobot loop. A missing side venv fails with what to do.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from testkit import side_venv_python

pytestmark = [pytest.mark.lerobot, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent


def test_offline_action_error_equals_lerobots_own_loop_and_repeats(tmp_path: Path) -> None:
    python = side_venv_python(ROOT / ".venv-lerobot", (
        "the offline action-error test runs lerobot in its own venv (lerobot pins an older "
        "torch); `make test` builds .venv-lerobot from requirements/lerobot.txt"))
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{HERE}",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "TQDM_DISABLE": "1"}
    done = subprocess.run([str(python), str(HERE / "lerobot_offline.py"), str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    first, cli, other = out["first"], out["cli"], out["other_seed"]
    assert first["episodes"] == [4, 5] and first["frames"] == 24
    for ours, again, shifted in zip(first["checkpoints"], cli["checkpoints"],
                                    other["checkpoints"], strict=True):
        want = out["direct"][ours["checkpoint"]]
        assert ours["frames"] == want["frames"] == 24
        assert ours["action_mse"]["estimate"] == pytest.approx(want["mse"], rel=1e-9)
        assert ours["action_mae"]["estimate"] == pytest.approx(want["mae"], rel=1e-9)
        assert ours["denoising_steps"] == 4 and ours["policy_type"] == "diffusion"
        assert again == ours  # a second run: the same noise, the very same numbers
        assert shifted["action_mse"]["estimate"] != ours["action_mse"]["estimate"]  # noise used
    mse = [c["action_mse"]["estimate"] for c in first["checkpoints"]]
    assert mse[0] != mse[1]  # two checkpoints, two errors
    comp = first["composition"]  # every third episode kinesthetic: 4 teleop, 5 kinesthetic
    assert comp["column"] == "modality" and comp["split_episodes"] == {"teleop": 1,
                                                                       "kinesthetic": 1}
    assert comp["dataset_episodes"] == {"teleop": 4, "kinesthetic": 2}
    rows = list(csv.DictReader(io.StringIO(out["csv"])))  # what evalband agree --csv reads
    assert [float(r["action_mse"]) for r in rows] == mse
