"""``evalband offline``'s input errors in the main venv (no lerobot): one line, exit 2.

The computation itself runs in the lerobot side venv: tests/policies/test_lerobot_offline.py.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.errors import InvalidInputError
from evalband.policies.lerobot_offline import parse_episodes


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offline", "lerobot:x", "--dataset", str(tmp_path / "none"),
                 "--episodes", "all"]) == 2
    assert "is not a LeRobotDataset" in capsys.readouterr().err
    (tmp_path / "ds" / "meta").mkdir(parents=True)
    (tmp_path / "ds" / "meta" / "info.json").write_text("{}")
    if importlib.util.find_spec("lerobot") is None:  # the main venv: lerobot lives beside it
        assert main(["offline", "lerobot:x", "--dataset", str(tmp_path / "ds"),
                     "--episodes", "all"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "lerobot is not installed" in err


def test_the_split_is_read_strictly() -> None:
    assert parse_episodes("40:43,7", range(50)) == [7, 40, 41, 42]
    for bad, words in (("4-5", "ranges and indices"), ("48:52", r"names \[50, 51\]")):
        with pytest.raises(InvalidInputError, match=words):
            parse_episodes(bad, range(50))
