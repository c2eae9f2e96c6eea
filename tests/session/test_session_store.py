"""The session tables in the run store: round trip, undo, the trials frame, `session show`.

(Named test_session_store.py: tests/store/test_store.py already owns the basename.)
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from evalband.cli import main
from evalband.errors import InvalidInputError, SessionNotFoundError, StoreError
from evalband.session import Rubric, SessionPlan, SessionStore, load_session, plan_session
from evalband.session._store import TRIAL_COLUMNS
from evalband.store import open_store

NAMES = ["GN_s1000", "GN_s2000", "PT_fullLR"]


def _plan(sid: str = "s1", blind: bool = False) -> SessionPlan:
    return plan_session(NAMES, scenes=2, attempts=2, seed=4, blind=blind,
                        positive_control="GN_s1000", session_id=sid)


def test_plan_and_trials_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    plan = _plan()
    with SessionStore(db) as ss:
        ss.create(plan)
        ss.record("s1", 0, score=2, assisted=True, note="  nudged block  ", exit_code=0,
                  duration_s=3.5, output_tail="ok\ndone")
        ss.record("s1", 1, score=1)
        ss.record("s1", 2, status="skipped", exit_code=7, output_tail="crash")
    with SessionStore(db) as ss:  # a new connection reads what was committed
        assert ss.plan("s1") == plan
        recs = {r.trial_index: r for r in ss.records("s1")}
        assert recs[0].success is True and recs[0].assisted and recs[0].note == "nudged block"
        assert recs[0].output_tail == "ok\ndone" and recs[0].duration_s == 3.5
        assert recs[1].success is False and recs[1].score == 1
        assert recs[2].status == "skipped" and recs[2].score is None and recs[2].exit_code == 7
        assert ss.counts("s1") == {"pending": 9, "scored": 2, "skipped": 1, "total": 12}
        assert ss.next_pending("s1") == 3
        df = ss.trials("s1")
    assert tuple(df.columns) == TRIAL_COLUMNS and len(df) == 12
    assert str(df["score"].dtype) == "Int64" and str(df["success"].dtype) == "boolean"
    assert df["assisted"].dtype == bool and str(df["exit_code"].dtype) == "Int64"
    assert df["status"].tolist()[:4] == ["scored", "scored", "skipped", "pending"]
    assert df.loc[0, "score"] == 2 and bool(df.loc[0, "success"]) is True
    assert df.loc[2, "success"] is pd.NA and df.loc[3, "score"] is pd.NA
    assert pd.isna(df.loc[1, "duration_s"]) and df.loc[0, "duration_s"] == 3.5
    for row, trial in zip(df.itertuples(), plan.trials, strict=True):
        assert (row.trial_index, row.scene, row.attempt, row.policy, row.code, row.position) == (
            trial.index, trial.scene, trial.attempt, trial.policy, trial.code, trial.position)
    plan2, df2 = load_session(db, "s1")
    assert plan2 == plan and df2.equals(df)


def test_undo_deletes_the_most_recent_confirmation_not_the_highest_index(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.sqlite") as ss:
        ss.create(_plan())
        ss.record("s1", 5, score=2)
        ss.record("s1", 1, score=0)
        assert ss.undo_last("s1").trial_index == 1
        assert ss.undo_last("s1").trial_index == 5
        assert ss.undo_last("s1") is None
        ss.record("s1", 0, score=1)  # a trial can be recorded again once undone
        assert [r.trial_index for r in ss.records("s1")] == [0]


def test_record_rejects_bad_values_and_duplicates(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.sqlite") as ss:
        ss.create(_plan())
        with pytest.raises(InvalidInputError, match="one of the rubric levels"):
            ss.record("s1", 0, score=5)
        with pytest.raises(InvalidInputError, match="needs a score"):
            ss.record("s1", 0)
        with pytest.raises(InvalidInputError, match="skipped trial has no score"):
            ss.record("s1", 0, status="skipped", score=1)
        with pytest.raises(InvalidInputError, match="trial index must be 0..11"):
            ss.record("s1", 12, score=1)
        with pytest.raises(InvalidInputError, match="'scored' or 'skipped'"):
            ss.record("s1", 0, status="done", score=1)
        ss.record("s1", 0, score=1)
        with pytest.raises(StoreError, match="already recorded"):
            ss.record("s1", 0, score=2)
        with pytest.raises(StoreError, match="already exists"):
            ss.create(_plan())
        assert [r.score for r in ss.records("s1")] == [1]


def test_unknown_session_lists_known_ids(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.sqlite") as ss:
        with pytest.raises(SessionNotFoundError, match="holds no sessions yet"):
            ss.plan("nope")
        ss.create(_plan("alpha"))
        ss.create(_plan("beta"))
        with pytest.raises(SessionNotFoundError, match="known sessions: beta, alpha"):
            ss.record("nope", 0, score=1)


def test_sessions_share_the_run_store_file(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with open_store(db) as runs:  # an existing run store gains the session tables
        with SessionStore(runs) as ss:
            ss.create(_plan())
        assert runs.conn is not None  # a RunStore passed in stays open
        listed = runs.list_runs()  # one run per policy, linked to the session
        assert sorted(m.policy for m in listed) == sorted(NAMES)
        assert {(m.source, m.extra["session_id"], m.n_planned) for m in listed} == {
            ("session", "s1", 4)}
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA application_id").fetchone()[0] == 0x4556424E
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "episodes", "sessions", "session_results"} <= tables
    assert "session_trials" not in tables  # trials are episodes


def test_foreign_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE notes (x)")
    before = db.read_bytes()
    with pytest.raises(StoreError, match="not an evalband store"):
        SessionStore(db)
    assert db.read_bytes() == before


def test_read_only_store_without_sessions_reads_empty(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    open_store(db).close()
    with sqlite3.connect(db) as con:  # a schema-1 store that never held a session
        con.execute("DROP TABLE session_results")
        con.execute("DROP TABLE sessions")
        con.execute("PRAGMA user_version = 1")
    with SessionStore(db, read_only=True) as ss:
        assert ss.session_ids() == []
        with pytest.raises(SessionNotFoundError):
            ss.plan("x")
    with sqlite3.connect(db) as con:  # read as it is: nothing created, not migrated
        assert con.execute("SELECT name FROM sqlite_master WHERE name='sessions'").fetchone() \
            is None
        assert con.execute("PRAGMA user_version").fetchone() == (1,)


def test_custom_rubric_success_threshold(tmp_path: Path) -> None:
    plan = plan_session(["A"], scenes=1, attempts=3, seed=0, session_id="r",
                        rubric=Rubric({0: "miss", 1: "touch", 2: "grip"}, success_at=1))
    with SessionStore(tmp_path / "s.sqlite") as ss:
        ss.create(plan)
        assert [ss.record("r", i, score=i).success for i in range(3)] == [False, True, True]


# -- the CLI -------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_show_json_progress_and_rates(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    plan = _plan()
    with SessionStore(db) as ss:
        ss.create(plan)
        for i, score in enumerate([2, 0, 2, 1]):
            ss.record("s1", i, score=score)
        ss.record("s1", 4, status="skipped")
    code, out, err = _cli(capsys, "session", "show", "s1", "--store", str(db), "--json")
    assert code == 0, err
    view = json.loads(out)
    assert view["progress"] == {"pending": 7, "scored": 4, "skipped": 1, "total": 12}
    assert view["next_trial"] == 5 and view["policies"] == NAMES
    assert [t["status"] for t in view["trials"][:6]] == ["scored"] * 4 + ["skipped", "pending"]
    assert view["trials"][5]["score"] is None and view["trials"][0]["policy"] == \
        plan.trials[0].policy
    # per-policy rates, against a count done here from the plan
    expected = {p: [0, 0] for p in NAMES}
    for t, score in zip(plan.trials[:4], [2, 0, 2, 1], strict=True):
        expected[t.policy][0] += score >= 2
        expected[t.policy][1] += 1
    got = {r["policy"]: [r["successes"], r["scored"]] for r in view["per_policy"]}
    assert got == expected
    code, out, _ = _cli(capsys, "session", "show", "s1", "--store", str(db))
    assert code == 0 and "progress: 5 of 12 recorded" in out and "per policy" in out


def test_show_blinded_hides_names_and_rates(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    plan = _plan("b1", blind=True)
    with SessionStore(db) as ss:
        ss.create(plan)
        ss.record("b1", 0, score=2)
    for extra in ([], ["--json"]):
        code, out, err = _cli(capsys, "session", "show", "b1", "--store", str(db), *extra)
        assert code == 0, err
        assert not any(name in out for name in NAMES), out
        assert all(code_ in out for code_ in plan.codes.values())
        assert "per_policy" not in out and "per policy" not in out
        assert "hidden while blinded" in out  # the positive control is not revealed
    code, out, _ = _cli(capsys, "session", "show", "b1", "--store", str(db), "--json",
                        "--unblind")
    view = json.loads(out)
    assert view["codes"] == plan.codes and view["positive_control"] == "GN_s1000"
    assert {r["policy"] for r in view["per_policy"]} == set(NAMES)


def test_show_unknown_session_exits_2_listing_known(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with SessionStore(db) as ss:
        ss.create(_plan("grasp-a"))
    for cmd in ("show", "run"):
        code, out, err = _cli(capsys, "session", cmd, "grasp-b", "--store", str(db))
        assert code == 2 and out == ""
        assert err.startswith("error: session 'grasp-b' is not in the store")
        assert "known sessions: grasp-a" in err and len(err.strip().splitlines()) == 1


def test_list_sessions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with SessionStore(db) as ss:
        ss.create(_plan("one"))
        ss.record("one", 0, score=1)
    code, out, _ = _cli(capsys, "session", "list", "--store", str(db), "--json")
    assert code == 0
    (row,) = json.loads(out)
    assert row.pop("created_at")
    runs = row.pop("runs")  # each policy's run (its trials are the run's episodes)
    assert row == {"session_id": "one", "blind": False, "trials": 12, "scored": 1, "skipped": 0,
                   "pending": 11}
    assert runs == {name: f"one:{name}" for name in NAMES}
    with SessionStore(db) as ss:
        ss.create(_plan("blind", blind=True))
    code, out, _ = _cli(capsys, "session", "list", "--store", str(db), "--json")
    (row,) = [r for r in json.loads(out) if r["session_id"] == "blind"]
    plan = _plan("blind", blind=True)  # in progress: runs by blind code, named by code
    assert row["runs"] == {plan.codes[n]: f"blind:{plan.codes[n]}" for n in NAMES}
    assert not any(n in json.dumps(row) for n in NAMES)


def test_show_rate_is_unaided_like_analyze(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    """An assisted success is counted apart: the shown rate is over unassisted trials (seed 003)."""
    db = tmp_path / "s.sqlite"
    plan = _plan()
    first = plan.trials[0].policy
    mine = [t.index for t in plan.trials if t.policy == first][:2]
    with SessionStore(db) as ss:
        ss.create(plan)
        ss.record("s1", mine[0], score=2, assisted=True)
        ss.record("s1", mine[1], score=0)
    code, out, err = _cli(capsys, "session", "show", "s1", "--store", str(db), "--json")
    assert code == 0, err
    row = next(r for r in json.loads(out)["per_policy"] if r["policy"] == first)
    assert (row["scored"], row["assisted"], row["successes"], row["rate"]) == (2, 1, 0, 0.0)
