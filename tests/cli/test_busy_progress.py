"""The spinner of long steps: on a terminal's stderr only, never with --json or in a pipe."""

from __future__ import annotations

import io

import pytest

from evalband.cli._progress import busy


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_spinner_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    tty = _Terminal()
    monkeypatch.setattr("sys.stderr", tty)
    with busy("importing big.csv"):
        pass
    assert "importing big.csv" in tty.getvalue()
    quiet = _Terminal()
    monkeypatch.setattr("sys.stderr", quiet)
    with busy("importing big.csv", enabled=False):  # --json
        pass
    assert quiet.getvalue() == ""
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    with busy("importing big.csv"):
        pass
    assert pipe.getvalue() == ""
