"""Tests for the SQLite run store and the run manifest."""

from __future__ import annotations

import math
import os
import platform
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalband.episode import EPISODE_FIELDS, EpisodeRecord, Outcome
from evalband.errors import InvalidInputError, RunNotFoundError, StoreError
from evalband.store import RunStore, open_store
from evalband.store._manifest import RunManifest, environment_versions, git_sha
from evalband.store._sqlite import DEFAULT_STORE_PATH

SRC = Path(__file__).resolve().parents[2] / "src"


def manifest(run_id: str = "r1", **changes: Any) -> RunManifest:
    base = RunManifest(
        run_id=run_id,
        panel_name="demo",
        panel_yaml="name: demo\nseed: 7\n",
        panel_fingerprint="fp",
        policy="expert",
        policy_hash=None,
        backend="serial",
        workers=1,
        host="lab",
        git_sha=None,
        versions={"evalband": "0.1.0"},
        command="evalband run demo",
        started_at="2025-01-01T00:00:00Z",
        finished_at=None,
        status="running",
    )
    return base.replace(**changes)


def rec(
    episode: int = 0,
    *,
    cell: str = "mass=light",
    repeat: int = 0,
    run_id: str = "r1",
    outcome: str = "success",
    **kw: Any,
) -> EpisodeRecord:
    """A tiny EpisodeRecord builder; slices default to the factors encoded in the cell."""
    slices = dict(part.split("=", 1) for part in cell.split(",") if "=" in part)
    terminated = outcome in ("success", "failure")
    fields: dict[str, Any] = {
        "run_id": run_id,
        "policy": "expert",
        "panel_fingerprint": "fp",
        "cell": cell,
        "slices": slices,
        "episode": episode,
        "repeat": repeat,
        "condition_seed": 1000 + episode,
        "outcome": outcome,
        "terminated": terminated,
        "truncated": not terminated,
        "steps": 10 + episode,
    }
    fields.update(kw)
    return EpisodeRecord(**fields)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with open_store(tmp_path / "runs" / "evalband.sqlite") as s:
        s.create_run(manifest())
        yield s


# -- opening, pragmas, refusals ---------------------------------------------------------------


def test_wal_mode_schema_version_and_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "store.sqlite"
    with open_store(path):
        pass
    assert path.is_file()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"runs", "episodes"} <= tables
        episode_cols = {r[1] for r in conn.execute("PRAGMA table_info(episodes)")}
        assert episode_cols == set(EPISODE_FIELDS)
    finally:
        conn.close()


def test_store_connection_uses_full_sync_and_foreign_keys(store: RunStore) -> None:
    assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopen_existing_store_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path) as s:
        s.create_run(manifest())
        s.add_episode(rec(0))
    with open_store(path) as s:
        assert s.count_episodes("r1") == 1
        assert s.require_run("r1") == manifest()


def test_default_store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store() as s:
        assert s.path == DEFAULT_STORE_PATH
    assert (tmp_path / "evalband-runs" / "evalband.sqlite").is_file()


@pytest.mark.parametrize(
    "content",
    [b"name: not a database\n", b"x", b"SQLite format 2\x00" + b"\x00" * 200, bytes(range(256))],
)
def test_non_database_file_refused_and_unchanged(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "panel.yaml"
    path.write_bytes(content)
    with pytest.raises(StoreError) as info:
        open_store(path)
    message = str(info.value)
    assert str(path) in message and "not an evalband store" in message
    assert "\n" not in message
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["panel.yaml"]


def test_foreign_sqlite_database_refused_and_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('ada')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not an evalband store") as info:
        RunStore(path)
    assert str(path) in str(info.value) and "customers" in str(info.value)
    assert path.read_bytes() == before
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        conn.close()


def test_foreign_database_named_like_ours_is_refused(tmp_path: Path) -> None:
    # Same table names, but not created by evalband (no application id).
    path = tmp_path / "fake.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (run_id TEXT)")
    conn.execute("CREATE TABLE episodes (run_id TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not an evalband store"):
        RunStore(path)
    assert path.read_bytes() == before


def test_newer_schema_version_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        open_store(path)


def test_directory_path_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="directory"):
        open_store(tmp_path)


