"""``compare --json`` prints the declared alpha, not its binary rounding (issue 33, item 16)."""

from __future__ import annotations

import json
from pathlib import Path

from evalband.cli import main


def test_compare_json_prints_the_declared_alpha(tmp_path: Path, capsys) -> None:
    store = str(tmp_path / "s.sqlite")
    for name, wins in (("a", "1,1,0,1"), ("b", "0,1,0,1")):
        path = tmp_path / f"{name}.csv"
        path.write_text("episode,success\n" + "".join(
            f"{i},{w}\n" for i, w in enumerate(wins.split(","))))
        assert main(["import", str(path), "--store", store]) == 0
    capsys.readouterr()
    main(["compare", "a", "b", "--store", store, "--json"])
    out = capsys.readouterr().out
    assert json.loads(out)["procedure"]["alpha"] == 0.05
    assert '"alpha": 0.05,' in out
