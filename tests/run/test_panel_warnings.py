"""``run`` says what check-env would: a success rule that can never hold, an env that does not
reproduce (issue 33, items 2 and 3); the built-in ``random`` policy and the spaces in the
episode context (item 13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from evalband.cli import main
from evalband.panel import load_panel
from evalband.run import run_panel


def _panel(tmp_path: Path, **fields: Any) -> str:
    data = {"name": "p", "env": "testenvs:FaultyCoinEnv", "episodes": 4, "seed": 0,
            "budget": {"steps": 6}, "env_kwargs": {"p": 0.0, "length": 2}}
    data.update(fields)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _run(tmp_path: Path, panel: str, capsys: pytest.CaptureFixture[str],
         policy: str = "random") -> tuple[int, str]:
    code = main(["run", panel, "-p", policy, "--store", str(tmp_path / "s.sqlite")])
    return code, capsys.readouterr().err


def test_a_success_key_the_env_never_gives_is_said(tmp_path: Path, capsys) -> None:
    code, err = _run(tmp_path, _panel(tmp_path, env="testenvs:NoKeyCoinEnv"), capsys)
    assert code == 0
    (line,) = [x for x in err.splitlines() if x.startswith("warning:")]
    assert "success key 'is_success' never appears" in line and "done_well" in line


def test_a_reachable_rule_and_a_return_rule_say_nothing(tmp_path: Path, capsys) -> None:
    assert _run(tmp_path, _panel(tmp_path), capsys)[1].count("warning:") == 0
    panel = _panel(tmp_path, env="testenvs:NoKeyCoinEnv",
                   success={"rule": "return", "threshold": 1.0})
    assert "warning:" not in _run(tmp_path, panel, capsys)[1]


def test_an_env_that_does_not_reproduce_is_said(tmp_path: Path, capsys) -> None:
    code, err = _run(tmp_path, _panel(tmp_path, env="testenvs:UnseededCoinEnv"), capsys)
    assert code == 0
    (line,) = [x for x in err.splitlines() if x.startswith("warning:")]
    assert "does not reproduce the initial observation" in line


def test_the_reacher_two_liner_is_warned(tmp_path: Path, capsys) -> None:
    pytest.importorskip("gymnasium.envs.mujoco")
    panel = tmp_path / "two.yaml"
    panel.write_text("env: Reacher-v5\nepisodes: 3\n")
    code, err = _run(tmp_path, str(panel), capsys)
    assert code == 0 and "keys seen: reward_ctrl, reward_dist" in err


class _Spaces:
    """Remembers the spaces its context carried."""

    seen: list[Any] = []

    def reset(self, context: Any) -> None:
        _Spaces.seen.append((context.action_space, context.observation_space))

    def act(self, obs: Any) -> np.ndarray:
        return np.zeros(1)


def test_the_context_carries_the_spaces_and_random_is_seeded(store) -> None:
    panel = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 3, "seed": 0,
                        "budget": {"steps": 4}})
    run_panel(panel, _Spaces(), store, run_id="spaces")
    assert len(_Spaces.seen) == 3
    assert all(a is not None and a.shape == (1,) and o.shape == (1,) for a, o in _Spaces.seen)
    from evalband.envs import make_env
    from evalband.policies import resolve_policy
    from evalband.run._execute import RunTask, episode_context

    env = make_env("evalband/Coin-v0", {})
    spec = panel.episode_specs()[1]
    draws = []
    for _ in range(2):
        policy = resolve_policy("random")()
        policy.reset(episode_context(RunTask("r", "random", "f", "evalband/Coin-v0"), spec,
                                     env=env))
        draws.append([policy.act(None) for _ in range(3)])
    assert np.array_equal(np.array(draws[0]), np.array(draws[1]))
    _, summary = run_panel(panel, "random", store, run_id="random")
    assert summary.counts["error"] == 0
