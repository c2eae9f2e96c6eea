"""The store's one schema: every table's DDL, its version, and the steps that migrate old files.

Every table in a store file — runs and episodes, the recorded comparisons with their results,
the hardware sessions and their trials, pre-registrations and run leases — is created here
and lives under one ``PRAGMA user_version``, :data:`SCHEMA_VERSION`. Modules that keep rows in
these tables (:mod:`evalband.session`, :mod:`evalband.store._lease`) never create tables.

Migrations: :data:`MIGRATIONS` maps version ``v`` to the step that brings a version-``v`` file
to ``v + 1``. A store opened for writing at an older version is migrated on open, every step
in order inside one ``BEGIN IMMEDIATE`` transaction with the new ``user_version`` (all of it
or none of it: a crash mid-migration leaves the old file as it was). A store opened
read-only is never written: readers of an older file read it compatibly (a table that is
missing reads as empty, a comparison of version 1 has no stored result), see
:func:`read_compatible`.

Version history:

1. ``runs``, ``episodes``; tables added later without a version change: ``comparisons``
   (run ids + options, no result), ``sessions``, ``session_trials``, ``preregistrations``,
   ``run_leases``, each created by its module on first use.
2. every table created with the store; ``comparisons`` gains the stored result
   (``result``: the JSON list of comparison ``--json`` document, one per candidate),
   ``episode_counts`` and ``attempt_totals`` (per run, when it was computed: a result is
   current while both are unchanged).
3. hardware-session trials are episode records: each policy of a session is a run
   (``source="session"``), a scene a cell, an attempt a repeat
   (:mod:`evalband.store._session_runs`); ``sessions`` gains ``run_ids`` (policy -> run id),
   the ``session_trials`` rows move into ``episodes`` and the table is dropped;
   ``session_results`` keeps each session's stored analyses and sequential looks.
4. ``runs`` gains ``step`` (``INTEGER``, ``NULL`` when not given): the training step of the
   checkpoint a run evaluated (``evalband run --step N``), which ``rank --by step`` and
   ``sweep`` order checkpoints by; and robot sessions: ``session_attempts`` logs every play
   of a trial on a robot (running, played, aborted, failed or interrupted; its result: end
   of the trial, suggestion, timing, the clip and step data in the media area),
   ``session_scenes`` each scene's start-state
   capture (the pose, the last two observations, a simulator's scene state). A confirmed
   trial is still one episode; an aborted play leaves its trial pending (replayable).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

__all__ = [
    "SCHEMA_VERSION",
    "SESSIONS",
    "SESSION_RESULTS",
    "SESSION_ATTEMPTS",
    "SESSION_SCENES",
    "OLDEST_READABLE",
    "MIGRATIONS",
    "TABLE_STATEMENTS",
    "create_tables",
    "migrate",
    "read_compatible",
]

SCHEMA_VERSION = 4
"""``PRAGMA user_version`` of the schema this code writes."""

OLDEST_READABLE = 1
"""The oldest version a read-only open reads (and a writable open migrates)."""

COMPARISONS = (
    "CREATE TABLE IF NOT EXISTS comparisons (\n"
    '    "comparison_id" TEXT PRIMARY KEY,\n'
    '    "run_ids" TEXT NOT NULL,\n'
    '    "options" TEXT NOT NULL,\n'
    '    "created_at" TEXT NOT NULL,\n'
    '    "result" TEXT,\n'
    '    "episode_counts" TEXT,\n'
    '    "attempt_totals" TEXT,\n'
    '    "computed_at" TEXT\n)'
)
"""Recorded comparisons: the recipe (run ids, options) and, since version 2, its result."""

_RESULT_COLUMNS = ("result", "episode_counts", "attempt_totals", "computed_at")

_V2_SESSIONS = (
    "CREATE TABLE IF NOT EXISTS sessions (\n"
    '    "session_id" TEXT PRIMARY KEY,\n'
    '    "created_at" TEXT NOT NULL,\n'
    '    "policies" TEXT NOT NULL,\n'
    '    "scenes" INTEGER NOT NULL,\n'
    '    "attempts" INTEGER NOT NULL,\n'
    '    "seed" INTEGER NOT NULL,\n'
    '    "blind" INTEGER NOT NULL CHECK ("blind" IN (0, 1)),\n'
    '    "n_trials" INTEGER NOT NULL,\n'
    '    "plan" TEXT NOT NULL'
)
SESSIONS = _V2_SESSIONS + ',\n    "run_ids" TEXT\n)'
"""Each hardware session: its plan (JSON) and, since version 3, its runs (policy -> run id)."""
_V2_SESSIONS += "\n)"
_V2_SESSION_TRIALS = (
    "CREATE TABLE IF NOT EXISTS session_trials (\n"
    '    "session_id" TEXT NOT NULL,\n'
    '    "trial_index" INTEGER NOT NULL,\n'
    '    "seq" INTEGER NOT NULL,\n'
    "    \"status\" TEXT NOT NULL CHECK (\"status\" IN ('scored', 'skipped')),\n"
    '    "score" INTEGER,\n'
    '    "success" INTEGER CHECK ("success" IN (0, 1)),\n'
    '    "assisted" INTEGER NOT NULL CHECK ("assisted" IN (0, 1)),\n'
    '    "note" TEXT,\n'
    '    "exit_code" INTEGER,\n'
    '    "duration_s" REAL,\n'
    '    "output_tail" TEXT,\n'
    '    "scored_at" TEXT NOT NULL,\n'
    "    CHECK ((\"status\" = 'scored') = (\"score\" IS NOT NULL)),\n"
    '    PRIMARY KEY ("session_id", "trial_index"),\n'
    '    FOREIGN KEY ("session_id") REFERENCES sessions ("session_id") ON DELETE CASCADE\n)'
)
SESSION_RESULTS = (
    "CREATE TABLE IF NOT EXISTS session_results (\n"
    '    "result_id" TEXT PRIMARY KEY,\n'
    '    "session_id" TEXT NOT NULL,\n'
    "    \"kind\" TEXT NOT NULL CHECK (\"kind\" IN ('analysis', 'look')),\n"
    '    "options" TEXT NOT NULL,\n'
    '    "trials_state" TEXT NOT NULL,\n'
    '    "result" TEXT NOT NULL,\n'
    '    "computed_at" TEXT NOT NULL,\n'
    '    FOREIGN KEY ("session_id") REFERENCES sessions ("session_id") ON DELETE CASCADE\n)'
)
"""Stored session results (since version 3): ``session analyze`` results and sequential looks.