def test_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.touch()
    with open_store(path) as s:
        s.create_run(manifest())
        assert [m.run_id for m in s.list_runs()] == ["r1"]


def test_closed_store_refuses_use_and_close_is_idempotent(tmp_path: Path) -> None:
    s = open_store(tmp_path / "s.sqlite")
    s.close()
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.list_runs()


# -- runs --------------------------------------------------------------------------------------


def test_runs_create_get_list_update(store: RunStore) -> None:
    store.create_run(manifest("r0", started_at="2024-12-31T00:00:00Z"))
    store.create_run(manifest("r2", started_at="2025-02-01T00:00:00Z", extra={"note": [1, 2]}))
    assert [m.run_id for m in store.list_runs()] == ["r2", "r1", "r0"]
    assert store.get_run("nope") is None
    assert store.get_run("r2") == manifest(
        "r2", started_at="2025-02-01T00:00:00Z", extra={"note": [1, 2]}
    )
    updated = store.update_run("r1", status="finished", finished_at="2025-01-01T01:00:00Z")
    assert store.require_run("r1") == updated
    assert updated == manifest(status="finished", finished_at="2025-01-01T01:00:00Z")


def test_create_run_duplicate_refused(store: RunStore) -> None:
    with pytest.raises(StoreError, match="r1.*already exists"):
        store.create_run(manifest(policy="other"))
    assert store.require_run("r1").policy == "expert"


def test_update_run_refusals(store: RunStore) -> None:
    with pytest.raises(StoreError, match="colour"):
        store.update_run("r1", colour="red")
    with pytest.raises(StoreError, match="run id"):
        store.update_run("r1", run_id="r9")
    with pytest.raises(RunNotFoundError):
        store.update_run("r9", status="finished")
    with pytest.raises(InvalidInputError, match="status"):
        store.update_run("r1", status="done")
    assert store.require_run("r1") == manifest()


def test_require_run_lists_five_most_recent(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.sqlite") as s:
        with pytest.raises(RunNotFoundError, match="no runs"):
            s.require_run("x")
        for day in range(1, 8):
            s.create_run(manifest(f"run-{day}", started_at=f"2025-01-0{day}T00:00:00Z"))
        with pytest.raises(RunNotFoundError) as info:
            s.require_run("run-99")
    message = str(info.value)
    assert "run-99" in message
    for day in range(3, 8):
        assert f"run-{day}" in message
    assert "run-1," not in message and "run-2," not in message
    assert not message.endswith("run-1") and not message.endswith("run-2")


def test_manifest_dict_round_trip_and_refusals() -> None:
    m = manifest(extra={"a": {"b": [1, 2.5, None]}}, errors_as_failures=True, n_planned=40)
    assert RunManifest.from_dict(m.as_dict()) == m
    with pytest.raises(StoreError) as info:
        RunManifest.from_dict({**m.as_dict(), "colour": "red", "size": 3})
    assert "colour" in str(info.value) and "size" in str(info.value)
    data = m.as_dict()
    del data["host"]
    with pytest.raises(StoreError, match="host"):
        RunManifest.from_dict(data)
    with pytest.raises(StoreError, match="flavour"):
        m.replace(flavour="x")
    with pytest.raises(InvalidInputError, match="source"):
        manifest(source="magic")
    with pytest.raises(InvalidInputError, match="workers"):
        manifest(workers=-1)


def test_environment_versions_match_installed_modules() -> None:
    versions = environment_versions()
    assert versions["python"] == platform.python_version()
    assert versions["numpy"] == np.__version__
    assert versions["pandas"] == pd.__version__
    assert "evalband" in versions
    assert all(isinstance(v, str) and v for v in versions.values())


def test_git_sha_reads_head_of_a_real_repo(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    assert git_sha(tmp_path) is None  # not a repository
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True, env=env)
    assert git_sha(tmp_path) is None  # no commit yet
    (tmp_path / "f.txt").write_text("x")
    subprocess.run(["git", "add", "f.txt"], cwd=tmp_path, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "c"], cwd=tmp_path, check=True, env=env)
    # Oracle: the ref file git wrote, read without git.
    head = (tmp_path / ".git" / "HEAD").read_text().strip()
    assert head.startswith("ref: ")
    ref = tmp_path / ".git" / head.removeprefix("ref: ")
    assert git_sha(tmp_path) == ref.read_text().strip()


