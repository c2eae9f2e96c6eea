"""The spinner of long steps: on a terminal's stderr only, never with --json or in a pipe."""

from __future__ import annotations

import io
from pathlib import Path

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


def test_step_bar_counts_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalband.cli._progress import work

    tty = _Terminal()
    monkeypatch.setattr("sys.stderr", tty)
    with work("importing big.csv") as step:
        step.stage("reading big.csv")(3_000, 7_000)
    assert "3,000/7,000" in tty.getvalue() and "reading big.csv" in tty.getvalue()
    for stream, enabled in ((_Terminal(), False), (io.StringIO(), True)):  # --json, a pipe
        monkeypatch.setattr("sys.stderr", stream)
        with work("importing big.csv", enabled=enabled) as step:
            step.update(1, 2)
        assert stream.getvalue() == ""


def test_show_compare_and_report_report_their_progress(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each long command moves its bar with episodes done of all (a fake terminal)."""
    from typer.testing import CliRunner

    from evalband.cli import _progress
    from evalband.cli._app import app

    folder = tmp_path
    source = folder / "r.csv"
    source.write_text("slice.a,episode,success\n" + "".join(
        f"{'xy'[i % 2]},{i // 2},{i % 3 == 0:d}\n" for i in range(40)))
    store = str(folder / "s.sqlite")
    seen: list[tuple[str | None, int, int]] = []

    class _Bar(_progress.Work):
        def update(self, done: int, total: int, label: str | None = None) -> None:
            seen.append((label, done, total))

    def fake_work(label: str, *, enabled: bool = True):  # type: ignore[no-untyped-def]
        from contextlib import nullcontext

        return nullcontext(_Bar(None, None))

    monkeypatch.setattr(_progress, "work", fake_work)
    runner = CliRunner()
    for args in (["import", str(source), "--run-id", "a"],
                 ["import", str(source), "--run-id", "b"],
                 ["show", "a"], ["compare", "a", "b"],
                 ["report", "a", "b", "--html", str(folder / "r.html")]):
        seen.clear()
        result = runner.invoke(app, [*args, "--store", store])
        assert result.exit_code in (0, 3, 4, 5), result.output
        assert seen and seen[-1][1] == seen[-1][2], (args, seen)  # ends complete
        assert any(total == 40 for _, _, total in seen), (args, seen)  # counts episodes