``options`` is what changes the result (JSON), ``trials_state`` the state of the session's
confirmed trials it was computed from (a result is current while both are the same)."""
SESSION_ATTEMPTS = (
    "CREATE TABLE IF NOT EXISTS session_attempts (\n"
    '    "attempt_id" TEXT PRIMARY KEY,\n'
    '    "session_id" TEXT NOT NULL,\n'
    '    "trial_index" INTEGER NOT NULL,\n'
    '    "n" INTEGER NOT NULL,\n'
    "    \"status\" TEXT NOT NULL CHECK (\"status\" IN ('running', 'played', 'aborted', "
    "'failed', 'interrupted')),\n"
    '    "robot" TEXT NOT NULL,\n'
    '    "operator" TEXT NOT NULL,\n'
    '    "started_at" TEXT NOT NULL,\n'
    '    "ended_at" TEXT,\n'
    '    "reason" TEXT,\n'
    '    "result" TEXT,\n'
    '    UNIQUE ("session_id", "trial_index", "n"),\n'
    '    FOREIGN KEY ("session_id") REFERENCES sessions ("session_id") ON DELETE CASCADE\n)'
)
"""Every play of a robot session's trial (since version 4); ``result`` is JSON."""
SESSION_SCENES = (
    "CREATE TABLE IF NOT EXISTS session_scenes (\n"
    '    "session_id" TEXT NOT NULL,\n'
    '    "scene" INTEGER NOT NULL,\n'
    '    "attempt_id" TEXT NOT NULL,\n'
    '    "captured_at" TEXT NOT NULL,\n'
    '    "capture" TEXT NOT NULL,\n'
    '    PRIMARY KEY ("session_id", "scene"),\n'
    '    FOREIGN KEY ("session_id") REFERENCES sessions ("session_id") ON DELETE CASCADE\n)'
)
"""Each scene's start-state capture (since version 4); ``capture`` is JSON."""
PREREGISTRATIONS = (
    "CREATE TABLE IF NOT EXISTS preregistrations (\n"
    '    "name" TEXT PRIMARY KEY,\n'
    '    "sha256" TEXT NOT NULL,\n'
    '    "locked_at" TEXT NOT NULL,\n'
    '    "session_id" TEXT,\n'
    '    "source" TEXT,\n'
    '    "yaml" TEXT NOT NULL\n)'
)
RUN_LEASES = (
    "CREATE TABLE IF NOT EXISTS run_leases (\n"
    '    "run_id" TEXT PRIMARY KEY,\n'
    '    "host" TEXT NOT NULL,\n'
    '    "pid" INTEGER NOT NULL,\n'
    '    "pid_start" TEXT,\n'
    '    "acquired_at" TEXT NOT NULL,\n'
    '    "heartbeat" REAL NOT NULL\n)'
)

