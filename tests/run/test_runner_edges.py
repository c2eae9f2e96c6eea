"""Edges of run_panel: bad env_kwargs, a run that fails before its first episode, resumes
with other batching."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.errors import PanelError
from evalband.panel import load_panel
from evalband.run import run_panel
from evalband.store import open_store
from testkit import coin_panel

POLICY = "evalband.policies._builtin:zero_action"


def test_unknown_env_kwargs_are_one_line_and_store_nothing(capsys, tmp_path: Path) -> None:
    panel = tmp_path / "p.yaml"
    panel.write_text("name: badkw\nenv: evalband/Reach1D-v0\nenv_kwargs: {bogus: 3}\n"
                     "episodes: 4\nseed: 0\nbudget: {steps: 50}\n")
    db = tmp_path / "s.sqlite"
    code = main(["run", str(panel), "-p", "reach1d:baseline", "--store", str(db)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "'bogus'" in err and "max_steps" in err  # what came and what the env takes
    with open_store(db) as st:
        assert st.list_runs() == []  # no empty 'interrupted' run


def test_a_new_run_failing_before_its_first_episode_leaves_nothing(tmp_path: Path) -> None:
    panel = load_panel({"name": "boom", "env": "evalband/Reach1D-v0", "episodes": 2, "seed": 0,
                        "budget": {"steps": 5}, "env_kwargs": {"dt": "not a number"}})
    with open_store(tmp_path / "s.sqlite") as st:
        with pytest.raises(Exception):  # noqa: B017 - the env's own error
            run_panel(panel, "reach1d:baseline", st, run_id="boom")
        assert st.get_run("boom") is None


def test_a_resume_with_other_batching_keeps_the_manifest(tmp_path: Path) -> None:
    panel = coin_panel(episodes=6)
    with open_store(tmp_path / "s.sqlite") as st:
        run_panel(panel, POLICY, st, run_id="b", batch_size=3)
        run_panel(panel, POLICY, st, run_id="b", batch_size=5)
        extra = st.require_run("b").extra
    assert extra["batch_size"] == 3
    assert extra["resumed_with"] == [{"batch_size": 5}]


def test_env_kwargs_check_is_a_panel_error(tmp_path: Path) -> None:
    panel = coin_panel(episodes=2).model_copy(update={"env_kwargs": {"nope": 1}})
    with open_store(tmp_path / "s.sqlite") as st, pytest.raises(PanelError, match="'nope'"):
        run_panel(panel, POLICY, st, run_id="x")


def test_errors_as_failures_on_a_resume_is_recorded(capsys, tmp_path: Path) -> None:
    (tmp_path / "flaky_policy.py").write_text(
        "def policy(obs):\n    raise ValueError('flaky')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        db = str(tmp_path / "s.sqlite")
        args = ["run", "reach1d", "-p", "flaky_policy:policy", "--run-id", "f", "--store", db]
        assert main([*args, "--json"]) == 1  # error episodes withhold the verdict
        capsys.readouterr()
        assert main([*args, "--errors-as-failures", "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert main(["show", "f", "--store", db, "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
    finally:
        sys.path.remove(str(tmp_path))
    assert printed["summary"]["n"] == shown["summary"]["n"] == 64  # the verdict kept
    assert shown["manifest"]["errors_as_failures"] is True
