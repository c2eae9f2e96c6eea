"""`evalband import` for results files, and comparing two imported lerobot evaluations."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from evalband.cli import main


def lerobot_file(path: Path, successes: dict[int, list[bool]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tasks = [{"task_group": "libero_10", "task_id": tid,
              "metrics": {"successes": ok, "sum_rewards": [float(x) for x in ok]}}
             for tid, ok in successes.items()]
    total = sum(len(ok) for ok in successes.values())
    pc = 100.0 * sum(sum(ok) for ok in successes.values()) / total
    path.write_text(json.dumps({"per_task": tasks,
                                "overall": {"pc_success": pc, "n_episodes": total}}))
    return path


def tables(db: str) -> tuple[list, list]:
    with sqlite3.connect(db) as con:
        return (con.execute("select * from runs order by run_id").fetchall(),
                con.execute("select * from episodes order by run_id, cell, episode").fetchall())


def test_csv_import_and_bad_file(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    good = tmp_path / "arm.csv"
    good.write_text("episode,slice.embodiment,success,assisted\n0,so101,1,0\n1,so101,0,0\n"
                    "0,koch,1,1\n1,koch,1,0\n")
    assert main(["import", str(good), "--store", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run_id"] == "arm" and out["episodes"] == 4 and out["panel_inferred"]
    before = tables(db)
    bad = tmp_path / "bad.csv"
    bad.write_text("episode,success\n0,1\n1,2\n")
    code = main(["import", str(bad), "--store", db])
    err = capsys.readouterr().err
    assert code == 2 and "line 3" in err and "'success'" in err and err.count("\n") == 1
    assert tables(db) == before
    assert main(["import", str(good), "--format", "xml", "--store", db]) == 2


def test_two_lerobot_imports_compare_by_episode_index(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    base = lerobot_file(tmp_path / "base" / "eval_info.json",
                        {0: [True] * 6 + [False] * 4, 1: [True] * 5 + [False] * 5})
    cand = lerobot_file(tmp_path / "cand" / "eval_info.json",
                        {0: [True] * 9 + [False] * 1, 1: [True] * 5 + [False] * 5})
    for f in (base, cand):
        assert main(["import", str(f), "--store", db]) == 0
    shown = capsys.readouterr().out
    assert "pair by episode index within task" in shown
    code = main(["compare", "base", "cand", "--store", db, "--json"])
    out = json.loads(capsys.readouterr().out)
    task0 = next(s for s in out["slices"] if s["name"].endswith("task=0") or
                 s["name"] == "task=0")
    assert task0["pairing"] == "paired"
    assert task0["pairs"] == {"both": 6, "baseline_only": 0, "candidate_only": 3, "neither": 1,
                              "unmatched": 0}
    assert code in (0, 3, 4, 5)


def test_plain_csv_column_becomes_a_slice_with_a_one_line_note(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    path = tmp_path / "robots.csv"
    path.write_text("episode,embodiment,success\n0,so101,1\n1,so101,0\n0,koch,1\n1,koch,1\n")
    assert main(["import", str(path), "--store", db]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if "embodiment" in line]
    assert notes == ["note: column embodiment read as a slice factor (categorical) (say so with "
                     "--factors/--metrics)"]
    _, episodes = tables(db)
    assert len(episodes) == 4
    assert main(["show", "robots", "--store", db, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert "embodiment=koch" in json.dumps(shown)


def test_paired_csv_imports_one_run_per_arm(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    path = tmp_path / "results.csv"
    path.write_text("run,seed,episode,episode_id,baseline_success,cgvd_success,"
                    "baseline_failure_mode,cgvd_failure_mode\n"
                    "0,0,0,0,1,0,success,never_reached\n0,0,1,1,0,1,dropped,success\n")
    assert main(["import", str(path), "--store", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in out["runs"]] == ["results-baseline", "results-cgvd"]
    code = main(["compare", "results-baseline", "results-cgvd", "--store", db, "--json"])
    assert code != 2  # compared (exit codes 0, 1, 3 are verdicts)
    assert json.loads(capsys.readouterr().out)["verdict"] == "no regression"


def test_a_refused_import_leaves_no_store_behind(capsys, tmp_path: Path) -> None:
    """A bad file, a missing file or a taken run id creates no store where there was none."""
    bad = tmp_path / "bad.csv"
    bad.write_text("episode,success\n0,1\n1,ten\n")
    for source in (bad, tmp_path / "missing.csv"):
        target = tmp_path / "new" / "deeper" / "s.sqlite"
        assert main(["import", str(source), "--store", str(target)]) == 2
        assert capsys.readouterr().err.count("\n") == 1
        assert not (tmp_path / "new").exists(), sorted(p.name for p in tmp_path.iterdir())
    good = tmp_path / "good.csv"
    good.write_text("episode,success\n0,1\n1,0\n")
    db = tmp_path / "kept" / "s.sqlite"
    assert main(["import", str(good), "--store", str(db)]) == 0
    assert main(["import", str(bad), "--store", str(db)]) == 2  # an existing store is kept
    assert db.is_file() and [r[0] for r in tables(str(db))[0]] == ["good"]



def test_a_taken_run_id_names_the_flag_to_change(capsys, tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text("episode,success\n0,1\n1,0\n")
    db = str(tmp_path / "s.sqlite")
    assert main(["import", str(good), "--store", db]) == 0
    capsys.readouterr()
    assert main(["import", str(good), "--store", db]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err and "--run-id" in err, err
    assert main(["import", str(good), "--store", db, "--run-id", "good-2"]) == 0
    other = tmp_path / "other.csv"  # a different run of the same id in another store
    other.write_text("episode,success\n0,0\n1,0\n")
    assert main(["export", "good", "--out", str(tmp_path / "bundle"), "--store", db]) == 0
    elsewhere = str(tmp_path / "elsewhere.sqlite")
    assert main(["import", str(other), "--run-id", "good", "--store", elsewhere]) == 0
    capsys.readouterr()
    assert main(["import", str(tmp_path / "bundle"), "--store", elsewhere]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "different content" in err and "--store" in err, err


def test_a_lerobot_eval_folder_points_at_its_eval_info(capsys, tmp_path: Path) -> None:
    """export --format lerobot writes DIR/eval_info.json; importing DIR says to import the file."""
    folder = lerobot_file(tmp_path / "outputs" / "eval" / "eval_info.json", {0: [True, False]})
    db = str(tmp_path / "s.sqlite")
    assert main(["import", str(folder.parent), "--store", db]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"import that file ({folder})" in err, err
    assert main(["import", str(folder), "--store", db]) == 0
