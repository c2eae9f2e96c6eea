"""`evalband noise` pools what `show` counts: every repeat (it used to take first attempts only,
27/40 where `show` said 54/80), and says so, with the trailing partial suite."""

from __future__ import annotations

import json
from pathlib import Path

from evalband.cli import main


def test_noise_names_its_pool_and_partial_suite(capsys, tmp_path: Path) -> None:
    panel = tmp_path / "p.yaml"
    panel.write_text("name: rep\nenv: evalband/Coin-v0\nenv_kwargs: {length: 1}\nepisodes: 45\n"
                     "seed: 2\nbudget: {steps: 2}\nrepeats: 2\n")
    db = str(tmp_path / "s.sqlite")
    assert main(["run", str(panel), "-p", "evalband.policies._builtin:zero_action",
                 "--store", db, "--run-id", "rep", "--json"]) == 0
    capsys.readouterr()
    assert main(["show", "rep", "--json", "--store", db]) == 0
    shown = capsys.readouterr().out
    assert main(["noise", "rep", "--suite-size", "20", "--store", db]) == 0
    out = capsys.readouterr().out
    assert "pooled over every episode" in out and "/90 =" in out  # 45 conditions x 2 repeats
    summary = json.loads(shown)["summary"]
    assert summary["n_attempted"] == 90
    assert main(["noise", "rep", "--suite-size", "20", "--json", "--store", db]) == 0
    floor = json.loads(capsys.readouterr().out)
    assert floor["pooled"]["n"] == summary["n_attempted"]  # the pool is what `show` counts
    assert "45 repeat episodes also give the flip rate" in out
    assert "the last 10 episode(s)" in out and "partial suite" in out  # 90 = 4 x 20 + 10
