"""`evalband noise` says what it pools: first attempts only (repeats feed the flip rate), and
the trailing partial suite; it used to use them silently (27/40 where `show` said 54/80)."""

from __future__ import annotations

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
    assert main(["noise", "rep", "--suite-size", "10", "--store", db]) == 0
    out = capsys.readouterr().out
    assert "pooled over first attempts" in out and "/45 =" in out
    assert "45 repeat episodes enter the flip rate" in out
    assert "the last 5 episode(s)" in out and "partial suite" in out