def test_git_sha_without_git_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert git_sha(tmp_path) is None


# -- episodes ----------------------------------------------------------------------------------


def test_full_record_round_trips_exactly(store: RunStore) -> None:
    full = rec(
        3,
        cell="mass=heavy,start=far",
        repeat=2,
        condition_seed=2**64 - 1,  # beyond int64: must not be rounded
        sim_time_s=1.25,
        time_to_success_s=0.75,
        score=2,
        assisted=True,
        interventions=3,
        latency_ms_p50=0.1,
        latency_ms_p95=1 / 3,
        latency_ms_max=5e-324,
        env_ms=12.5,
        wall_s=0.5,
        started_at="2025-01-01T00:00:01.123456Z",
        attempts=2,
        extra={"video": "ep3.mp4", "nested": {"k": [1, 2, None, True]}, "ü": "☃"},
    )
    err = rec(4, outcome="error", error="RuntimeError: boom\nline 2", condition_seed=-5)
    timeout = rec(5, outcome="timeout", slices={})
    store.add_episodes([timeout, full, err])
    got = store.episode_records("r1")
    assert got == sorted([full, err, timeout], key=lambda r: r.key)
    by_key = {r.key: r for r in got}
    assert type(by_key[full.key].condition_seed) is int
    assert by_key[full.key].outcome is Outcome.SUCCESS
    assert by_key[full.key].assisted is True and by_key[err.key].assisted is False
    assert by_key[err.key].score is None and by_key[err.key].sim_time_s is None


def test_records_read_back_own_their_dicts_and_leave_gc_as_found(store: RunStore) -> None:
    import gc

    store.add_episodes([rec(i, extra={"batched": True}) for i in range(3)])
    first, second, _ = store.episode_records("r1")
    assert first.slices == second.slices and first.slices is not second.slices
    first.extra["mutated"] = 1  # a caller's change to one record never leaks into another
    assert second.extra == {"batched": True}
    assert gc.isenabled()
    gc.disable()
    try:
        store.episode_records("r1")
        assert not gc.isenabled()  # the reader switched the collector back on only if it was on
    finally:
        gc.enable()


def test_a_row_with_an_unknown_outcome_is_refused_by_name(store: RunStore) -> None:
    store.add_episodes([rec(0), rec(1)])
    with sqlite3.connect(store.path) as raw:  # a row no evalband wrote
        raw.execute("UPDATE episodes SET outcome = 'exploded' WHERE episode = 1")
    with pytest.raises(InvalidInputError, match="outcome must be one of .*'exploded'"):
        store.episode_records("r1")


def test_nan_float_is_stored_as_missing(store: RunStore) -> None:
    store.add_episode(rec(0, latency_ms_p50=math.nan))
    assert store.episode_records("r1")[0].latency_ms_p50 is None


def test_unserialisable_extra_refused(store: RunStore) -> None:
    with pytest.raises(StoreError, match="extra"):
        store.add_episode(rec(0, extra={"x": object()}))
    assert store.count_episodes("r1") == 0


def test_numpy_scalars_are_accepted(store: RunStore) -> None:
    store.add_episode(
        rec(0, condition_seed=np.uint64(2**63 + 5), score=np.int64(1), wall_s=np.float32(0.5))
    )
    got = store.episode_records("r1")[0]
    assert got.condition_seed == 2**63 + 5 and got.score == 1 and got.wall_s == 0.5


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_opt_float = st.none() | st.floats(min_value=0, allow_nan=False, allow_infinity=False)


