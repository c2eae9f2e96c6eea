"""Files a command writes where asked (`--md`, `--html`): the folders are made."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalband import run_panel
from evalband.cli import main
from evalband.panel import load_panel
from evalband.store import RunStore


def test_compare_md_into_a_new_folder_like_rank_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "s.sqlite"
    with RunStore(db) as st:
        for policy in ("baseline", "damped"):
            run_panel(load_panel("reach1d").with_overrides(episodes=4), f"reach1d:{policy}",
                      st, run_id=policy)
    store = ["--store", str(db)]
    for command, flag in ((["rank", "baseline", "damped"], "--md"),
                          (["report", "baseline", "damped"], "--md"),
                          (["compare", "baseline", "damped"], "--md")):
        out = tmp_path / command[0] / "nested" / "summary.md"
        code = main([*command, *store, flag, str(out)])
        err = capsys.readouterr().err
        assert code != 2 and not err.startswith("error"), (command, err)
        assert out.read_text().startswith("#"), command
