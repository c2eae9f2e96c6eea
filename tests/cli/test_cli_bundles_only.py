"""Bundles alone need no store: compare, rank and show read them as report does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalband import run_panel
from evalband.cli import main
from evalband.panel import load_panel
from evalband.store import RunStore
from evalband.store._bundle import export_bundle


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bundles")
    with RunStore(root / "made.sqlite") as st:
        for policy in ("baseline", "damped"):
            run_panel(load_panel("reach1d").with_overrides(episodes=8), f"reach1d:{policy}",
                      st, run_id=policy)
            export_bundle(st, policy, root / policy)
    return root


@pytest.mark.parametrize("command", [["compare"], ["rank"], ["report", "--md", "r.md"],
                                     ["show"]])
def test_two_bundles_without_a_store(bundles: Path, tmp_path: Path, command: list[str],
                                     capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default store ./evalband-runs/evalband.sqlite: none here
    base, cand = str(bundles / "baseline"), str(bundles / "damped")
    sources = [cand] if command == ["show"] else [base, cand]
    code = main([command[0], *sources, *command[1:], "--json"])
    out = capsys.readouterr()
    assert code in (0, 3), out.err
    assert isinstance(json.loads(out.out), dict)
    assert not (tmp_path / "evalband-runs").exists()  # nothing created to read bundles
    missing = tmp_path / "no" / "s.sqlite"  # a --store that does not exist: the same
    assert main([command[0], *sources, *command[1:], "--store", str(missing)]) in (0, 3)
    assert not (tmp_path / "no").exists()


def test_a_run_id_without_a_store_is_still_one_line(bundles: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "s.sqlite")
    for command in (["compare", str(bundles / "baseline")], ["rank", str(bundles / "baseline")],
                    ["show"]):
        assert main([*command, "damped", "--store", missing]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--store" in err, err
    assert not Path(missing).exists()
