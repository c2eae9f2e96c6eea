"""``calibrate RUN``: the run's own counts, its cell rates shrunk, both said before the rates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.panel import load_panel
from evalband.run import Recorder
from evalband.store import open_store


def test_calibrate_a_run_uses_its_counts_and_shrunken_rates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    panel = load_panel({"name": "cal", "env": "evalband/Coin-v0", "episodes": 30, "seed": 1,
                        "budget": {"steps": 1}, "factors": {"arm": ["a", "b", "c"]}})
    db = str(tmp_path / "s.sqlite")
    observed = {"a": [0, 0, 0], "b": [1] * 14 + [0] * 6, "c": [1] * 8 + [0] * 4}
    with open_store(db) as st, Recorder(st, panel, "pol", run_id="r") as rec:
        for arm, outcomes in observed.items():
            for episode, ok in enumerate(outcomes):
                rec.log(cell=f"arm={arm}", episode=episode,
                        outcome="success" if ok else "failure", steps=1)
    assert main(["calibrate", "r", "--store", db, "--reps", "60", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["episodes_per_cell"] == {"arm=a": 3, "arm=b": 20, "arm=c": 12}  # not 30 each
    assert out["raw_rates"]["arm=a"] == 0.0 and 0 < out["base_rates"]["arm=a"] < 22 / 35
    assert "shrunk toward its pooled 62.9%" in out["rates_from"]
    assert out["counts_from"] == "run r's own episodes per cell"
    assert out["power"]["arm=a"]["count"] >= 0
    assert main(["calibrate", "r", "--store", db, "--reps", "30"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1].startswith("assumed: base rates run r's cell rates shrunk")
    assert "arm=a: " in text and "(observed 0.0%), 3 episodes" in text
