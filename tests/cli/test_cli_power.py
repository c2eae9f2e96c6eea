"""``evalband power --n``: the minimum detectable difference on the side of the question.

Reproduces the report: ``power --p-a 0.9 --p-b 0.8 --n 20`` was refused as bad input
("choose direction='down'", a Python argument with no CLI flag).
"""

from __future__ import annotations

import io
import json

import pytest

from evalband.cli import main


def run_json(capsys, *args: str) -> dict:
    code = main(["power", *args, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_the_reported_command_answers(capsys) -> None:
    code = main(["power", "--p-a", "0.9", "--p-b", "0.8", "--n", "20"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "above 80.0%: none" in out.out  # no gap up from 80% is resolvable with 20
    data = run_json(capsys, "--p-a", "0.9", "--p-b", "0.8", "--n", "20")
    assert data["direction"] == "up" and data["minimum_detectable_difference"] is None
    assert "no gap up" in data["mdd_note"]


def test_the_mdd_at_the_needed_n_is_the_asked_gap(capsys) -> None:
    need = run_json(capsys, "--p-a", "0.9", "--p-b", "0.8")["n_per_arm"]
    at = run_json(capsys, "--p-a", "0.9", "--p-b", "0.8", "--n", str(need))
    assert at["power_at_n"] >= 0.8
    assert 0.09 < at["minimum_detectable_difference"] <= 0.1  # n is rounded up
    below = run_json(capsys, "--p-a", "0.7", "--p-b", "0.8", "--n", "20")
    assert below["direction"] == "down" and 0 < below["minimum_detectable_difference"] < 0.8


def test_direction_flag(capsys) -> None:
    data = run_json(capsys, "--p-a", "0.9", "--p-b", "0.8", "--n", "20", "--direction", "down")
    assert data["direction"] == "down" and data["minimum_detectable_difference"] > 0
    code = main(["power", "--p-a", "0.9", "--p-b", "0.8", "--n", "20", "--direction", "sideways"])
    err = capsys.readouterr().err
    assert code == 2 and "--direction must be one of" in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("args, words", [
    (["--test", "exact", "--n", "40"], "exact"),
    (["--paired", "--discordant", "0.3", "--sequential"], "sequential"),
])
def test_long_searches_show_a_spinner_on_stderr_not_with_json(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str],
        words: str) -> None:
    tty = _Terminal()
    monkeypatch.setattr("sys.stderr", tty)
    assert main(["power", "--p-a", "0.7", "--p-b", "0.8", *args]) == 0
    assert words in tty.getvalue()  # the spinner's label, on the terminal's stderr
    capsys.readouterr()
    quiet = _Terminal()
    monkeypatch.setattr("sys.stderr", quiet)
    assert main(["power", "--p-a", "0.7", "--p-b", "0.8", *args, "--json"]) == 0
    assert quiet.getvalue() == "" and json.loads(capsys.readouterr().out)["p_a"] == 0.7
