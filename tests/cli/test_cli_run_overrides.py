"""``run --episodes N --seed S``: a smoke test of a panel, recorded as one (issue 33, item 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalband.cli import main
from evalband.panel import load_panel
from evalband.store import open_store


def test_episodes_and_seed_override_the_panel_and_say_so(tmp_path: Path, capsys) -> None:
    store = str(tmp_path / "s.sqlite")
    assert main(["run", "reach1d", "-p", "reach1d:damped", "--episodes", "3", "--seed", "9",
                 "--run-id", "smoke", "--store", store, "--json"]) == 0
    capsys.readouterr()
    panel = load_panel("reach1d")
    with open_store(store) as st:
        manifest = st.require_run("smoke")
        records = st.episode_records("smoke")
    cells = len(panel.cells())
    assert len(records) == 3 * cells and manifest.n_planned == 3 * cells
    assert manifest.panel_fingerprint != panel.fingerprint
    assert manifest.panel_fingerprint == panel.with_overrides(episodes=3, seed=9).fingerprint
    assert manifest.extra["override"] == {"episodes": 3, "seed": 9,
                                          "of_fingerprint": panel.fingerprint}
    seeds = {r.condition_seed for r in records}
    assert seeds == {s.condition_seed for s in panel.with_overrides(
        episodes=3, seed=9).episode_specs()}
    assert main(["show", "smoke", "--store", store]) == 0
    assert "--episodes 3 --seed 9" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--episodes", "0"], ["--seed", "-1"]])
def test_bad_overrides_are_one_line(tmp_path: Path, capsys, args: list[str]) -> None:
    code = main(["run", "reach1d", "-p", "reach1d:damped", *args,
                 "--store", str(tmp_path / "s.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.strip().count("\n") <= 1, err
    if (tmp_path / "s.sqlite").exists():  # nothing recorded
        with open_store(tmp_path / "s.sqlite") as st:
            assert st.list_runs() == []
