"""The column-wise import stores what the row-wise import stores, and declines what it must."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalband.errors import ImportFormatError
from evalband.store import _import_fast, import_results, open_store
from evalband.store._import_fast import plan_columns


def _rows(store_path: Path, run_id: str) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    conn = sqlite3.connect(store_path)
    try:
        rows = conn.execute(
            "SELECT * FROM episodes WHERE run_id = ? ORDER BY rowid", (run_id,)
        ).fetchall()
        names = [d[1] for d in conn.execute("PRAGMA table_info(runs)").fetchall()]
        run = dict(zip(names, conn.execute(
            "SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone(), strict=True))
    finally:
        conn.close()
    for moving in ("started_at", "finished_at", "created_at", "updated_at", "heartbeat_at"):
        run.pop(moving, None)
    return rows, run


def _both(tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Import ``source`` column-wise and row-wise; the stored rows and manifests are equal."""
    assert plan_columns(source, source.suffix[1:], "x", None, source.stem) is not None
    with open_store(tmp_path / "fast.sqlite") as store:
        import_results(store, source, run_id="r")
    with monkeypatch.context() as m:
        m.setattr(_import_fast, "plan_columns", lambda *a, **k: None)
        with open_store(tmp_path / "slow.sqlite") as store:
            import_results(store, source, run_id="r")
    fast, slow = _rows(tmp_path / "fast.sqlite", "r"), _rows(tmp_path / "slow.sqlite", "r")
    assert fast[0] == slow[0]
    assert fast[1] == slow[1]


CSV_CASES = {
    "cells": "cell,episode,repeat,outcome,steps\na=2,0,0,success,5\na=1,0,1,timeout,9\n"
             "a=1,0,0,failure,7\na=10,3,0,error,1\n",
    "slices": "slice.z,slice.a,success\nx,1,1\ny,1,0\nx,2,1\nx,1,true\ny, 1,0\n",
    "plain": "success\n1\n0\n1\n",
    "seeded": "episode,success,condition_seed,policy\n1,1,77,pi's\n0,0,5,pi's\n",
}


@pytest.mark.parametrize("name", sorted(CSV_CASES))
def test_csv_rows_equal_row_wise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    source = tmp_path / f"{name}.csv"
    source.write_text(CSV_CASES[name])
    _both(tmp_path, source, monkeypatch)


def test_jsonl_and_parquet_rows_equal_row_wise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [
        {"slice.mass": 0.2, "episode": i // 2, "repeat": i % 2, "success": i % 3 == 0,
         "steps": 10 + i}
        for i in range(12)
    ]
    jsonl = tmp_path / "j.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "j").mkdir()
    _both(tmp_path / "j", jsonl, monkeypatch)
    parquet = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet)
    (tmp_path / "p").mkdir()
    _both(tmp_path / "p", parquet, monkeypatch)


@pytest.mark.parametrize(
    "text",
    [
        "episode,success\n0,1\n0,0\n",  # a repeated key
        "episode,success\n0,1\n-1,0\n",  # a negative episode
        "episode,success\n,1\n",  # a missing episode
        "success,sucess\n1,1\n",  # a misspelt column
        "success,outcome\n1,failure\n",  # disagreeing columns
        "slice.a,success\nx,1\n,0\n",  # a row without the factor
    ],
)
def test_bad_files_are_declined_and_named_row_wise(tmp_path: Path, text: str) -> None:
    source = tmp_path / "bad.csv"
    source.write_text(text)
    assert plan_columns(source, "csv", "x", None, "bad") is None
    with open_store(tmp_path / "s.sqlite") as store, pytest.raises(ImportFormatError) as err:
        import_results(store, source)
    assert "line " in str(err.value)  # the row-wise message names the row


def test_many_blocks_store_what_one_block_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small blocks and statements (full ones and a tail) store the rows the row-wise path does."""
    from evalband.store import _sqlite

    monkeypatch.setattr(_sqlite, "_VALUES_ROWS", 3)
    monkeypatch.setattr(_sqlite, "_INSERT_BLOCK", 7)
    lines = ["slice.b,slice.a,episode,outcome,steps"]
    lines += [f"{'xy'[i % 2]},{i % 3},{40 - i},{('success', 'failure', 'timeout')[i % 3]},{i}"
              for i in range(41)]
    source = tmp_path / "blocks.csv"
    source.write_text("\n".join(lines) + "\n")
    seen: list[tuple[int, int]] = []
    with open_store(tmp_path / "progress.sqlite") as store:
        import_results(store, source, run_id="r", progress=lambda d, t: seen.append((d, t)))
    assert seen == [(min(41, k), 41) for k in range(7, 49, 7)]
    _both(tmp_path, source, monkeypatch)


_KILLED_IMPORT = r"""
import sys, time
from pathlib import Path
from evalband.store import _sqlite, import_results, open_store
_sqlite._INSERT_BLOCK = 10
def progress(done, total):
    if done >= 20:
        Path(sys.argv[3]).write_text("inside")
        time.sleep(60)
with open_store(sys.argv[1]) as store:
    import_results(store, sys.argv[2], run_id="r", progress=progress)
"""


def test_import_killed_mid_write_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    """kill -9 inside the import's transaction: no run, no episode; importing again works."""
    import os
    import signal
    import subprocess
    import sys
    import time

    source = tmp_path / "r.csv"
    source.write_text("episode,success\n" + "".join(f"{i},{i % 2}\n" for i in range(50)))
    store_path, marker = tmp_path / "s.sqlite", tmp_path / "inside"
    with open_store(store_path):
        pass
    child = subprocess.Popen([sys.executable, "-c", _KILLED_IMPORT, str(store_path),
                              str(source), str(marker)], env={**os.environ})
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the import never reached its second block"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with open_store(store_path) as store:
        assert store.get_run("r") is None
        assert store.conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == 0
        import_results(store, source, run_id="r")
        assert store.count_episodes("r") == 50
