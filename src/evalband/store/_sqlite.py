"""The run store: one SQLite file (WAL mode) holding run manifests and every episode.

Each episode is one ``INSERT`` committed on its own with ``synchronous=FULL``, so an episode
is on disk when :meth:`RunStore.add_episode` returns (the runner's re-playable simulated
episodes commit with ``synchronous=NORMAL``, see :meth:`RunStore.reproducible_writes`): a
driver killed mid-run leaves a readable store holding exactly the committed episodes, and a
resume skips them (:meth:`RunStore.done_keys`). WAL mode lets readers (a viewer, a report)
read while the runner writes.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import math
import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from evalband._util.ids import check_run_id, shown
from evalband.episode import (
    EPISODE_FIELDS,
    EpisodeRecord,
    Outcome,
    parse_outcome,
    record_values,
)
from evalband.errors import EvalbandError, RunNotFoundError, StoreError
from evalband.store._manifest import MANIFEST_FIELDS, RunManifest
from evalband.store._schema import OLDEST_READABLE, SCHEMA_VERSION, create_tables, migrate

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from evalband.store._comparisons import StoredComparison

__all__ = ["RunStore", "open_store", "DEFAULT_STORE_PATH", "SCHEMA_VERSION", "APPLICATION_ID",
           "CHECK_BYTES", "damage_line", "is_damage", "read_failure_line"]

DEFAULT_STORE_PATH = Path("evalband-runs") / "evalband.sqlite"
"""Where :func:`open_store` puts the store when no path is given (relative to the cwd)."""

APPLICATION_ID = 0x4556424E  # "EVBN"
"""``PRAGMA application_id`` marking a SQLite file as an evalband store."""

_SQLITE_MAGIC = b"SQLite format 3\x00"

CHECK_BYTES = 256 * 1024**2
"""A store opened for writing is checked whole (``PRAGMA quick_check``, ~0.2 s for 40 MB on
this project's machines) when it is at most this big; a larger one when a read fails."""

_LAST_PATH: list[Path] = []  # the store opened last: what a damage line names


def is_damage(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying the file is damaged (malformed, not a database).

    >>> is_damage(sqlite3.DatabaseError("database disk image is malformed"))
    True
    >>> is_damage(sqlite3.OperationalError("database is locked"))
    False
    """
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and any(
        word in text for word in ("malformed", "not a database", "corrupt", "disk i/o error"))


def undecodable_as_damage(exc: BaseException) -> sqlite3.DatabaseError:
    r"""SQLite's error as itself; text from the file that no longer decodes as damage.

    A damaged schema page can make SQLite's own error message undecodable, so Python's
    sqlite3 raises :class:`UnicodeDecodeError` instead of the malformed-database error.

    >>> str(undecodable_as_damage(UnicodeDecodeError("utf-8", b"\xb1", 0, 1, "bad")))[:26]
    'database disk image is mal'
    """
    if isinstance(exc, sqlite3.DatabaseError):
        return exc
    return sqlite3.DatabaseError("database disk image is malformed (text in it does not "
                                 "decode as UTF-8)")


def read_failure_line(exc: BaseException) -> str:
    """The one line for a SQLite error met while reading the store opened last.

    Any read failure checks the whole file (``PRAGMA quick_check`` on a read-only
    connection): a damaged file is said to be damaged, whatever the failing read reported
    (a malformed page, text that no longer decodes); otherwise SQLite's first line.
    """
    path = _LAST_PATH[-1] if _LAST_PATH else None
    if is_damage(exc) or path is None:
        return damage_line(exc, path) if is_damage(exc) else \
            f"the store could not be read or written (SQLite: {str(exc).splitlines()[0]})"
    try:
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10.0)) as conn:
            found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
    except sqlite3.DatabaseError as again:
        found = [str(again)]
    if found != ["ok"]:
        return damage_line(sqlite3.DatabaseError(_first_problem(found)), path)
    return f"the store {path} could not be read or written (SQLite: {str(exc).splitlines()[0]})"


def _first_problem(found: list[str]) -> str:
    """The first problem ``quick_check`` names (past its ``*** in database main ***``).

    >>> _first_problem(["*** in database main ***", "Page 5: btreeInitPage() returns error"])
    'Page 5: btreeInitPage() returns error'
    """
    lines = [line for text in found for line in text.splitlines()]
    return next((line for line in lines if not line.startswith("***")), lines[0])


def damage_line(exc: BaseException, path: str | Path | None = None) -> str:
    """The one line that says a store is damaged, and what to do.

    >>> damage_line(sqlite3.DatabaseError("database disk image is malformed"), "s.sqlite")[:38]
    'the store s.sqlite is damaged (SQLite:'
    """
    where = path if path is not None else (_LAST_PATH[-1] if _LAST_PATH else "file")
    return (f"the store {where} is damaged (SQLite: {str(exc).splitlines()[0]}); restore it "
            "from a copy (or `sqlite3 FILE .recover`); nothing was written")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_INT_FIELDS = ("episode", "repeat", "steps", "interventions", "attempts")
_BOOL_FIELDS = ("terminated", "truncated", "assisted")
_FLOAT_FIELDS = (
    "sim_time_s",
    "time_to_success_s",
    "latency_ms_p50",
    "latency_ms_p95",
    "latency_ms_max",
    "env_ms",
    "wall_s",
)
_JSON_FIELDS = ("slices", "extra")
_TEXT_FIELDS = ("run_id", "policy", "panel_fingerprint", "cell", "outcome")
_NULLABLE_TEXT_FIELDS = ("started_at", "error")


def _episode_column_type(name: str) -> str:
    if name in _INT_FIELDS:
        return "INTEGER NOT NULL"
    if name in _BOOL_FIELDS:
        return f'INTEGER NOT NULL CHECK ("{name}" IN (0, 1))'
    if name in _FLOAT_FIELDS:
        return "REAL"
    if name == "score":
        return "INTEGER"
    if name == "condition_seed":
        # No declared type (BLOB affinity): int64 values stay INTEGER, larger seeds are
        # kept as exact decimal TEXT instead of being rounded to REAL.
        return "NOT NULL"
    if name in _JSON_FIELDS:
        return "TEXT NOT NULL"
    if name in _TEXT_FIELDS:
        return "TEXT NOT NULL"
    if name in _NULLABLE_TEXT_FIELDS:
        return "TEXT"
    raise AssertionError(f"episode field {name!r} has no column type")  # pragma: no cover


def _manifest_column_type(name: str) -> str:
    if name in ("workers", "n_planned"):
        return "INTEGER NOT NULL"
    if name == "step":
        return "INTEGER"
    if name == "errors_as_failures":
        return "INTEGER NOT NULL CHECK (errors_as_failures IN (0, 1))"
    if name in ("versions", "extra"):
        return "TEXT NOT NULL"
    if name in ("policy_hash", "git_sha", "command", "finished_at"):
        return "TEXT"
    return "TEXT NOT NULL"


def _schema() -> list[str]:
    run_cols = ",\n    ".join(
        f'"{n}" {_manifest_column_type(n)}' + (" PRIMARY KEY" if n == "run_id" else "")
        for n in MANIFEST_FIELDS
    )
    episode_cols = ",\n    ".join(f'"{n}" {_episode_column_type(n)}' for n in EPISODE_FIELDS)
    return [
        f"CREATE TABLE IF NOT EXISTS runs (\n    {run_cols}\n)",
        f"CREATE TABLE IF NOT EXISTS episodes (\n    {episode_cols},\n"
        '    PRIMARY KEY ("run_id", "cell", "episode", "repeat"),\n'
        '    FOREIGN KEY ("run_id") REFERENCES runs ("run_id") ON DELETE CASCADE\n)',
        'CREATE INDEX IF NOT EXISTS runs_started_at ON runs ("started_at")',
    ]


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


_INSERT_EPISODE = (
    f"INSERT INTO episodes ({_quoted(EPISODE_FIELDS)}) "
    f"VALUES ({', '.join('?' for _ in EPISODE_FIELDS)})"
)
_SELECT_EPISODES = (
    f"SELECT {_quoted(EPISODE_FIELDS)} FROM episodes WHERE run_id = ? "
    'ORDER BY "cell", "episode", "repeat"'
)
_INSERT_RUN = (
    f"INSERT INTO runs ({_quoted(MANIFEST_FIELDS)}) "
    f"VALUES ({', '.join('?' for _ in MANIFEST_FIELDS)})"
)
_SELECT_RUNS = f"SELECT {_quoted(MANIFEST_FIELDS)} FROM runs"


def _run_columns(conn: sqlite3.Connection) -> set[str]:
    return {str(r[1]) for r in conn.execute('PRAGMA table_info("runs")')}


def select_runs(conn: sqlite3.Connection) -> str:
    """``SELECT`` of every manifest field from ``runs``; a column an older file lacks reads NULL.

    A store opened read-only is never migrated: its ``runs`` may predate a field (``step``,
    schema 4), which then reads as ``NULL``, as the migration would have written it.

    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute('CREATE TABLE runs ("run_id" TEXT)')
    >>> 'NULL AS "step"' in select_runs(conn)
    True
    """
    present = _run_columns(conn)
    if all(name in present for name in MANIFEST_FIELDS):
        return _SELECT_RUNS
    parts = [f'"{n}"' if n in present else f'NULL AS "{n}"' for n in MANIFEST_FIELDS]
    return f"SELECT {', '.join(parts)} FROM runs"


def insert_run(conn: sqlite3.Connection, manifest: RunManifest) -> None:
    """Insert a run's row; inside a migration from an older schema, only the columns it has.

    (The schema-3 migration creates a session's runs before schema 4's ``step`` exists; a
    field whose column is missing must then be unset.)
    """
    present = _run_columns(conn)
    if all(name in present for name in MANIFEST_FIELDS):
        conn.execute(_INSERT_RUN, _manifest_row(manifest))
        return
    row = dict(zip(MANIFEST_FIELDS, _manifest_row(manifest), strict=True))
    names = [n for n in MANIFEST_FIELDS if n in present]
    dropped = [n for n in MANIFEST_FIELDS if n not in present and row[n] is not None]
    if dropped:
        raise StoreError(f"the runs table has no column for {', '.join(dropped)}; "
                         "open the store for writing to migrate it first")
    conn.execute(f"INSERT INTO runs ({_quoted(names)}) VALUES ({', '.join('?' for _ in names)})",
                 tuple(row[n] for n in names))


def _json_text(value: Any, what: str) -> str:
    try:
        return json.dumps(value, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} must be JSON-serialisable to be stored: {exc}") from None


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _seed_to_sql(value: Any) -> int | str:
    seed = int(value)
    return seed if _INT64_MIN <= seed <= _INT64_MAX else str(seed)


def _episode_row(record: EpisodeRecord) -> tuple[Any, ...]:
    """The record as a row tuple in ``EPISODE_FIELDS`` order."""
    return _row(record_values(record), _plain_json)


def _plain_json(value: Any, name: str) -> str:
    return _json_text(value, f"episode field {name!r}")


def _sql_literal(value: Any) -> str | None:
    """``value`` as an SQL literal (``None``: it must be bound, e.g. text with a NUL)."""
    if value is None:
        return "NULL"
    if type(value) is int:
        return str(value)
    if type(value) is str and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'"
    return None


_VALUES_ROWS = 200
"""Rows per multi-row ``INSERT`` of a column-wise import (bound parameters: rows x columns)."""
_INSERT_BLOCK = 65_600
"""Rows whose parameters are made at once (a multiple of :data:`_VALUES_ROWS`)."""


def _insert_values(names: Sequence[str], constants: dict[str, Any], rows: int) -> str:
    """An episode INSERT of ``rows`` rows of the bound ``names``; ``constants`` written in.

    >>> constants = {name: None for name in EPISODE_FIELDS if name not in ("cell", "episode")}
    >>> sql = _insert_values(["cell", "episode"], {**constants, "run_id": "r"}, 2)
    >>> sql.count("?"), "'r'" in sql
    (4, True)
    """
    bound = {name: f"column{i + 1}" for i, name in enumerate(names)}
    values = []
    for name in EPISODE_FIELDS:
        if name in bound:
            values.append(bound[name])
            continue
        if name not in constants:
            raise StoreError(f"episode field {name!r} has no value to store")
        literal = _sql_literal(constants[name])
        if literal is None:
            raise StoreError(f"episode field {name!r}: {constants[name]!r} is no SQL constant")
        values.append(literal)
    row = "(" + ", ".join("?" for _ in names) + ")"
    return (f"INSERT INTO episodes ({_quoted(EPISODE_FIELDS)}) SELECT {', '.join(values)} "
            f"FROM (VALUES {', '.join(row for _ in range(rows))})")


def _stream_rows(records: Iterable[EpisodeRecord]) -> Iterator[tuple[Any, ...]]:
    """Rows of many records, one at a time; each distinct JSON text is encoded once."""
    memo: dict[Any, str] = {}

    def text(value: Any, name: str) -> str:
        key = _flat_key(value)
        if key is None:
            return _plain_json(value, name)
        found = memo.get(key)
        if found is None:
            found = memo[key] = _plain_json(value, name)
        return found

    for record in records:
        yield _row(record_values(record), text)


_NESTED = (dict, list)


def _flat_key(value: Any) -> Any:
    """A hashable key for a flat dict of scalars (``None`` when it is not one).

    >>> _flat_key({"a": 1}), _flat_key({"m": {"a": 1}}), _flat_key([1])
    ((('a', <class 'int'>, 1),), None, None)
    """
    if type(value) is not dict:
        return None
    key = tuple((k, type(v), v) for k, v in value.items())
    for _, kind, _ in key:
        if kind in _NESTED:  # a dict or list inside: encoded each time (no exception)
            return None
    try:
        hash(key)
    except TypeError:  # another unhashable value inside
        return None
    return key


def _row(values: tuple[Any, ...], text: Callable[[Any, str], str]) -> tuple[Any, ...]:
    """A record's values (:func:`~evalband.episode.record_values`) as its SQL row.

    Whole numbers as ``int``, flags as 0/1, times as ``float`` or NULL, the score as an
    ``int`` or NULL, the seed as an int64 or its decimal text, the outcome as its value,
    texts as they are; the JSON columns go through ``text(value, field name)``. One tuple
    expression in :data:`~evalband.episode.EPISODE_FIELDS` order (a test checks it column by
    column against the column types); the runner stores one row per episode.

    >>> values = dict.fromkeys(EPISODE_FIELDS) | {"episode": 3, "repeat": 0, "steps": 7,
    ...     "interventions": 0, "attempts": 1, "terminated": True, "truncated": 0,
    ...     "assisted": False, "sim_time_s": 2, "condition_seed": 2**70, "outcome": "success",
    ...     "slices": {"a": "b"}, "extra": {}}
    >>> row = dict(zip(EPISODE_FIELDS, _row(tuple(values.values()), lambda v, n: f"{n}:{v}")))
    >>> [row[n] for n in ("episode", "terminated", "truncated", "sim_time_s", "wall_s")]
    [3, 1, 0, 2.0, None]
    >>> row["condition_seed"], row["outcome"], row["slices"]
    ('1180591620717411303424', 'success', "slices:{'a': 'b'}")
    """
    (run_id, policy, panel_fingerprint, cell, episode, repeat, condition_seed, outcome,
     terminated, truncated, steps, sim_time_s, time_to_success_s, slices, score, assisted,
     interventions, latency_ms_p50, latency_ms_p95, latency_ms_max, env_ms, wall_s,
     started_at, error, attempts, extra) = values
    return (
        run_id, policy, panel_fingerprint, cell, int(episode), int(repeat),
        _seed_to_sql(condition_seed), Outcome(outcome).value,
        1 if terminated else 0, 1 if truncated else 0, int(steps),
        None if sim_time_s is None else float(sim_time_s),
        None if time_to_success_s is None else float(time_to_success_s),
        text(slices, "slices"),
        None if score is None else int(score),
        1 if assisted else 0, int(interventions),
        None if latency_ms_p50 is None else float(latency_ms_p50),
        None if latency_ms_p95 is None else float(latency_ms_p95),
        None if latency_ms_max is None else float(latency_ms_max),
        None if env_ms is None else float(env_ms),
        None if wall_s is None else float(wall_s),
        started_at, error, int(attempts), text(extra, "extra"),
    )




@functools.lru_cache(maxsize=4096)
def _parse_flat(text: str) -> tuple[tuple[str, Any], ...] | None:
    data = json.loads(text)
    if isinstance(data, dict) and all(
        v is None or isinstance(v, str | int | float) for v in data.values()
    ):
        return tuple(data.items())
    return None


def _parse_slices(text: str) -> Any:
    """Parse a ``slices`` JSON text; cells repeat, so flat dicts are parsed once and copied."""
    flat = _parse_flat(text)
    return json.loads(text) if flat is None else dict(flat)


def _parse_extra(text: str) -> Any:
    return {} if text == "{}" else json.loads(text)


def _record_from_row(row: Sequence[Any]) -> EpisodeRecord:
    data = dict(zip(EPISODE_FIELDS, row, strict=True))
    data["outcome"] = parse_outcome(data["outcome"])  # names the allowed outcomes if unknown
    data["condition_seed"] = int(data["condition_seed"])
    for name in _BOOL_FIELDS:
        data[name] = bool(data[name])
    data["slices"] = _parse_slices(data["slices"])
    data["extra"] = _parse_extra(data["extra"])
    return EpisodeRecord(**data)


_OUTCOME_BY_VALUE = {o.value: o for o in Outcome}
_COLUMN = {name: i for i, name in enumerate(EPISODE_FIELDS)}


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many acyclic objects are built.

    Building 100,000 records otherwise sets off dozens of collections, each walking every
    tracked object (records hold no cycles; reference counting frees them). The collector
    is switched back on afterwards only if it was on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_json_column(texts: Sequence[str]) -> list[Any]:
    """Parse a JSON column: each distinct flat text once, every row its own copy."""
    flat = {text: _parse_flat(text) for text in set(texts)}
    return [json.loads(t) if flat[t] is None else dict(flat[t]) for t in texts]  # type: ignore[arg-type]


def _records_from_rows(rows: Sequence[Sequence[Any]]) -> list[EpisodeRecord]:
    """Rows of the episodes table as records, converted column by column.

    Each column is converted once (outcome names to :class:`Outcome`, 0/1 to bool, JSON
    texts parsed once per distinct text), then every record is built by its own
    constructor, whose checks run as on any other record. A row no evalband wrote (an
    unknown outcome name) goes through :func:`_record_from_row`, which says what is wrong.
    The checks and the frozen dataclass's field-by-field ``__init__`` cost ~1.5 us a record
    over the unchecked assembly this replaced (~8.3 -> ~9.8 us a record read, +18 %,
    ``bench/bench_core_types.py`` at load 6-8): ~0.15 s on a 100,000-episode run. The
    comparison reads columns (:meth:`RunStore.episode_columns`), not records.
    """
    if not rows:
        return []
    cols: list[Sequence[Any]] = list(zip(*rows, strict=True))
    outcomes = [_OUTCOME_BY_VALUE.get(v) for v in cols[_COLUMN["outcome"]]]
    if any(o is None for o in outcomes):
        return [_record_from_row(r) for r in rows]
    cols[_COLUMN["outcome"]] = outcomes
    for name in _BOOL_FIELDS:
        cols[_COLUMN[name]] = [bool(v) for v in cols[_COLUMN[name]]]
    seeds = cols[_COLUMN["condition_seed"]]
    if any(type(v) is not int for v in seeds):  # seeds past int64 are stored as text
        cols[_COLUMN["condition_seed"]] = [int(v) for v in seeds]
    for name in _JSON_FIELDS:
        cols[_COLUMN[name]] = _parse_json_column(cols[_COLUMN[name]])
    return [EpisodeRecord(*values) for values in zip(*cols, strict=True)]


def _manifest_row(manifest: RunManifest) -> tuple[Any, ...]:
    data = manifest.as_dict()
    row: list[Any] = []
    for name in MANIFEST_FIELDS:
        value = data[name]
        if name in ("versions", "extra"):
            value = _json_text(value, f"run manifest field {name!r}")
        elif name == "errors_as_failures":
            value = 1 if value else 0
        row.append(value)
    return tuple(row)


def _manifest_from_row(row: Sequence[Any]) -> RunManifest:
    data = dict(zip(MANIFEST_FIELDS, row, strict=True))
    data["versions"] = json.loads(data["versions"])
    data["extra"] = json.loads(data["extra"])
    data["errors_as_failures"] = bool(data["errors_as_failures"])
    return RunManifest(**data)



def _read_only_for_us(path: Path) -> bool:
    """``path`` exists and this user may not write it (see :func:`_write_access`)."""
    return _write_access(path) is False


def _write_access(path: Path) -> bool | None:
    """Whether this user may write ``path``; ``None`` when there is no such file.

    Other connections create and delete a store's ``-wal``/``-shm`` files at any moment, so
    the answer comes from one ``stat`` (existence and mode together); ``os.access`` is asked
    only when the mode bits say no (it also reads ACLs), and a file gone by then counts as
    absent. Asking ``exists`` and ``access`` one after the other refused one of six
    concurrent writers in CI when the file appeared or vanished between the two calls.
    """
    import stat

    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    uid = os.geteuid()
    if uid == 0:
        return True  # root writes any file (a read-only mount fails at the write itself)
    if found.st_uid == uid:
        bit = stat.S_IWUSR
    elif found.st_gid == os.getegid() or found.st_gid in os.getgroups():
        bit = stat.S_IWGRP
    else:
        bit = stat.S_IWOTH
    if found.st_mode & bit or os.access(path, os.W_OK):
        return True
    return False if path.exists() else None

class RunStore:
    """The run store: run manifests and episodes in one SQLite file.

    Open it with :func:`open_store` (or ``RunStore(path)``); use it as a context manager or
    call :meth:`close`. The file is created (with its parent directories) when missing. A
    file that is not an evalband store is refused with :class:`~evalband.errors.StoreError`
    and left untouched.

    One process (the driver) writes; any number of readers may read at the same time.
    A store object may be shared between threads (calls are serialised by a lock).

    Args:
        path: the SQLite file.

    Raises:
        StoreError: when ``path`` is a directory, not a SQLite database, a SQLite database of
            another application, or an evalband store of an unsupported schema version.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from evalband.episode import EpisodeRecord
    >>> from evalband.store._manifest import _example
    >>> with tempfile.TemporaryDirectory() as d, RunStore(Path(d) / "runs.sqlite") as store:
    ...     store.create_run(_example())
    ...     store.add_episode(EpisodeRecord(
    ...         run_id="r1", policy="expert", panel_fingerprint="abc", cell="mass=light",
    ...         slices={"mass": "light"}, episode=0, repeat=0, condition_seed=11,
    ...         outcome="success", terminated=True, truncated=False, steps=40))
    ...     _ = store.update_run("r1", status="finished", finished_at="2025-01-01T00:05:00Z")
    ...     print(store.done_keys("r1"), store.require_run("r1").status)
    ...     print(store.outcome_counts("r1"))
    {('mass=light', 0, 0)} finished
    {'success': 1, 'failure': 0, 'timeout': 0, 'error': 0}

    With ``read_only=True`` the file is opened through SQLite's ``mode=ro`` URI: it must
    exist and be an evalband store, nothing is created, every write fails, and a concurrent
    writer (a running ``evalband run``) is never blocked (what ``evalband view`` uses).
    """

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self.schema_version = SCHEMA_VERSION
        """The file's schema version: older only when opened read-only (never migrated)."""
        _LAST_PATH[:] = [self.path]
        self._check_file()
        if read_only:
            self._conn = self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the directory for the run store {self.path}: {exc}; "
                "pass `store` with a writable path", parameters=("store",),
            ) from None
        self._check_writable()
        try:
            conn = sqlite3.connect(
                str(self.path), timeout=10.0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the run store {self.path}: {exc}") from None
        try:
            existed = self._prepare(conn)
            if existed and self.path.stat().st_size <= CHECK_BYTES:
                self._check_whole(conn)  # never append to a damaged file
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _check_whole(self, conn: sqlite3.Connection) -> None:
        """``PRAGMA quick_check``: a damaged store is refused in one line."""
        try:
            found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
        except sqlite3.DatabaseError as exc:
            raise StoreError(damage_line(exc, self.path)) from None
        if found != ["ok"]:
            raise StoreError(damage_line(sqlite3.DatabaseError(_first_problem(found)),
                                         self.path))

    # -- opening -------------------------------------------------------------------------

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise StoreError(
                f"there is no run store at {self.path}; pass `store` with an existing store "
                "(evalband run creates one)", parameters=("store",),
            )
        if not os.access(self.path, os.R_OK):
            raise StoreError(
                f"cannot read the run store {self.path}: permission denied; ask its owner for "
                "read access or copy it"
            )
        uri = f"file:{urllib.parse.quote(str(self.path.resolve()))}?mode=ro"
        try:
            conn = sqlite3.connect(
                uri, uri=True, timeout=10.0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the run store {self.path} read-only: {exc}") from None
        try:
            try:
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            except sqlite3.OperationalError:
                conn.close()
                conn = self._open_immutable()
            self._check_ours(*self._inspect(conn))
            conn.execute("PRAGMA query_only=ON")
        except (sqlite3.DatabaseError, UnicodeDecodeError) as raised:
            conn.close()
            failure = undecodable_as_damage(raised)
            if is_damage(failure) and self._sqlite_header():
                raise StoreError(damage_line(failure, self.path)) from None
            raise self._not_ours(f"SQLite says: {failure}") from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_immutable(self) -> sqlite3.Connection:
        """Read a store in a folder this user cannot write (no ``-shm`` file can be made).

        SQLite's ``mode=ro`` still needs the WAL index (``-shm``); when the folder is not
        writable and no writer left a ``-wal`` file, the file is complete and unchanging, so
        it is read with ``immutable=1``. With a ``-wal`` file present the newest episodes
        live there and cannot be read without the index: the error says so.
        """
        wal = self.path.with_name(self.path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreError(
                f"cannot read the run store {self.path}: a writer's log ({wal.name}) is there "
                "and this user cannot write the folder to read it; read it as a user who can "
                "write the folder, or after the writer has finished"
            )
        uri = f"file:{urllib.parse.quote(str(self.path.resolve()))}?mode=ro&immutable=1"
        try:
            return sqlite3.connect(
                uri, uri=True, timeout=10.0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the run store {self.path} read-only: {exc}") from None

    def _check_writable(self) -> None:
        """Refuse, with one line, a store this user may read but not write."""
        folder = self.path.parent if str(self.path.parent) else Path(".")
        side = [self.path.with_name(self.path.name + suffix) for suffix in ("-shm", "-wal")]
        locked = [f for f in side if _read_only_for_us(f)]
        if self.path.exists() and not os.access(self.path, os.W_OK):
            why = "the file is read-only for this user"
        elif locked:
            why = (f"its {locked[0].name} file is read-only for this user (left by another "
                   "user's evalband?); when no evalband uses the store, remove it or make it "
                   "writable")
        elif not os.access(folder, os.W_OK | os.X_OK) and not (
            self.path.exists() and _write_access(side[0]) is True  # an existing -shm we may write
        ):
            why = f"this user cannot write its folder {folder}"
        else:
            return
        raise StoreError(
            f"cannot write the run store {self.path}: {why}; read commands (runs, show, "
            "compare, report, view) still read it; to record, pass `store` with a writable path",
            parameters=("store",),
        )

    def _not_ours(self, why: str) -> StoreError:
        return StoreError(
            f"{self.path} is not an evalband store ({why}); pass --store with a new path "
            "or an existing evalband store"
        )

    def _check_file(self) -> None:
        """Refuse, without opening it with SQLite, a file that is not a SQLite database."""
        if self.path.is_dir():
            raise StoreError(
                f"the run store {self.path} is a directory; pass `store` with a file path "
                f"such as {self.path / DEFAULT_STORE_PATH.name}", parameters=("store",),
            )
        if not self.path.exists():
            return
        try:
            with self.path.open("rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"cannot read the run store {self.path}: {exc}") from None
        if head and head != _SQLITE_MAGIC:
            raise self._not_ours("file is not a database")

    def _prepare(self, conn: sqlite3.Connection) -> bool:
        """Check (read-only) that the file is ours or empty, then create or open the schema.

        Returns whether the store existed (had its tables) before.
        """
        try:
            app_id, version, tables = self._inspect(conn)
            existed = bool(tables)
            if app_id == 0 and not tables:
                if conn.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
                    raise StoreError(f"cannot switch the run store {self.path} to WAL mode")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    app_id, version, tables = self._inspect(conn)
                    if app_id == 0 and not tables:
                        create_tables(conn, _schema())
                        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                app_id, version, tables = self._inspect(conn)
            self._check_ours(app_id, version, tables)
            if version < SCHEMA_VERSION:
                self._migrate(conn)
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
        except (sqlite3.DatabaseError, UnicodeDecodeError) as raised:
            failure = undecodable_as_damage(raised)
            if is_damage(failure) and self._sqlite_header():
                raise StoreError(damage_line(failure, self.path)) from None
            raise self._not_ours(f"SQLite says: {failure}") from None
        return existed

    def _sqlite_header(self) -> bool:
        """Whether the file starts as a SQLite database does (then a failure is damage)."""
        try:
            with self.path.open("rb") as fh:
                return fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
        except OSError:
            return False

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring an older store to this schema: every step in one transaction, or none.

        The version is read again inside the write transaction, so two processes opening
        the same old file migrate it once.
        """
        version = self.schema_version
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = self._inspect(conn)[1]
                if version < SCHEMA_VERSION:
                    migrate(conn, version)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except (sqlite3.Error, EvalbandError, ValueError, TypeError, KeyError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise StoreError(
                f"cannot migrate the run store {self.path} from schema version {version} to "
                f"{SCHEMA_VERSION}: {first}; it is left as it was (read commands still read "
                "it); retry when no other evalband is writing it"
            ) from None
        self.schema_version = SCHEMA_VERSION

    @staticmethod
    def _inspect(conn: sqlite3.Connection) -> tuple[int, int, set[str]]:
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        return app_id, version, tables

    def _check_ours(self, app_id: int, version: int, tables: set[str]) -> None:
        if app_id != APPLICATION_ID:
            listed = ", ".join(sorted(tables)[:8]) or "none"
            raise self._not_ours(f"a SQLite database of another application; tables: {listed}")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the run store {self.path} has schema version {version}, newer than this "
                f"evalband understands ({SCHEMA_VERSION}); upgrade evalband"
            )
        if version < OLDEST_READABLE or not {"runs", "episodes"} <= tables:
            raise StoreError(
                f"the run store {self.path} has schema version {version} and tables "
                f"{', '.join(sorted(tables)) or 'none'}; expected version {OLDEST_READABLE} to "
                f"{SCHEMA_VERSION} with tables runs and episodes; pass `store` with a new path",
                parameters=("store",),
            )
        self.schema_version = version

    # -- durability ----------------------------------------------------------------------

    @contextlib.contextmanager
    def reproducible_writes(self) -> Iterator[None]:
        """Within the block, commit with ``synchronous=NORMAL`` (then back to ``FULL``).

        For episodes that can be re-played exactly (simulated, condition-seeded): in WAL mode
        a ``NORMAL`` commit is still atomic and survives the writing process being killed
        (the SIGKILL test covers it); only an OS crash or power loss may roll back the last
        few commits, which a resume then re-plays identically. It saves the fsync per
        episode (~0.5-0.9 ms here). Hardware episodes (the Recorder) keep ``FULL``.
        """
        with self._lock:
            self.conn.execute("PRAGMA synchronous=NORMAL")
        try:
            yield
        finally:
            with self._lock:
                if self._conn is not None:
                    self._conn.execute("PRAGMA synchronous=FULL")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``) under the store's lock.

        For modules that keep rows in the store's other tables (hardware sessions,
        pre-registrations, leases; every table is created by the store's one schema,
        :mod:`evalband.store._schema`): the statements in the block commit together, durable
        (``synchronous=FULL``) when the block exits, or none of them when it raises.
        """
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """The open SQLite connection (autocommit; transactions are explicit)."""
        if self._conn is None:
            raise StoreError(f"the run store {self.path} is closed; open it again")
        return self._conn

    @functools.cached_property
    def _select_runs(self) -> str:
        """This file's ``SELECT`` of the runs (an old read-only file lacks newer columns)."""
        return _SELECT_RUNS if self.schema_version == SCHEMA_VERSION else select_runs(self.conn)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._conn is None

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else "open"
        return f"RunStore({str(self.path)!r}, {state})"

    # -- runs ----------------------------------------------------------------------------

    def create_run(self, manifest: RunManifest) -> None:
        """Add a run.

        Raises:
            InvalidInputError: a run id that is not 1-128 letters, digits, ``.``, ``_``, ``-``.
            StoreError: when a run with the same id is already stored.
        """
        check_run_id(manifest.run_id)
        with self._lock:
            try:
                insert_run(self.conn, manifest)
            except sqlite3.IntegrityError as exc:
                raise self._integrity(manifest.run_id, exc, "; choose another run id, or "
                                      "resume that run") from None

    def get_run(self, run_id: str) -> RunManifest | None:
        """The run's manifest, or ``None`` when no such run is stored."""
        with self._lock:
            row = self.conn.execute(self._select_runs + " WHERE run_id = ?",
                                    (run_id,)).fetchone()
        return None if row is None else _manifest_from_row(row)

    def require_run(self, run_id: str) -> RunManifest:
        """The run's manifest.

        Raises:
            RunNotFoundError: when no such run is stored; the message lists recent run ids.
        """
        manifest = self.get_run(run_id)
        if manifest is None:
            with self._lock:
                recent = [
                    str(r[0])
                    for r in self.conn.execute(
                        "SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 5"
                    )
                ]
            hint = f"recent runs: {', '.join(recent)}" if recent else "the store holds no runs yet"
            raise RunNotFoundError(f"run {shown(run_id)} is not in the store {self.path}; {hint}")
        return manifest

    def list_runs(self) -> list[RunManifest]:
        """All runs, newest first (by ``started_at``, then insertion order)."""
        with self._lock:
            rows = self.conn.execute(
                self._select_runs + " ORDER BY started_at DESC, rowid DESC"
            ).fetchall()
        return [_manifest_from_row(r) for r in rows]

    def update_run(self, run_id: str, /, **changes: Any) -> RunManifest:
        """Change fields of a stored run (``status``, ``finished_at``, ``extra``, ...).

        Returns:
            The updated manifest.

        Raises:
            RunNotFoundError: when no such run is stored.
            StoreError: on an unknown field name or an attempt to change ``run_id``.
        """
        if "run_id" in changes and changes["run_id"] != run_id:
            raise StoreError(f"the run id of a stored run cannot change ({run_id!r})")
        with self._lock:
            updated = self.require_run(run_id).replace(**changes)
            row = dict(zip(MANIFEST_FIELDS, _manifest_row(updated), strict=True))
            names = [n for n in MANIFEST_FIELDS if n in changes and n != "run_id"]
            if names:
                assignments = ", ".join(f'"{n}" = ?' for n in names)
                self.conn.execute(
                    f"UPDATE runs SET {assignments} WHERE run_id = ?",
                    (*[row[n] for n in names], run_id),
                )
        return updated

    # -- comparisons ---------------------------------------------------------------------

    def record_comparison(
        self,
        run_ids: Sequence[str],
        options: dict[str, Any] | None = None,
        *,
        result: Sequence[dict[str, Any]] | None = None,
        episode_counts: dict[str, int] | None = None,
    ) -> str:
        """Record that these runs were compared (baseline first), and what came out.

        Idempotent: the id is a hash of ``run_ids`` (in order) and ``options``, so recording
        the same comparison again returns the same id and keeps the first ``created_at``;
        a ``result`` recorded again replaces the stored one (the newest computation of the
        recipe; ``compare`` puts the episode counts in ``options``, so a run that gained
        episodes makes a new row).

        Args:
            run_ids: two or more run ids in the store, the baseline first.
            options: JSON-serialisable settings of the comparison (e.g. ``{"confidence":
                0.9}``); ``None`` and ``{}`` are the same.
            result: what was computed, one comparison ``--json`` document per candidate; reports
                and the viewer render it while the runs keep these episodes.
            episode_counts: episodes per run that ``result`` was computed from (default:
                the stored counts now).

        Returns:
            The comparison id, ``cmp-`` and 12 hex digits.

        Raises:
            InvalidInputError: fewer than two run ids, or one that is not a non-empty string.
            RunNotFoundError: a run id that is not in the store.
            StoreError: options or a result that are not JSON-serialisable, or a read-only
                store.

        >>> import tempfile
        >>> from evalband.store._manifest import _example
        >>> with tempfile.TemporaryDirectory() as d, RunStore(f"{d}/s.sqlite") as store:
        ...     for rid in ("a", "b"):
        ...         store.create_run(_example().replace(run_id=rid))
        ...     cid = store.record_comparison(["a", "b"])
        ...     again = store.record_comparison(("a", "b"), {}, result=[{"verdict": "improves"}])
        ...     print(cid == again, [c["run_ids"] for c in store.comparisons()])
        ...     print(store.comparison_result(cid).result, store.comparison_result(cid).current)
        True [['a', 'b']]
        [{'verdict': 'improves'}] True
        """
        from evalband.store._comparisons import record_comparison

        return record_comparison(self, run_ids, options, result=result,
                                 episode_counts=episode_counts)

    def comparisons(self) -> list[dict[str, Any]]:
        """The recorded comparisons, newest first.

        Each is a dict with ``comparison_id``, ``run_ids`` (baseline first), ``options``,
        ``created_at``, ``has_result`` (a result is stored) and ``current`` (it is up to
        date with the runs' episodes). A store that never recorded one gives ``[]``.
        """
        from evalband.store._comparisons import list_comparisons

        return list_comparisons(self)

    def get_comparison(self, comparison_id: str) -> dict[str, Any] | None:
        """One recorded comparison (as in :meth:`comparisons`), or ``None`` when unknown."""
        from evalband.store._comparisons import get_comparison

        return get_comparison(self, comparison_id)

    def comparison_result(self, comparison_id: str) -> StoredComparison | None:
        """A recorded comparison with its stored result, or ``None`` when unknown."""
        from evalband.store._comparisons import stored_result

        return stored_result(self, comparison_id)

    def find_comparison_result(
        self, run_ids: Sequence[str], options: dict[str, Any] | None = None
    ) -> StoredComparison | None:
        """The newest up-to-date stored result of these runs (in order) under ``options``.

        ``options`` are matched without ``episode_counts``; ``None`` when there is none.
        """
        from evalband.store._comparisons import find_result

        return find_result(self, run_ids, options)

    # -- episodes: writing ---------------------------------------------------------------

    def _duplicate_or_missing(
        self, record: EpisodeRecord, exc: sqlite3.IntegrityError
    ) -> StoreError:
        if "FOREIGN KEY" in str(exc):
            return StoreError(
                f"run {record.run_id!r} is not in the store {self.path}; create the run "
                "(store.create_run) before adding its episodes"
            )
        cell, episode, repeat = record.key
        return StoreError(
            f"episode (cell={cell!r}, episode={episode}, repeat={repeat}) of run "
            f"{record.run_id!r} is already stored in {self.path}; each (cell, episode, repeat) "
            "is stored once (resume skips done_keys)"
        )

    def add_episode(self, record: EpisodeRecord) -> None:
        """Store one episode; it is durable on disk when this returns.

        Raises:
            StoreError: when the run does not exist or the episode's
                ``(run_id, cell, episode, repeat)`` is already stored.
        """
        row = _episode_row(record)
        with self._lock:
            try:
                self.conn.execute(_INSERT_EPISODE, row)
            except sqlite3.IntegrityError as exc:
                raise self._duplicate_or_missing(record, exc) from None

    def add_episodes(self, records: Iterable[EpisodeRecord]) -> None:
        """Store many episodes in one transaction: all of them or none.

        Raises:
            StoreError: as :meth:`add_episode`; nothing is stored then.
        """
        with self._lock:
            self._insert_all(None, records)

    def _insert_all(self, manifest: RunManifest | None, records: Iterable[EpisodeRecord]) -> None:
        """Insert a run (optional) and episodes in one transaction, streaming the rows.

        The rows go through one ``executemany`` (SQLite's loop, not Python's), built one at a
        time from the records (never a list of a million rows) with each distinct ``slices``
        / ``extra`` JSON text encoded once. On a duplicate or orphan episode the transaction
        is rolled back and the records are checked one by one to name the first one at
        fault.
        """
        if not isinstance(records, Sequence):
            records = list(records)  # may be needed twice, to name a bad record
        seq = records
        self._insert_rows(
            manifest, _stream_rows(seq), lambda exc: self._first_bad(manifest, seq, exc)
        )

    def _insert_rows(
        self,
        manifest: RunManifest | None,
        rows: Iterable[tuple[Any, ...]],
        on_conflict: Callable[[sqlite3.IntegrityError], StoreError],
        sql: str = _INSERT_EPISODE,
    ) -> None:
        """Insert a run (optional) and ready episode rows in one transaction (one executemany).

        ``rows`` are tuples in ``EPISODE_FIELDS`` order, already in their SQL form (the
        column-wise importer builds them from whole columns). On a constraint failure the
        transaction is rolled back and ``on_conflict``'s error is raised.
        """
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if manifest is not None:
                conn.execute(_INSERT_RUN, _manifest_row(manifest))
            try:
                conn.executemany(sql, rows)
            except sqlite3.IntegrityError as exc:
                conn.execute("ROLLBACK")
                raise on_conflict(exc) from None
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _first_bad(
        self, manifest: RunManifest | None, records: Sequence[EpisodeRecord],
        exc: sqlite3.IntegrityError,
    ) -> StoreError:
        """The error naming the first record that breaks a constraint (nothing is kept)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if manifest is not None:
                conn.execute(_INSERT_RUN, _manifest_row(manifest))
            for record in records:
                try:
                    conn.execute(_INSERT_EPISODE, _episode_row(record))
                except sqlite3.IntegrityError as one:
                    return self._duplicate_or_missing(record, one)
            return StoreError(f"cannot store the episodes in {self.path}: {exc}")
        finally:
            conn.execute("ROLLBACK")

    def _create_run_with_episodes(
        self, manifest: RunManifest, records: Sequence[EpisodeRecord]
    ) -> None:
        """Add a run and its episodes atomically (used by bundle import)."""
        check_run_id(manifest.run_id)
        with self._lock:
            try:
                self._insert_all(manifest, records)
            except sqlite3.IntegrityError as exc:
                raise self._integrity(manifest.run_id, exc) from None

    def _integrity(self, run_id: str, exc: sqlite3.IntegrityError, advice: str = "") -> StoreError:
        """A constraint SQLite refused: "already exists" only for the run id's uniqueness."""
        if "UNIQUE constraint failed: runs." in str(exc):
            return StoreError(f"run {run_id!r} already exists in {self.path}{advice}")
        return StoreError(f"cannot store run {run_id!r} in {self.path}: SQLite refused it "
                          f"({exc}); nothing was written")

    def _create_run_with_columns(
        self,
        manifest: RunManifest,
        columns: Mapping[str, np.ndarray[Any, Any]],
        constants: dict[str, Any] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Add a run and its episodes given column-wise, atomically (one transaction).

        ``columns`` maps fields to one value per episode in SQL form (int64 arrays, object
        arrays of text), rows already in ``(cell, episode, repeat)`` order; ``constants`` the
        fields equal on every row (written into the statement once). Many rows go into each
        ``INSERT`` (a multi-row ``VALUES``), so SQLite's own work, not Python's binding of
        one statement per row, is what a million rows cost (about 40% less than an
        ``executemany`` of single rows). The parameters are made block by block from the
        arrays (memory: one block, never a list of every row). ``progress`` is called with
        the number of rows written so far after each block.

        Durability is that of any transaction here: a process killed mid-import leaves the
        store as it was (SQLite rolls the unfinished transaction back), and the import can
        simply be run again.
        """
        import numpy as np

        check_run_id(manifest.run_id)
        names = list(columns)
        width = len(names)
        n = len(columns[names[0]]) if names else 0
        limit = self.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        per = max(1, min(_VALUES_ROWS, limit // max(width, 1)))
        sql_many = _insert_values(names, constants or {}, per)
        sql_one = _insert_values(names, constants or {}, 1)
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(_INSERT_RUN, _manifest_row(manifest))
                for start in range(0, n, _INSERT_BLOCK):
                    stop = min(n, start + _INSERT_BLOCK)
                    block = np.empty((stop - start, width), dtype=object)
                    for j, name in enumerate(names):
                        block[:, j] = columns[name][start:stop]
                    full = (stop - start) // per * per
                    if full:
                        conn.executemany(sql_many, block[:full].reshape(-1, per * width).tolist())
                    if full < stop - start:
                        conn.executemany(sql_one, block[full:].tolist())
                    if progress is not None:
                        progress(stop)
                conn.execute("COMMIT")
            except sqlite3.IntegrityError as exc:
                conn.execute("ROLLBACK")
                raise StoreError(
                    f"cannot store run {manifest.run_id!r} in {self.path}: {exc} (a run of that "
                    "id exists, or two rows share a (cell, episode, repeat)); nothing was stored"
                ) from None
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    # -- episodes: reading ---------------------------------------------------------------

    def _rows(self, run_id: str, where: str | None = None) -> list[Any]:
        sql = _SELECT_EPISODES
        if where is not None:  # an internal condition (never user text)
            sql = sql.replace(" ORDER BY", f" AND ({where}) ORDER BY", 1)
        with self._lock:
            self.require_run(run_id)
            return self.conn.execute(sql, (run_id,)).fetchall()

    def done_keys(self, run_id: str) -> set[tuple[str, int, int]]:
        """The ``(cell, episode, repeat)`` keys already stored for a run (for resume).

        Raises:
            RunNotFoundError: when no such run is stored.
        """
        with self._lock:
            self.require_run(run_id)
            rows = self.conn.execute(
                'SELECT "cell", "episode", "repeat" FROM episodes WHERE run_id = ?', (run_id,)
            ).fetchall()
        return {(str(c), int(e), int(r)) for c, e, r in rows}

    def delete_error_episodes(self, run_id: str) -> dict[tuple[str, int, int], int]:
        """Remove the run's ``error`` episodes so a resume plays them again.

        Returns:
            ``(cell, episode, repeat)`` -> attempts so far, for each removed episode (the
            replay records one more attempt).

        Raises:
            RunNotFoundError: when no such run is stored.
        """
        with self._lock:
            self.require_run(run_id)
            where = 'WHERE run_id = ? AND "outcome" = ?'
            rows = self.conn.execute(
                f'SELECT "cell", "episode", "repeat", "attempts" FROM episodes {where}',
                (run_id, "error"),
            ).fetchall()
            self.conn.execute(f"DELETE FROM episodes {where}", (run_id, "error"))
        return {(str(c), int(e), int(r)): int(a or 1) for c, e, r, a in rows}

    def count_episodes(self, run_id: str) -> int:
        """How many episodes of the run are stored.

        Raises:
            RunNotFoundError: when no such run is stored.
        """
        with self._lock:
            self.require_run(run_id)
            row = self.conn.execute(
                "SELECT COUNT(*) FROM episodes WHERE run_id = ?", (run_id,)
            ).fetchone()
        return int(row[0])

    def outcome_counts(self, run_id: str) -> dict[str, int]:
        """Episodes per outcome, every outcome listed (zeros included), in ``Outcome`` order.

        Raises:
            RunNotFoundError: when no such run is stored.
        """
        with self._lock:
            self.require_run(run_id)
            rows = self.conn.execute(
                "SELECT outcome, COUNT(*) FROM episodes WHERE run_id = ? GROUP BY outcome",
                (run_id,),
            ).fetchall()
        counts = {o.value: 0 for o in Outcome}
        for outcome, n in rows:
            counts[str(outcome)] = int(n)
        return counts

    def episode_records(self, run_id: str, *, where: str | None = None) -> list[EpisodeRecord]:
        """The run's episodes as records, ordered by ``(cell, episode, repeat)``.

        ``where``: an SQL condition on the episodes table selecting some of them (for the
        report's few episodes with media, reasons or errors; the library's own text only).

        Every field round-trips exactly, except that a NaN float is stored as ``None``
        (SQLite keeps no NaN).

        Raises:
            RunNotFoundError: when no such run is stored.
        """
        with _gc_paused():
            return _records_from_rows(self._rows(run_id, where))

    def episode_columns(
        self,
        run_id: str,
        columns: Sequence[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
        conditions: Sequence[str] = (),
        where: str | None = None,
    ) -> dict[str, np.ndarray[Any, Any]]:
        """The run's episodes column-wise: one numpy array per column.

        See :func:`evalband.store._columns.episode_columns` for the dtypes; memory grows
        with the columns read, not with one object per episode. ``progress(episodes read,
        episodes in all)`` is called per block of rows. Each of ``conditions`` (SQL on an
        episode's row) is read in the same pass as a boolean column ``"where <condition>"``.
        ``where`` (SQL): only the episodes that meet it, in one query.

        Raises:
            RunNotFoundError: when no such run is stored.
            InvalidInputError: an unknown column name.
        """
        from evalband.store._columns import episode_columns

        return episode_columns(self, run_id, columns, progress, conditions, where)

    def episodes(self, run_id: str) -> pd.DataFrame:
        """The run's episodes as a data frame, one row per episode.

        Rows are ordered by ``(cell, episode, repeat)``. Columns are the record's fields with
        ``outcome`` as a string, and ``slices`` expanded into one column per slice factor
        (placed after ``cell``; a factor whose name collides with a record field is prefixed
        ``slice_``). ``score`` is a nullable ``Int64`` column; optional floats are ``float64``
        with NaN for missing values. An empty run gives an empty frame with the columns.

        Raises:
            RunNotFoundError: when no such run is stored.

        >>> import tempfile
        >>> from pathlib import Path
        >>> from evalband.episode import EpisodeRecord
        >>> from evalband.store._manifest import _example
        >>> with tempfile.TemporaryDirectory() as d, RunStore(Path(d) / "s.sqlite") as store:
        ...     store.create_run(_example())
        ...     store.add_episode(EpisodeRecord(
        ...         run_id="r1", policy="expert", panel_fingerprint="abc", cell="mass=heavy",
        ...         slices={"mass": "heavy"}, episode=0, repeat=0, condition_seed=3,
        ...         outcome="timeout", terminated=False, truncated=True, steps=200))
        ...     df = store.episodes("r1")
        >>> list(df.columns[:6])
        ['run_id', 'policy', 'panel_fingerprint', 'cell', 'mass', 'episode']
        >>> df.loc[0, "outcome"], df.loc[0, "mass"]
        ('timeout', 'heavy')
        """
        return _records_frame(self.episode_records(run_id))


def _slice_column_names(records: Sequence[EpisodeRecord]) -> dict[str, str]:
    """Factor name -> column name, factors in order of first appearance."""
    taken = set(EPISODE_FIELDS)
    names: dict[str, str] = {}
    for record in records:
        for factor in record.slices:
            if factor in names:
                continue
            column = factor
            while column in taken:
                column = f"slice_{column}"
            taken.add(column)
            names[factor] = column
    return names


def _records_frame(records: Sequence[EpisodeRecord]) -> pd.DataFrame:
    import pandas as pd

    factor_columns = _slice_column_names(records)
    columns: dict[str, Any] = {}
    for name in EPISODE_FIELDS:
        if name == "slices":
            continue
        values = [getattr(r, name) for r in records]
        if name in _INT_FIELDS:
            columns[name] = pd.Series(values, dtype="int64")
        elif name == "condition_seed":
            fits = all(_INT64_MIN <= int(v) <= _INT64_MAX for v in values)
            columns[name] = pd.Series(values, dtype="int64" if fits else object)
        elif name in _BOOL_FIELDS:
            columns[name] = pd.Series(values, dtype="bool")
        elif name in _FLOAT_FIELDS:
            floats = [math.nan if v is None else float(v) for v in values]
            columns[name] = pd.Series(floats, dtype="float64")
        elif name == "score":
            columns[name] = pd.Series(values, dtype="Int64")
        elif name == "outcome":
            columns[name] = pd.Series([Outcome(v).value for v in values], dtype=object)
        elif name == "extra":
            columns[name] = pd.Series(values, dtype=object)
        else:
            columns[name] = pd.Series(values, dtype=object)
        if name == "cell":
            for factor, column in factor_columns.items():
                columns[column] = pd.Series([r.slices.get(factor) for r in records], dtype=object)
    return pd.DataFrame(columns)


def open_store(path: str | Path | None = None, *, read_only: bool = False) -> RunStore:
    """Open (creating when missing) the run store at ``path``.

    Args:
        path: the SQLite file; :data:`DEFAULT_STORE_PATH` (relative to the current
            directory) when ``None``.
        read_only: open an existing store for reading only (SQLite ``mode=ro``): nothing is
            created, and a missing file is an error (what the read commands use).

    Returns:
        An open :class:`RunStore`; use it as a context manager or close it.

    Raises:
        StoreError: when the file exists and is not an evalband store (it is left untouched),
            is of a newer schema than this evalband, cannot be written (unless
            ``read_only``), or is missing (with ``read_only``).

    A store of an older schema is migrated when opened to write (in one transaction) and
    read as it is with ``read_only`` (see :mod:`evalband.store._schema`).

    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "a" / "b.sqlite") as s:
    ...     s.list_runs()
    []
    """
    return RunStore(DEFAULT_STORE_PATH if path is None else path, read_only=read_only)
