"""check-env: one line per problem (ignored factor, unseeded reset, unreachable rule)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from fake_envs_src import SOURCE

from evalband.cli import main
from evalband.panel import load_panel
from evalband.run._check import check_env


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "fake_envs.py").write_text(SOURCE)
    (tmp_path / "log").mkdir()
    monkeypatch.setenv("FAKE_ENVS_LOG", str(tmp_path / "log"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "fake_envs", raising=False)
    yield tmp_path
    sys.modules.pop("fake_envs", None)
    for env_id in ("fake/Reach-v0", "fake/Partial-v0"):
        gym.registry.pop(env_id, None)


def _problems(policy: str | None = "fake_envs:toward", **fields: Any) -> list[str]:
    data: dict[str, Any] = {"name": "fake", "env": "fake/Reach-v0", "imports": ["fake_envs"],
                            "episodes": 3, "seed": 2, "budget": {"steps": 40},
                            "success": {"rule": "any_step", "key": "success"}}
    data.update(fields)
    return [f.line() for f in check_env(load_panel(data), policy) if f.level == "problem"]


def test_a_sound_panel_has_no_problem(pkg: Path) -> None:
    assert _problems() == []
    assert _problems(policy=None) == []  # random actions: the key is there, no claim made


def test_each_fault_is_one_line(pkg: Path) -> None:
    (ignored,) = _problems(factors={"friction": [0.1, 0.9]})
    assert "factor 'friction'" in ignored and "same initial observation" in ignored
    (unseeded,) = _problems(env="fake_envs:Unseeded", imports=[])
    assert unseeded.startswith("problem [reset]") and "seed" in unseeded
    (unreachable,) = _problems(success={"rule": "final_step", "key": "is_success"})
    assert "'is_success' never appears" in unreachable and "success" in unreachable
    (never,) = _problems(policy="evalband.policies._builtin:zero_action", seed=1)
    assert "no success by rule any_step" in never


def test_cli_exit_status_and_lines(pkg: Path, capsys) -> None:
    (pkg / "bad.yaml").write_text(
        "env: fake/Reach-v0\nimports: [fake_envs]\nepisodes: 2\n"
        "success: {rule: any_step, key: is_success}\nfactors: {friction: [1, 2]}\n"
    )
    assert main(["check-env", "bad.yaml", "-p", "fake_envs:toward"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("problem") for line in out) == 2
    assert any("control period 0.1 s from render_fps" in line for line in out)
