from __future__ import annotations

import json
from pathlib import Path

from evalband.cli import main
from testkit import coin_panel


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_run_show_runs_export_import(capsys, tmp_path: Path) -> None:
    panel = tmp_path / "coin.yaml"
    panel.write_text(coin_panel(episodes=5).to_yaml())
    db = str(tmp_path / "s.sqlite")
    code, out, err = run_cli(capsys, "run", str(panel), "--policy",
                             "evalband.policies._builtin:zero_action", "--store", db,
                             "--run-id", "c1", "--json")
    assert code == 0, err
    summary = json.loads(out)["summary"]
    assert summary["n_attempted"] == 10
    code, out, _ = run_cli(capsys, "show", "c1", "--store", db)
    assert code == 0 and "Wilson 95%" in out and "mean time among successes" in out
    code, out, _ = run_cli(capsys, "runs", "--store", db, "--json")
    assert [r["run_id"] for r in json.loads(out)] == ["c1"]
    bundle = tmp_path / "bundle"
    code, _, err = run_cli(capsys, "export", "c1", "--out", str(bundle), "--store", db)
    assert code == 0, err
    assert {p.name for p in bundle.iterdir()} >= {"manifest.json", "panel.yaml",
                                                   "episodes.parquet"}
    other = str(tmp_path / "other.sqlite")
    code, out, err = run_cli(capsys, "import", str(bundle), "--store", other, "--json")
    assert code == 0, err and json.loads(out)["run_id"] == "c1"
    code, out, _ = run_cli(capsys, "show", "c1", "--store", other, "--json")
    assert json.loads(out)["summary"]["n_attempted"] == 10


def test_run_bad_inputs_are_one_line(capsys, tmp_path: Path) -> None:
    not_db = tmp_path / "notes.txt"
    not_db.write_text("this is not a database, it is my notes\n" * 50)
    before = not_db.read_bytes()
    panel = tmp_path / "bad.yaml"
    panel.write_text("name: x\nenv: evalband/Coin-v0\nepisodes: 2\nseed: 0\n"
                     "budget: {steps: 2}\nwokers: 3\n")
    cases = [
        (["run", "reach1d", "--policy", "reach1d:damped", "--store", str(not_db)], "not"),
        (["run", str(panel), "--policy", "reach1d:damped", "--store",
          str(tmp_path / "a.sqlite")], "wokers"),
        (["run", "reach1d", "--policy", "reach1d:nope", "--store",
          str(tmp_path / "b.sqlite")], "reach1d:baseline"),
        # a read command never creates a store: a mistyped --store is named, not made
        (["show", "missing", "--store", str(tmp_path / "c.sqlite")], "no run store"),
        (["run", "reach1d", "--policy", "reach1d:damped", "--backend", "gpu", "--store",
          str(tmp_path / "d.sqlite")], "serial"),
    ]
    for args, needle in cases:
        code, out, err = run_cli(capsys, *args)
        assert code == 2, (args, out, err)
        assert err.startswith("error: ") and err.count("\n") == 1 and needle in err, err
    assert not_db.read_bytes() == before
    assert not (tmp_path / "c.sqlite").exists()


def test_resume_with_different_panel_is_refused(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    assert main(["run", "reach1d", "--policy", "reach1d:damped", "--store", db, "--run-id",
                 "r", "--json"]) == 0
    code, out, err = run_cli(capsys, "run", "reach1d-2s", "--policy", "reach1d:damped",
                             "--store", db, "--run-id", "r")
    assert code == 2 and "fingerprint" in err


def test_lab_prints_the_seed_numbers(capsys, tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "lab", "reach1d", "--store", str(tmp_path / "s.sqlite"))
    assert code == 0, err
    for needle in ("9/64", "50/64", "7.578573%", "86.497681%", "1.511111 s", "2.368000 s",
                   "both 8, baseline-only 1, damped-only 42, neither 13", "McNemar"):
        assert needle in out, needle


def test_export_of_a_session_id_says_what_to_export(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    code, _, err = run_cli(capsys, "session", "plan", "--policies", "A,B", "--scenes", "1",
                           "--seed", "1", "--session-id", "sess", "--store", db)
    assert code == 0, err
    code, _, err = run_cli(capsys, "export", "sess", "--out", str(tmp_path / "b"), "--store", db)
    assert code == 2 and err.count("\n") == 1, err
    assert "is a session, not a run" in err and "sess:A" in err and "--format lerobot" in err
    assert not (tmp_path / "b").exists()
    code, _, err = run_cli(capsys, "export", "sess:A", "--out", str(tmp_path / "b"), "--store",
                           db)
    assert code == 0, err
