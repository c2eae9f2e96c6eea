"""The training callback in a real lerobot training run (inside .venv-lerobot).

``tests/policies/lerobot_train.py`` builds a small LeRobotDataset of gym-pusht episodes
locally, runs lerobot's own ``lerobot-train`` (a small ACT, 20 steps, a checkpoint every 10)
and ``evaluate_checkpoints`` on its output with a TensorBoard logger. Here: one stored run
per checkpoint carrying its step (what ``evalband rank --by step`` orders by), and the event
file read by tensorboard's own reader. A missing side venv fails with what to do.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from evalband.store import open_store
from testkit import side_venv_python

pytestmark = [pytest.mark.lerobot, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HELPERS = ROOT / "tests" / "policies"


def test_lerobot_train_checkpoints_become_runs_by_step(tmp_path: Path) -> None:
    python = side_venv_python(ROOT / ".venv-lerobot", (
        "the lerobot tests run lerobot in its own venv beside the main one; `make test` "
        "builds .venv-lerobot from requirements/lerobot.txt"))
    panel = yaml.safe_load((ROOT / "src/evalband/panels/lerobot-pusht.yaml").read_text())
    panel["env_kwargs"]["obs_type"] = "environment_state_agent_pos"
    panel.update(episodes=4, budget={"steps": 20})
    (tmp_path / "panel.yaml").write_text(yaml.safe_dump(panel))
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{HELPERS}",
               HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(tmp_path / "hf"),
               SDL_VIDEODRIVER="dummy", TQDM_DISABLE="1")
    proc = subprocess.run([str(python), str(HELPERS / "lerobot_train.py"), str(tmp_path / "out"),
                           str(tmp_path / "panel.yaml"), str(tmp_path / "s.sqlite")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [r["step"] for r in report["results"]] == [10, 20]
    assert report["again"] == 0  # stored checkpoints are not evaluated twice

    with open_store(tmp_path / "s.sqlite") as store:
        runs = sorted(store.list_runs(), key=lambda r: r.step)
        assert [(r.run_id, r.step, r.backend) for r in runs] == [
            ("act-step00000010", 10, "serial"), ("act-step00000020", 20, "serial")]
        returns = [sum(e.metrics["return"] for e in store.episode_records(r.run_id))
                   for r in runs]
        assert all(len(store.episode_records(r.run_id)) == 4 for r in runs)
    assert returns[0] != returns[1]  # two checkpoints, two different policies

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    reader = EventAccumulator(str(tmp_path / "out" / "tb"))
    reader.Reload()
    rates = reader.Scalars("evalband/lerobot-pusht/success_rate")
    assert [(e.step, e.value) for e in rates] == [
        (r["step"], pytest.approx(r["rate"])) for r in report["results"]]
    highs = reader.Scalars("evalband/lerobot-pusht/success_rate_high")
    assert [e.value for e in highs] == [pytest.approx(r["high"]) for r in report["results"]]