@st.composite
def _records(draw: st.DrawFn) -> list[EpisodeRecord]:
    n = draw(st.integers(0, 6))
    keys = draw(
        st.lists(
            st.tuples(_text, st.integers(0, 2**31), st.integers(0, 3)),
            min_size=n,
            max_size=n,
            unique=True,
        )
    )
    out = []
    for cell, episode, repeat in keys:
        outcome = draw(st.sampled_from(list(Outcome)))
        success = outcome is Outcome.SUCCESS
        out.append(
            EpisodeRecord(
                run_id="r1",
                policy=draw(_text),
                panel_fingerprint=draw(_text),
                cell=cell,
                slices=draw(st.dictionaries(_text, _text, max_size=3)),
                episode=episode,
                repeat=repeat,
                condition_seed=draw(st.integers(-(2**70), 2**70)),
                outcome=outcome,
                terminated=True if success else draw(st.booleans()),
                truncated=draw(st.booleans()),
                steps=draw(st.integers(0, 10**6)),
                sim_time_s=draw(_opt_float),
                time_to_success_s=draw(_opt_float) if success else None,
                score=draw(st.none() | st.integers(-(2**62), 2**62)),
                assisted=draw(st.booleans()),
                interventions=draw(st.integers(0, 9)),
                latency_ms_p50=draw(st.none() | st.floats(allow_nan=False)),
                wall_s=draw(_opt_float),
                started_at=draw(st.none() | _text),
                error=draw(st.none() | _text),
                attempts=draw(st.integers(0, 5)),
                extra=draw(st.dictionaries(_text, st.none() | st.integers() | _text, max_size=3)),
            )
        )
    return out


@settings(max_examples=40, deadline=None)
@given(records=_records())
def test_property_any_records_round_trip(records: list[EpisodeRecord]) -> None:
    with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "s.sqlite") as s:
        s.create_run(manifest())
        s.add_episodes(records)
        assert s.episode_records("r1") == sorted(records, key=lambda r: r.key)
        assert s.done_keys("r1") == {r.key for r in records}
        assert s.count_episodes("r1") == len(records)


def test_duplicate_episode_refused_naming_key(store: RunStore) -> None:
    store.add_episode(rec(7, cell="mass=light", repeat=1))
    with pytest.raises(StoreError) as info:
        store.add_episode(rec(7, cell="mass=light", repeat=1, outcome="failure"))
    message = str(info.value)
    assert "'mass=light'" in message and "episode=7" in message and "repeat=1" in message
    assert "r1" in message
    assert store.count_episodes("r1") == 1
    assert store.episode_records("r1")[0].outcome is Outcome.SUCCESS
    store.add_episode(rec(7, cell="mass=light", repeat=2))  # another repeat is fine
    assert store.count_episodes("r1") == 2


def test_same_key_in_another_run_is_fine(store: RunStore) -> None:
    store.create_run(manifest("r2"))
    store.add_episode(rec(0))
    store.add_episode(rec(0, run_id="r2"))
    assert store.count_episodes("r1") == store.count_episodes("r2") == 1


def test_add_episodes_is_all_or_nothing(store: RunStore) -> None:
    store.add_episode(rec(2))
    batch = [rec(0), rec(1), rec(2), rec(3)]
    with pytest.raises(StoreError, match="episode=2"):
        store.add_episodes(batch)
    assert store.done_keys("r1") == {("mass=light", 2, 0)}
    store.add_episodes([rec(0), rec(1)])
    assert store.count_episodes("r1") == 3


def test_episode_of_unknown_run_refused(store: RunStore) -> None:
    with pytest.raises(StoreError, match="create the run"):
        store.add_episode(rec(0, run_id="ghost"))
    with pytest.raises(RunNotFoundError):
        store.episode_records("ghost")
    with pytest.raises(RunNotFoundError):
        store.done_keys("ghost")


