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
