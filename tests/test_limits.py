"""Absurd sizes are refused at once with one line (they used to hang silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalband.cli import main
from evalband.errors import InvalidInputError
from evalband.panel import load_panel
from evalband.session._plan import plan_session


def test_a_trillion_episode_panel_is_refused(capsys, tmp_path: Path) -> None:
    panel = tmp_path / "huge.yaml"
    panel.write_text("name: huge\nenv: evalband/Coin-v0\nepisodes: 1000000000000\nseed: 0\n"
                     "budget: {steps: 2}\n")
    code = main(["run", str(panel), "-p", "reach1d:damped", "--store",
                 str(tmp_path / "s.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "1,000,000,000,000" in err


def test_the_limit_counts_cells_and_repeats() -> None:
    base = {"name": "p", "env": "evalband/Coin-v0", "seed": 0, "budget": {"steps": 2}}
    load_panel({**base, "episodes": 1_000_000, "factors": {"a": [1, 2]}, "repeats": 5})
    with pytest.raises(InvalidInputError, match="at most 10,000,000"):
        load_panel({**base, "episodes": 1_000_000, "factors": {"a": [1, 2, 3]}, "repeats": 4})


def test_coverage_n_is_bounded(capsys) -> None:
    assert main(["coverage", "--n", "1000000"]) == 2
    assert "at most 10,000" in capsys.readouterr().err


def test_a_session_of_a_hundred_million_scenes_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="400,000,000"):
        plan_session(["A", "B"], scenes=100_000_000, attempts=2, seed=1, session_id="s")