def test_counts_and_keys_match_a_counter(store: RunStore) -> None:
    rng = random.Random(3)
    outcomes = [rng.choice(["success", "failure", "timeout", "error"]) for _ in range(60)]
    records = [
        rec(i // 2, cell=f"mass={'light' if i % 2 else 'heavy'}", outcome=o)
        for i, o in enumerate(outcomes)
    ]
    rng.shuffle(records)
    for r in records:
        store.add_episode(r)
    expected = Counter(outcomes)
    counts = store.outcome_counts("r1")
    assert counts == {o.value: expected.get(o.value, 0) for o in Outcome}
    assert list(counts) == [o.value for o in Outcome]
    assert store.count_episodes("r1") == 60
    assert store.done_keys("r1") == {r.key for r in records}
    assert [r.key for r in store.episode_records("r1")] == sorted(r.key for r in records)


def test_dataframe_has_one_column_per_slice_factor(store: RunStore) -> None:
    records = [
        rec(1, cell="mass=heavy,start=far", outcome="failure"),
        rec(0, cell="mass=heavy,start=far", score=1),
        rec(0, cell="mass=light,start=near", outcome="timeout"),
        rec(0, cell="policy=odd", extra={"k": 1}),  # factor colliding with a record field
    ]
    store.add_episodes(records)
    df = store.episodes("r1")
    expected_order = sorted(records, key=lambda r: r.key)
    assert len(df) == 4
    assert "slices" not in df.columns
    assert {"mass", "start", "slice_policy"} <= set(df.columns)
    assert set(df.columns) == (set(EPISODE_FIELDS) - {"slices"}) | {"mass", "start", "slice_policy"}
    assert list(df["cell"]) == [r.cell for r in expected_order]
    assert list(df["mass"]) == [r.slices.get("mass") for r in expected_order]
    assert list(df["slice_policy"]) == [r.slices.get("policy") for r in expected_order]
    assert list(df["policy"]) == ["expert"] * 4
    assert list(df["outcome"]) == [r.outcome.value for r in expected_order]
    assert all(isinstance(v, str) for v in df["outcome"])
    assert df["episode"].dtype == np.int64 and df["terminated"].dtype == np.bool_
    assert df["sim_time_s"].dtype == np.float64 and df["sim_time_s"].isna().all()
    assert df["score"].isna().sum() == 3 and df["score"].dropna().tolist() == [1]
    assert df["extra"].tolist() == [r.extra for r in expected_order]
    assert df.index.tolist() == [0, 1, 2, 3]


def test_empty_run_gives_empty_frame_with_columns(store: RunStore) -> None:
    df = store.episodes("r1")
    assert df.empty
    assert list(df.columns) == [f for f in EPISODE_FIELDS if f != "slices"]


# -- concurrency and durability ----------------------------------------------------------------


def test_commit_visible_to_a_second_connection_immediately(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path) as writer, open_store(path) as reader:
        writer.create_run(manifest())
        assert reader.count_episodes("r1") == 0  # reader holds an open connection
        writer.add_episode(rec(0))
        assert reader.count_episodes("r1") == 1
        assert reader.episode_records("r1") == [rec(0)]
        raw = sqlite3.connect(path)
        try:
            assert raw.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == 1
        finally:
            raw.close()


def test_store_usable_from_another_thread(store: RunStore) -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(20):
                store.add_episode(rec(i))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert not errors
    assert store.count_episodes("r1") == 20


_WRITER = textwrap.dedent(
    """
    import sys, time
    from evalband.episode import EpisodeRecord
    from evalband.store import open_store

    store = open_store(sys.argv[1])
    for i in range(int(sys.argv[2])):
        store.add_episode(EpisodeRecord(
            run_id="r1", policy="expert", panel_fingerprint="fp", cell="c", episode=i,
            repeat=0, condition_seed=1000 + i, outcome="success" if i % 3 else "failure",
            terminated=True, truncated=False, steps=i, extra={"i": i}))
        print(i, flush=True)
        time.sleep(0.002)
    """
)


def test_sigkill_mid_run_leaves_exactly_the_committed_episodes(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path) as s:
        s.create_run(manifest())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), "100000"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    last = -1
    try:
        while last < 40:
            line = proc.stdout.readline()
            assert line, "writer exited early"
            last = int(line)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with open_store(path) as s:
        assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        n = s.count_episodes("r1")
        # Every episode reported as committed is there; nothing beyond a contiguous prefix.
        assert last + 1 <= n < 100000
        records = s.episode_records("r1")
        assert [r.episode for r in records] == list(range(n))
        for r in records:
            assert r.condition_seed == 1000 + r.episode and r.extra == {"i": r.episode}
            assert r.outcome is (Outcome.SUCCESS if r.episode % 3 else Outcome.FAILURE)
        # The store stays writable: a resume continues where the run stopped.
        s.add_episode(rec(n, cell="c", outcome="failure"))
        assert s.count_episodes("r1") == n + 1


def test_reproducible_writes_relax_then_restore_sync(tmp_path) -> None:
    from evalband.store import open_store

    with open_store(tmp_path / "s.sqlite") as store:
        level = lambda: store.conn.execute("PRAGMA synchronous").fetchone()[0]  # noqa: E731
        assert level() == 2  # FULL
        with store.reproducible_writes():
            assert level() == 1  # NORMAL
        assert level() == 2
