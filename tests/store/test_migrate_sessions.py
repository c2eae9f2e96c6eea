"""A schema-2 store's hardware sessions migrate to schema 3: every trial becomes an episode.

The fixture ``fixtures/store-v2.sqlite`` was made by ``fixtures/make_store_v2.py`` with the
release that wrote schema 2 (trials in ``session_trials``): a blind session ``fix2`` of three
policies (one named ``B/v2``, one a positive control) with ten confirmed trials out of trial
order (nine scored, one skipped, one assisted, notes, exit codes, output tails) and an empty
session. ``session-show-v2.json`` and ``session-analyze-v2.json`` are that release's
``session show fix2 --unblind --json`` and ``session analyze fix2 --unblind --json``.
Migrated, the blinded session's runs are named by its blind codes, as a new session's are.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main
from evalband.session import SessionStore
from evalband.store import RunStore
from evalband.store._schema import SCHEMA_VERSION
from testkit import as_released

FIXTURE = Path(__file__).parent / "fixtures" / "store-v2.sqlite"
OLD_SHOW = FIXTURE.with_name("session-show-v2.json")
OLD_ANALYZE = FIXTURE.with_name("session-analyze-v2.json")
FIELDS = ("session_id", "trial_index", "seq", "status", "score", "success", "assisted", "note",
          "exit_code", "duration_s", "output_tail", "scored_at")


def old_trials() -> dict[int, dict[str, Any]]:
    """The fixture's ``session_trials`` rows, read with sqlite3 itself."""
    conn = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)
        rows = conn.execute(f"SELECT {', '.join(FIELDS)} FROM session_trials").fetchall()
    finally:
        conn.close()
    return {int(r[1]): dict(zip(FIELDS, r, strict=True)) for r in rows}


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURE, path)
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def _same(record: Any, old: dict[str, Any]) -> None:
    got = record.as_dict()
    for name in FIELDS:
        if name == "seq":
            continue
        want = old[name]
        if name in ("success", "assisted") and want is not None:
            want = bool(want)
        assert got[name] == want, (record.trial_index, name)


def test_read_only_reads_the_old_trials_and_writes_nothing(v2: Path) -> None:
    data, old = v2.read_bytes(), old_trials()
    with SessionStore(v2, read_only=True) as ss:
        assert ss.runs.schema_version == 2 and ss.run_ids("fix2") == {}
        records = ss.records("fix2")
        assert [r.trial_index for r in records] == sorted(old) and len(old) == 10
        for r in records:
            _same(r, old[r.trial_index])
        assert ss.last_record("fix2").trial_index == 9  # the last confirmed (seq 10)
    assert v2.read_bytes() == data


def test_opening_to_write_moves_every_trial_into_episodes(v2: Path) -> None:
    old = old_trials()
    with SessionStore(v2) as ss:
        assert ss.runs.schema_version == SCHEMA_VERSION == 4
        ids = ss.run_ids("fix2")
        plan = ss.plan("fix2")  # blinded: its runs are named by the blind codes
        assert plan.blind and ids == {p: f"fix2:{plan.codes[p]}" for p in ("A", "B/v2", "ctrl")}
        for r in ss.records("fix2"):
            _same(r, old[r.trial_index])
        assert [r.trial_index for r in ss._records_by_seq("fix2")] == [
            i for i, _ in sorted(old.items(), key=lambda kv: kv[1]["seq"])]
        episodes = {}
        for policy, run_id in ids.items():
            manifest = ss.runs.require_run(run_id)
            assert (manifest.policy, manifest.source, manifest.n_planned) == (
                plan.codes[policy], "session", 4)
            for e in ss.runs.episode_records(run_id):
                episodes[e.extra["session"]["trial_index"]] = e
            done = ss.runs.count_episodes(run_id)
            assert manifest.status == ("finished" if done == 4 else "running")
        assert sorted(episodes) == sorted(old)
        for index, e in episodes.items():  # scene = cell, attempt = repeat, skip = error
            trial = plan.trials[index]
            assert e.key == (f"scene={trial.scene}", 0, trial.attempt - 1)
            assert e.policy == trial.code and e.wall_s == old[index]["duration_s"]
            want = {"scored": "success" if old[index]["success"] else "failure",
                    "skipped": "error"}[old[index]["status"]]
            assert e.outcome.value == want
        assert ss.run_ids("empty2") == {"A": "empty2:A", "B": "empty2:B"}
        assert ss.undo_last("fix2").trial_index == 9  # the confirmation order survived
        assert ss.next_pending("fix2") == 9
    conn = sqlite3.connect(v2)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()
    assert "session_trials" not in tables and "session_results" in tables


@pytest.mark.slow
def test_the_release_numbers_after_migration(v2: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with RunStore(v2):
        pass  # migrate
    s = str(v2)
    code, out = cli(capsys, "session", "show", "fix2", "--unblind", "--store", s, "--json")
    assert code == 0 and json.loads(out) == json.loads(OLD_SHOW.read_text())
    code, out = cli(capsys, "session", "analyze", "fix2", "--unblind", "--store", s, "--json")
    old = json.loads(OLD_ANALYZE.read_text())
    new = json.loads(out)
    assert code == 0 and as_released({k: new[k] for k in old}, old) == old
    # the session's runs are runs (named by blind code): compare pairs them by (scene, attempt)
    codes = json.loads(OLD_SHOW.read_text())["codes"]
    a, ctrl = f"fix2:{codes['A']}", f"fix2:{codes['ctrl']}"
    code, out = cli(capsys, "compare", a, ctrl, "--store", s, "--json")
    assert code in (0, 3, 4, 5)
    result = json.loads(out)
    assert result["baseline"] == a
