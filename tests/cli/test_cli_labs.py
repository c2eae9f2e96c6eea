"""The seed labs and the noise floor through the CLI, end to end on a real store."""

from __future__ import annotations

import json
from pathlib import Path

from evalband.cli import main


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_hidden_regression_lab_200_and_10(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    code, at200 = run_json(capsys, "lab", "hidden-regression", "--episodes", "200", "--store", db)
    assert code == 0
    assert at200["verdict"] == "regression"
    assert at200["hidden_regressions"] == ["embodiment=franka_panda"]
    assert at200["aggregate"]["delta"] >= 0
    code, at10 = run_json(capsys, "lab", "hidden-regression", "--episodes", "10", "--store", db)
    hard = next(s for s in at10["slices"] if s["name"] == "embodiment=franka_panda")
    assert hard["verdict"] == "no detectable change" and hard["possible_regression"]
    assert hard["delta"]["estimate"] < 0 and hard["episodes_for_effect"] > 10
    assert at10["hidden_regressions"] == []
    code, floor = run_json(capsys, "noise", at200["baseline"], "--suite-size", "20", "--store", db)
    assert code == 0 and floor["swing"]["n_suites"] == 30 and floor["flip"] is None


def test_noise_flip_rate_with_repeats(capsys, tmp_path: Path) -> None:
    panel = tmp_path / "p.yaml"
    panel.write_text("name: rep\nenv: evalband/Coin-v0\nenv_kwargs: {length: 1}\nepisodes: 30\n"
                     "seed: 2\nbudget: {steps: 2}\nrepeats: 2\n")
    db = str(tmp_path / "s.sqlite")
    assert main(["run", str(panel), "--policy", "evalband.policies._builtin:zero_action",
                 "--store", db, "--run-id", "rep", "--json"]) == 0
    capsys.readouterr()
    code, floor = run_json(capsys, "noise", "rep", "--suite-size", "10", "--store", db)
    # The coin env fixes an episode's fate by its condition seed: repeats never flip.
    assert code == 0 and floor["flip"]["pairs"] == 30 and floor["flip"]["flips"] == 0
    code = main(["noise", "rep", "--suite-size", "0", "--store", db])
    assert code == 2
