"""Recorded comparisons in the run store, the read-only store, and who records comparisons."""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main
from evalband.errors import InvalidInputError, RunNotFoundError, StoreError
from evalband.run import run_panel
from evalband.store import RunStore, open_store
from evalband.store._bundle import export_bundle
from evalband.store._manifest import RunManifest
from evalband.store._schema import SCHEMA_VERSION
from testkit import coin_panel


def manifest(run_id: str) -> RunManifest:
    return RunManifest(
        run_id=run_id, panel_name="demo", panel_yaml="name: demo\n", panel_fingerprint="fp",
        policy="expert", policy_hash=None, backend="serial", workers=1, host="lab",
        git_sha=None, versions={}, command=None, started_at="2025-01-01T00:00:00Z",
        finished_at=None, status="running",
    )


@pytest.fixture
def three(store: RunStore) -> RunStore:
    for rid in ("a", "b", "c"):
        store.create_run(manifest(rid))
    return store


def raw_rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT * FROM comparisons ORDER BY rowid").fetchall()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- record_comparison / comparisons ---------------------------------------------------------


def test_record_is_idempotent_and_keeps_the_first_row(three: RunStore) -> None:
    first = three.record_comparison(["a", "b"])
    rows_before = raw_rows(three.path)
    assert three.record_comparison(("a", "b")) == first
    assert three.record_comparison(["a", "b"], {}) == first
    assert raw_rows(three.path) == rows_before
    assert len(rows_before) == 1
    assert first.startswith("cmp-") and len(first) == len("cmp-") + 12


def test_order_and_options_make_different_comparisons(three: RunStore) -> None:
    ids = {
        three.record_comparison(["a", "b"]),
        three.record_comparison(["b", "a"]),
        three.record_comparison(["a", "b", "c"]),
        three.record_comparison(["a", "b"], {"confidence": 0.9}),
    }
    assert len(ids) == 4
    # options are compared as data, not as text: key order does not matter
    x = three.record_comparison(["a", "c"], {"confidence": 0.9, "allow_panel_mismatch": True})
    y = three.record_comparison(["a", "c"], {"allow_panel_mismatch": True, "confidence": 0.9})
    assert x == y
    assert len(three.comparisons()) == 5


def test_comparisons_round_trip_newest_first(three: RunStore) -> None:
    older = three.record_comparison(["a", "b"], {"confidence": 0.9})
    newer = three.record_comparison(["c", "a", "b"])
    listed = three.comparisons()
    assert [c["comparison_id"] for c in listed] == [newer, older]
    assert listed[0]["run_ids"] == ["c", "a", "b"]
    assert listed[1]["options"] == {"confidence": 0.9}
    assert listed[0]["options"] == {}
    assert set(listed[0]) == {"comparison_id", "run_ids", "options", "created_at", "has_result",
                              "current"}
    assert listed[0]["has_result"] is False and listed[0]["current"] is False
    assert three.get_comparison(older) == listed[1]
    assert three.get_comparison("cmp-000000000000") is None


@pytest.mark.parametrize(
    "run_ids",
    [["a"], [], "ab", ["a", ""], ["a", 3]],
    ids=["one", "none", "string", "empty-id", "not-a-string"],
)
def test_bad_run_ids_are_refused(three: RunStore, run_ids: Any) -> None:
    with pytest.raises(InvalidInputError, match="run id"):
        three.record_comparison(run_ids)
    assert three.comparisons() == []


def test_unknown_run_is_refused_and_nothing_recorded(three: RunStore) -> None:
    with pytest.raises(RunNotFoundError, match="'zz'"):
        three.record_comparison(["a", "zz"])
    assert three.comparisons() == []


@pytest.mark.parametrize(
    "options", [["confidence"], {"x": math.nan}, {"x": object()}], ids=["list", "nan", "object"]
)
def test_bad_options_are_refused(three: RunStore, options: Any) -> None:
    with pytest.raises(StoreError, match="options"):
        three.record_comparison(["a", "b"], options)
    assert three.comparisons() == []


