"""A schema-3 store migrates to schema 4 (robot sessions' tables), keeping every row.

``fixtures/store-v3-session.sqlite`` was made by ``fixtures/make_store_v3_session.py`` with the
release that wrote schema 3: a blinded session ``fix3`` with three confirmed trials (one
skipped) and one pending. Schema 4 adds ``session_attempts`` and ``session_scenes`` (and a run's
``step``, NULL for the old runs); nothing else changes.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from evalband.session import SessionStore
from evalband.session._attempts import AttemptLog
from evalband.store import RunStore
from evalband.store._schema import SCHEMA_VERSION

FIXTURE = Path(__file__).parent / "fixtures" / "store-v3-session.sqlite"


def raw(path: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {"version": conn.execute("PRAGMA user_version").fetchone()[0],
                **{t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
                   for t in tables}}
    finally:
        conn.close()


def test_the_old_file_reads_as_it_is_and_migrates_with_every_row(tmp_path: Path) -> None:
    before = raw(FIXTURE)
    assert before["version"] == 3 and "session_attempts" not in before
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURE, path)
    data = path.read_bytes()
    with SessionStore(path, read_only=True) as ss:  # read-only: new tables read as empty
        assert [r.status for r in ss.records("fix3")] == ["scored", "scored", "skipped"]
        assert AttemptLog(ss).attempts("fix3") == [] and AttemptLog(ss).capture("fix3", 1) is None
    assert path.read_bytes() == data
    with RunStore(path) as st:
        assert st.schema_version == SCHEMA_VERSION
    after = raw(path)
    assert after["version"] == SCHEMA_VERSION
    assert after["session_attempts"] == [] and after["session_scenes"] == []
    # runs gain their checkpoint step (NULL for every old run) in the same version
    assert all(row[-1] is None for row in after["runs"])
    after["runs"] = sorted((row[:-1] for row in after["runs"]), key=repr)
    for table, rows in before.items():
        if table != "version":
            assert after[table] == rows, table  # every old row, unchanged
    with SessionStore(path) as ss:  # and the migrated store takes robot plays
        log = AttemptLog(ss)
        attempt = log.start("fix3", 3, "sim-arm", "human")
        log.finish(attempt.attempt_id, "aborted", reason="test")
        assert [a.status for a in log.attempts("fix3")] == ["aborted"]
        assert ss.next_pending("fix3") == 3
