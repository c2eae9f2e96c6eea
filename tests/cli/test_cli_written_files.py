"""Files a command writes where asked (`--md`, `--html`): the folders are made."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalband import run_panel
from evalband.cli import main
from evalband.panel import load_panel
from evalband.store import RunStore


def two_runs(folder: Path) -> Path:
    """A store in ``folder`` with two small reach1d runs, ``baseline`` and ``damped``."""
    db = folder / "s.sqlite"
    with RunStore(db) as st:
        for policy in ("baseline", "damped"):
            run_panel(load_panel("reach1d").with_overrides(episodes=4), f"reach1d:{policy}",
                      st, run_id=policy)
    return db


def test_a_write_cut_short_leaves_the_file_that_was_there_and_no_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while a report is written: the old file stays whole, nothing half-written."""
    from evalband.cli._rank import write_outputs

    out = tmp_path / "r.md"
    out.write_text("old")
    real = Path.write_text

    def cut(self: Path, text: str, *args: object, **kwargs: object) -> int:
        real(self, text[:3], *args, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", cut)
    with pytest.raises(KeyboardInterrupt):
        write_outputs("# the new report", None, out, None, quiet=True)
    monkeypatch.undo()
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]


def test_compare_md_into_a_new_folder_like_rank_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    db = two_runs(tmp_path)
    store = ["--store", str(db)]
    for command, flag in ((["rank", "baseline", "damped"], "--md"),
                          (["report", "baseline", "damped"], "--md"),
                          (["compare", "baseline", "damped"], "--md")):
        out = tmp_path / command[0] / "nested" / "summary.md"
        code = main([*command, *store, flag, str(out)])
        err = capsys.readouterr().err
        assert code != 2 and not err.startswith("error"), (command, err)
        assert out.read_text().startswith("#"), command


def test_every_written_file_is_said_the_same_way_and_a_md_report_is_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """`wrote FILE` for each file (stderr with --json, stdout holding the JSON alone).

    `report` said "wrote FILE", `run`/`compare --report` "report: FILE", and `compare --md`
    and `rank --md/--html` nothing; `compare --report x.md` wrote HTML into the .md file.
    """
    import json

    db = two_runs(tmp_path)
    store = ["--store", str(db)]
    md, html, page = tmp_path / "o.md", tmp_path / "o.html", tmp_path / "page.md"
    commands = [
        (["rank", "baseline", "damped", "--md", str(md), "--html", str(html)], [html, md]),
        (["compare", "baseline", "damped", "--md", str(md)], [md]),
        (["compare", "baseline", "damped", "--report", str(page)], [page]),
        (["report", "baseline", "damped", "--md", str(md), "--html", str(html)], [html, md]),
        (["run", "reach1d", "-p", "reach1d:expert", "--episodes", "4", "--run-id", "e",
          "--report", str(page)], [page]),
    ]
    for json_flag in ([], ["--json"]):
        for args, paths in commands:
            code = main([*args, *store, *json_flag])
            out, err = capsys.readouterr()
            said = [f"wrote {p}" for p in paths]
            assert code != 2 and not err.startswith("error"), (args, err)
            if json_flag:
                json.loads(out)  # stdout is the JSON alone
                assert [line for line in err.splitlines() if line.startswith("wrote")] == said
            else:
                assert [line for line in out.splitlines() if line.startswith("wrote")] == said
                assert "report: " not in out
            if "--report" in args:
                assert page.read_text().startswith("#"), args  # Markdown, not the HTML page
                page.unlink()