def test_concurrent_recording_of_one_comparison_stores_one_row(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path) as st:
        for rid in ("a", "b"):
            st.create_run(manifest(rid))
    ids: list[str] = []

    def record() -> None:
        with open_store(path) as st:  # one connection per thread, as separate processes
            ids.append(st.record_comparison(["a", "b"]))

    threads = [threading.Thread(target=record) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and len(ids) == 6
    assert len(raw_rows(path)) == 1


def test_a_store_without_the_table_reads_empty_and_records(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with open_store(path) as st:
        st.create_run(manifest("a"))
        st.create_run(manifest("b"))
    with sqlite3.connect(path) as conn:  # a schema-1 store made before the table existed
        conn.execute("DROP TABLE comparisons")
        conn.execute("PRAGMA user_version = 1")
    with open_store(path, read_only=True) as st:  # read as it is: no comparisons, no write
        assert st.comparisons() == [] and st.schema_version == 1
    with open_store(path) as st:  # opened to write: migrated to the current schema
        assert st.schema_version == SCHEMA_VERSION
        assert st.comparisons() == []
        assert st.get_comparison("cmp-000000000000") is None
        cid = st.record_comparison(["a", "b"])
        assert [c["comparison_id"] for c in st.comparisons()] == [cid]


def test_a_new_store_has_the_table(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    open_store(path).close()
    with sqlite3.connect(path) as conn:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(comparisons)")]
    assert cols == ["comparison_id", "run_ids", "options", "created_at", "result",
                    "episode_counts", "attempt_totals", "computed_at"]


# -- the read-only store ---------------------------------------------------------------------


def test_read_only_store_reads_and_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path) as st:
        st.create_run(manifest("a"))
        st.create_run(manifest("b"))
        cid = st.record_comparison(["a", "b"])
    before = file_digest(path)
    with RunStore(path, read_only=True) as ro:
        assert ro.read_only
        assert [m.run_id for m in ro.list_runs()] == ["b", "a"]
        assert ro.get_comparison(cid) is not None
        with pytest.raises(StoreError, match="read-only"):
            ro.record_comparison(["a", "b"], {"confidence": 0.5})
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ro.create_run(manifest("c"))
    assert file_digest(path) == before


def test_read_only_store_refuses_a_missing_file_without_creating_it(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "s.sqlite"
    with pytest.raises(StoreError, match="no run store at"):
        RunStore(path, read_only=True)
    assert not path.parent.exists()


def test_read_only_store_refuses_a_foreign_database(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    before = file_digest(path)
    with pytest.raises(StoreError, match="not an evalband store"):
        RunStore(path, read_only=True)
    assert file_digest(path) == before


def test_read_only_reader_sees_a_concurrent_writer_without_blocking_it(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    panel = coin_panel(episodes=3)
    with open_store(path) as writer:
        run_panel(panel, "evalband.policies._builtin:zero_action", writer, run_id="r")
        with RunStore(path, read_only=True) as reader:
            assert reader.count_episodes("r") == 6
            writer.update_run("r", status="interrupted")  # a write while the reader is open
            assert reader.require_run("r").status == "interrupted"


# -- who records comparisons -----------------------------------------------------------------


def test_compare_command_records_store_runs(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    panel = coin_panel(episodes=4)
    with open_store(path) as st:
        for rid in ("base", "cand"):
            run_panel(panel, "evalband.policies._builtin:zero_action", st, run_id=rid)
    code = main(["compare", "base", "cand", "--store", str(path), "--json"])
    assert code in (0, 3, 4, 5)
    assert main(["compare", "base", "cand", "--store", str(path), "--json", "-c", "0.9"]) == code
    with open_store(path) as st:
        listed = st.comparisons()
        counts = {rid: st.count_episodes(rid) for rid in ("base", "cand")}
    assert counts["base"] > 0
    assert [(c["run_ids"], c["options"]) for c in listed] == [  # with the episodes seen
        (["base", "cand"], {"confidence": 0.9, "episode_counts": counts}),
        (["base", "cand"], {"episode_counts": counts}),
    ]


def test_compare_command_does_not_record_bundles(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    panel = coin_panel(episodes=4)
    with open_store(path) as st:
        for rid in ("base", "cand"):
            run_panel(panel, "evalband.policies._builtin:zero_action", st, run_id=rid)
        bundle = export_bundle(st, "base", tmp_path / "bundle")
    assert main(["compare", str(bundle), "cand", "--store", str(path), "--json"]) in (0, 3, 4, 5)
    with open_store(path) as st:
        assert st.comparisons() == []


def test_refused_comparison_is_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path) as st:
        run_panel(coin_panel(episodes=4), "evalband.policies._builtin:zero_action", st,
                  run_id="base")
        run_panel(coin_panel(episodes=4, seed=9), "evalband.policies._builtin:zero_action",
                  st, run_id="other")
    assert main(["compare", "base", "other", "--store", str(path), "--json"]) == 5
    with open_store(path) as st:
        assert st.comparisons() == []


def test_labs_record_their_comparison(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.sqlite"
    assert main(["lab", "hidden-regression", "--episodes", "5", "--store", str(path),
                 "--json"]) in (0, 3, 4, 5)  # compare's exit status for the verdict
    assert main(["lab", "reach1d", "--store", str(path), "--json"]) == 0
    reach = json.loads(capsys.readouterr().out.split("\n}\n", 1)[1])
    with open_store(path) as st:
        listed = st.comparisons()
    assert [c["run_ids"] for c in listed] == [
        [reach["runs"]["reach1d:baseline"]["run_id"], reach["runs"]["reach1d:damped"]["run_id"]],
        ["hidden-regression-5-s4-baseline", "hidden-regression-5-s4-candidate"],
    ]
    # running a lab again records nothing new
    assert main(["lab", "hidden-regression", "--episodes", "5", "--store", str(path),
                 "--json"]) in (0, 3, 4, 5)  # compare's exit status for the verdict
    with open_store(path) as st:
        assert len(st.comparisons()) == 2