TABLE_STATEMENTS = (COMPARISONS, SESSIONS, SESSION_RESULTS, PREREGISTRATIONS, RUN_LEASES,
                    SESSION_ATTEMPTS, SESSION_SCENES)
"""The tables beside ``runs`` and ``episodes`` (whose DDL follows the record fields)."""


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')]


def create_tables(conn: sqlite3.Connection, base: list[str]) -> None:
    """Create every table of the current schema (``base``: runs, episodes and their index).

    Run inside the caller's transaction on an empty file.
    """
    for statement in (*base, *TABLE_STATEMENTS):
        conn.execute(statement)


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """Version 1 -> 2: every table exists; comparisons gain their stored result.

    A version-1 comparison keeps its run ids and options; its ``episode_counts`` are taken
    from its options where the recording ``compare`` put them. It has no result (``NULL``):
    readers compute it from the stored episodes, and the next ``compare`` stores one.
    """
    present = _columns(conn, "comparisons")
    if not present:
        conn.execute(COMPARISONS)
    else:
        for name in _RESULT_COLUMNS:
            if name not in present:
                conn.execute(f'ALTER TABLE comparisons ADD COLUMN "{name}" TEXT')
        rows = conn.execute('SELECT "comparison_id", "options" FROM comparisons').fetchall()
        for comparison_id, options in rows:
            try:
                counts = json.loads(options).get("episode_counts")
            except (ValueError, AttributeError):
                counts = None
            if isinstance(counts, dict):
                conn.execute('UPDATE comparisons SET "episode_counts" = ? '
                             'WHERE "comparison_id" = ?', (json.dumps(counts), comparison_id))
    for statement in (_V2_SESSIONS, _V2_SESSION_TRIALS, PREREGISTRATIONS, RUN_LEASES):
        conn.execute(statement)


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    """Version 2 -> 3: session trials become episode records of one run per policy.

    ``sessions`` gains ``run_ids``; each session's runs are created and its
    ``session_trials`` rows inserted as episodes (:func:`~evalband.store._session_runs.
    migrate_session_trials`, every field kept), then ``session_trials`` is dropped;
    ``session_results`` is created empty.
    """
    from evalband.store._session_runs import migrate_session_trials

    if "run_ids" not in _columns(conn, "sessions"):
        conn.execute('ALTER TABLE sessions ADD COLUMN "run_ids" TEXT')
    migrate_session_trials(conn)
    conn.execute(SESSION_RESULTS)


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    """Version 3 -> 4: a run's checkpoint ``step``; robot sessions' tables.

    ``step`` is ``NULL`` for every older run; ``session_attempts`` and ``session_scenes`` are new.
    """
    if "step" not in _columns(conn, "runs"):
        conn.execute('ALTER TABLE runs ADD COLUMN "step" INTEGER')
    conn.execute(SESSION_ATTEMPTS)
    conn.execute(SESSION_SCENES)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}
"""``v`` -> the step from version ``v`` to ``v + 1``; one per version, applied in order."""


def migrate(conn: sqlite3.Connection, version: int) -> int:
    """Bring a file at ``version`` to :data:`SCHEMA_VERSION`, inside the caller's transaction.

    Returns:
        The version now written (``SCHEMA_VERSION``).

    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute('CREATE TABLE comparisons ("comparison_id" TEXT PRIMARY KEY, '
    ...                  '"run_ids" TEXT, "options" TEXT, "created_at" TEXT)')
    >>> _ = conn.execute("INSERT INTO comparisons VALUES (?, ?, ?, ?)",
    ...                  ("c", '["a", "b"]', '{"episode_counts": {"a": 3}}', "t"))
    >>> _ = conn.execute('CREATE TABLE runs ("run_id" TEXT PRIMARY KEY)')
    >>> migrate(conn, 1), conn.execute("SELECT episode_counts FROM comparisons").fetchone()
    (4, ('{"a": 3}',))
    """
    while version < SCHEMA_VERSION:
        MIGRATIONS[version](conn)
        version += 1
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return version


def read_compatible(conn: sqlite3.Connection) -> set[str]:
    """The ``comparisons`` columns a reader may select (a version-1 file lacks the result).

    >>> conn = sqlite3.connect(":memory:")
    >>> sorted(read_compatible(conn))
    []
    >>> _ = conn.execute(COMPARISONS)
    >>> "result" in read_compatible(conn)
    True
    """
    return set(_columns(conn, "comparisons"))
