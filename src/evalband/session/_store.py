"""Hardware sessions in the run store: the plan, one run per policy, one episode per trial.

A session lives in the run store's SQLite file (WAL, ``application_id``, foreign files
refused: :class:`~evalband.store.RunStore` opens it). ``sessions`` holds each plan as JSON and
its run ids; each policy of the session is a run and each confirmed action (a score or a
skip) one :class:`~evalband.episode.EpisodeRecord` of that run (scene = cell, attempt =
repeat; the mapping is :mod:`evalband.store._session_runs`), so ``compare``, ``report``,
export and the viewer read a session's policies like any other runs. Each trial is committed
on its own with ``synchronous=FULL`` before the operator sees the next one: a session killed
at any moment keeps every confirmed trial exactly once, and running it again resumes at the
first trial with no episode.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from evalband.errors import InvalidInputError, SessionNotFoundError, StoreError
from evalband.session._plan import SessionPlan
from evalband.store import RunStore
from evalband.store._session_runs import (
    TRIAL_FIELDS,
    create_session_runs,
    mark_finished,
    read_trials,
    session_panel,
    trial_episode,
    trial_fields,
)
from evalband.store._sqlite import DEFAULT_STORE_PATH

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SessionStore",
    "TrialRecord",
    "TRIAL_COLUMNS",
    "TRIAL_STATUSES",
    "load_session",
]

TRIAL_STATUSES = ("pending", "scored", "skipped")
"""A planned trial's status: no row yet, scored, or skipped (recorded, not scored)."""

TRIAL_COLUMNS = (
    "trial_index",
    "scene",
    "attempt",
    "policy",
    "code",
    "position",
    "status",
    "score",
    "success",
    "assisted",
    "note",
    "exit_code",
    "duration_s",
    "scored_at",
)
"""The columns of :meth:`SessionStore.trials`, one row per planned trial, in this order."""

# The sessions table is created (and migrated) with the store, under its one schema version
# (evalband.store._schema.SESSIONS); trials are episodes of the session's runs. A store of
# schema 2 opened read-only still keeps them in its session_trials table (read as it is).
_ROW_FIELDS = tuple(f for f in TRIAL_FIELDS if f != "seq")  # schema 2 kept no seq
_SELECT_LEGACY = (
    "SELECT " + ", ".join(f'"{n}"' for n in _ROW_FIELDS) + " FROM session_trials "
    'WHERE "session_id" = ? ORDER BY "trial_index"'
)
_SEQ = "json_extract(\"extra\", '$.session.seq')"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class TrialRecord:
    """One confirmed trial as stored: a score (or a skip) and what the trial command left.

    Attributes:
        session_id: the session.
        trial_index: the planned trial (``Trial.index``).
        status: ``"scored"`` or ``"skipped"``.
        score: the rubric level, ``None`` when skipped.
        success: ``score >= rubric.success_at``, ``None`` when skipped.
        assisted: the operator helped (an unaided success excludes it).
        note: the operator's note, if any.
        exit_code: the trial command's exit status, ``None`` without a command.
        duration_s: the trial command's wall time in seconds.
        output_tail: the last lines of the trial command's output.
        scored_at: UTC time of the confirmation (ISO 8601).
        play: a robot session's play of the trial (``None`` otherwise): its attempt, robot,
            operator (``"human"``, or ``"suggested"`` in a rehearsal), the machine's
            suggestion, how the trial started and ended, its timing and the media
            references of its clip and step data.

    >>> TrialRecord("s", 0, "skipped", None, None, False, None, None, None, None, "t").status
    'skipped'
    """

    session_id: str
    trial_index: int
    status: str
    score: int | None
    success: bool | None
    assisted: bool
    note: str | None
    exit_code: int | None
    duration_s: float | None
    output_tail: str | None
    scored_at: str
    play: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict.

        >>> TrialRecord("s", 3, "scored", 2, True, False, None, 0, 1.5, "ok", "t").as_dict()[
        ...     "score"]
        2
        """
        return {name: getattr(self, name) for name in _ROW_FIELDS}


def _record_from_row(row: tuple[Any, ...]) -> TrialRecord:
    return _record_from_fields(dict(zip(_ROW_FIELDS, row, strict=True)))


def _record_from_fields(data: dict[str, Any]) -> TrialRecord:
    return TrialRecord(
        session_id=str(data["session_id"]),
        trial_index=int(data["trial_index"]),
        status=str(data["status"]),
        score=None if data["score"] is None else int(data["score"]),
        success=None if data["success"] is None else bool(data["success"]),
        assisted=bool(data["assisted"]),
        note=data["note"],
        exit_code=None if data["exit_code"] is None else int(data["exit_code"]),
        duration_s=None if data["duration_s"] is None else float(data["duration_s"]),
        output_tail=data["output_tail"],
        scored_at=str(data["scored_at"]),
        play=data.get("play"),
    )


class SessionStore:
    """Hardware sessions kept in the run store's SQLite file.

    The session tables are the store's own (created and migrated with it); with
    ``read_only=True`` a store of an older schema without them reads as empty.

    Args:
        store: the store file (:data:`~evalband.store.DEFAULT_STORE_PATH` when ``None``) or an
            open :class:`~evalband.store.RunStore` (left open by :meth:`close`).
        read_only: open the file read-only (``show`` uses it; never blocks a writer).

    Raises:
        StoreError: when the file is not an evalband store (see ``RunStore``).

    >>> import tempfile
    >>> from evalband.session import plan_session
    >>> plan = plan_session(["A", "B"], scenes=2, attempts=1, seed=1, session_id="demo")
    >>> with tempfile.TemporaryDirectory() as d, SessionStore(f"{d}/s.sqlite") as ss:
    ...     ss.create(plan)
    ...     rec = ss.record("demo", 0, score=2, note="clean grasp")
    ...     _ = ss.record("demo", 1, status="skipped")
    ...     print(rec.success, ss.next_pending("demo"), ss.undo_last("demo").status)
    ...     print(ss.trials("demo")["status"].tolist())
    True 2 skipped
    ['scored', 'pending', 'pending', 'pending']
    """

    def __init__(self, store: str | Path | RunStore | None = None, *, read_only: bool = False):
        if isinstance(store, RunStore):
            self.runs, self._owned = store, False
        else:
            path = DEFAULT_STORE_PATH if store is None else Path(store)
            self.runs, self._owned = RunStore(path, read_only=read_only), True
        self.read_only = bool(getattr(self.runs, "read_only", False))
        self._plans: dict[str, SessionPlan] = {}
        self._run_ids: dict[str, dict[str, str]] = {}
        self._panels: dict[str, tuple[Any, dict[tuple[str, int, int], int]]] = {}

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self.runs.path

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the store (idempotent); a ``RunStore`` passed in stays open."""
        if self._owned:
            self.runs.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionStore({str(self.path)!r})"

    # -- sessions ------------------------------------------------------------------------

    def _has_tables(self) -> bool:
        row = self.runs.conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'sessions'"
        ).fetchone()
        return int(row[0]) == 1

    @property
    def _legacy(self) -> bool:
        """A schema-2 store opened read-only: its trials are still in ``session_trials``."""
        return int(getattr(self.runs, "schema_version", 3)) < 3

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError(f"the run store {self.path} is open read-only; cannot write")

    def create(self, plan: SessionPlan) -> None:
        """Store a new session's plan.

        Raises:
            StoreError: when a session with the same id is already stored (or the store is
                read-only).
        """
        self._writable()
        try:
            with self.runs.transaction() as conn:
                conn.execute(
                    "INSERT INTO sessions (session_id, created_at, policies, scenes, attempts, "
                    "seed, blind, n_trials, plan) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        plan.session_id,
                        plan.created_at,
                        json.dumps(list(plan.policies)),
                        plan.scenes,
                        plan.attempts,
                        plan.seed,
                        1 if plan.blind else 0,
                        plan.n_trials,
                        json.dumps(plan.as_dict()),
                    ),
                )
                ids = create_session_runs(conn, plan.as_dict())
                conn.execute("UPDATE sessions SET run_ids = ? WHERE session_id = ?",
                             (json.dumps(ids), plan.session_id))
        except sqlite3.IntegrityError:
            raise StoreError(
                f"session {plan.session_id!r} already exists in {self.path}; choose another "
                f"`session_id`, or continue it with: evalband session run {plan.session_id}",
                parameters=("session_id",),
            ) from None
        self._run_ids.pop(plan.session_id, None)

    def run_ids(self, session_id: str) -> dict[str, str]:
        """Each policy's run id (``{}`` for a schema-2 store opened read-only).

        Raises:
            SessionNotFoundError: unknown session.

        >>> import tempfile
        >>> from evalband.session import plan_session
        >>> with tempfile.TemporaryDirectory() as d, SessionStore(f"{d}/s.sqlite") as ss:
        ...     ss.create(plan_session(["A", "B/2"], scenes=1, attempts=1, seed=0,
        ...                            session_id="s1"))
        ...     print(ss.run_ids("s1"))
        {'A': 's1:A', 'B/2': 's1:B_2'}
        """
        self.plan(session_id)
        if session_id not in self._run_ids:
            if self._legacy:
                return {}
            (text,) = self.runs.conn.execute(
                "SELECT run_ids FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            self._run_ids[session_id] = {str(k): str(v) for k, v in json.loads(text).items()}
        return dict(self._run_ids[session_id])

    def _runs_where(self, session_id: str) -> tuple[str, list[str]]:
        ids = list(self.run_ids(session_id).values())
        return f"run_id IN ({', '.join('?' for _ in ids)})", ids

    def get_plan(self, session_id: str) -> SessionPlan | None:
        """The session's plan, or ``None`` when it is not stored."""
        if session_id in self._plans:
            return self._plans[session_id]
        if not self._has_tables():
            return None
        row = self.runs.conn.execute(
            "SELECT plan FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        plan = SessionPlan.from_dict(json.loads(row[0]))
        self._plans[session_id] = plan
        return plan

    def session_ids(self) -> list[str]:
        """The stored session ids, newest first."""
        if not self._has_tables():
            return []
        rows = self.runs.conn.execute(
            "SELECT session_id FROM sessions ORDER BY created_at DESC, rowid DESC"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def plan(self, session_id: str) -> SessionPlan:
        """The session's plan.

        Raises:
            SessionNotFoundError: when no such session is stored; the message lists the
                known session ids.
        """
        plan = self.get_plan(session_id)
        if plan is None:
            known = self.session_ids()
            shown = ", ".join(known[:10]) + (f" (and {len(known) - 10} more)" if len(known) > 10
                                             else "")
            hint = (
                f"known sessions: {shown}" if known
                else "the store holds no sessions yet; create one with evalband session plan"
            )
            raise SessionNotFoundError(
                f"session {session_id!r} is not in the store {self.path}; {hint}"
            )
        return plan

    def sessions(self) -> list[SessionPlan]:
        """Every stored session's plan, newest first."""
        return [self.plan(sid) for sid in self.session_ids()]

    # -- trials: writing -----------------------------------------------------------------

    def record(
        self,
        session_id: str,
        trial_index: int,
        *,
        status: str = "scored",
        score: int | None = None,
        assisted: bool = False,
        note: str | None = None,
        exit_code: int | None = None,
        duration_s: float | None = None,
        output_tail: str | None = None,
        scored_at: str | None = None,
        play: dict[str, Any] | None = None,
    ) -> TrialRecord:
        """Store one confirmed trial; it is durable on disk when this returns.

        Args:
            session_id: the session.
            trial_index: the planned trial's index.
            status: ``"scored"`` (``score`` required) or ``"skipped"`` (no score).
            score: a rubric level; success follows from the rubric.
            assisted: the operator helped.
            note: free text (an empty note is stored as ``None``).
            exit_code: the trial command's exit status.
            duration_s: the trial command's wall time.
            output_tail: the last lines of the trial command's output.
            scored_at: ISO time; now (UTC) when ``None``.
            play: what a robot session's play of the trial left (see :class:`TrialRecord`).

        Returns:
            The stored :class:`TrialRecord`.

        Raises:
            SessionNotFoundError: unknown session.
            InvalidInputError: a trial index outside the plan, an unknown status, a score that
                is not a rubric level, or a score given with a skip.
            StoreError: when the trial is already recorded (undo it first).
        """
        self._writable()
        plan = self.plan(session_id)
        if isinstance(trial_index, bool) or not isinstance(trial_index, int) or not (
            0 <= trial_index < plan.n_trials
        ):
            raise InvalidInputError(
                f"trial index must be 0..{plan.n_trials - 1} for session {session_id!r}; "
                f"got {trial_index!r}"
            )
        success: bool | None
        if status == "scored":
            if score is None:
                raise InvalidInputError(
                    f"a scored trial needs a score, one of {list(plan.rubric.levels)}"
                )
            success = plan.rubric.is_success(score)
        elif status == "skipped":
            if score is not None:
                raise InvalidInputError(f"a skipped trial has no score; got score {score!r}")
            success = None
        else:
            raise InvalidInputError(
                f"trial status must be 'scored' or 'skipped'; got {status!r}"
            )
        if duration_s is not None and not math.isfinite(float(duration_s)):
            duration_s = None
        record = TrialRecord(
            session_id=session_id,
            trial_index=trial_index,
            status=status,
            score=score,
            success=success,
            assisted=bool(assisted),
            note=(note.strip() or None) if isinstance(note, str) else None,
            exit_code=None if exit_code is None else int(exit_code),
            duration_s=None if duration_s is None else float(duration_s),
            output_tail=output_tail,
            scored_at=scored_at or _now(),
            play=None if play is None else dict(play),
        )
        trial = plan.trials[trial_index]
        run_id = self.run_ids(session_id)[trial.policy]
        where, ids = self._runs_where(session_id)
        panel = self._panel(plan)
        with self.runs.transaction() as conn:
            (seq,) = conn.execute(
                f"SELECT COALESCE(MAX({_SEQ}), 0) + 1 FROM episodes WHERE {where}", ids
            ).fetchone()
            episode = trial_episode(
                trial.as_dict(), {**record.as_dict(), "seq": int(seq), "play": record.play},
                run_id=run_id,
                panel=panel[0], seeds=panel[1],
            )
            try:
                self.runs.add_episode(episode)
            except StoreError:
                raise StoreError(
                    f"trial {trial_index + 1} of session {session_id!r} is already recorded "
                    f"in {self.path}; each trial is recorded once (undo it first to change it)"
                ) from None
            mark_finished(conn, [run_id])
        return record

    def _panel(self, plan: SessionPlan) -> tuple[Any, dict[tuple[str, int, int], int]]:
        """The session's panel and its condition seeds (computed once per session)."""
        if plan.session_id not in self._panels:
            panel = session_panel(plan.as_dict())
            seeds = {spec.key: spec.condition_seed for spec in panel.episode_specs()}
            self._panels[plan.session_id] = (panel, seeds)
        return self._panels[plan.session_id]

    def undo_last(self, session_id: str) -> TrialRecord | None:
        """Delete the most recently confirmed trial of the session and return it.

        Returns:
            The deleted record, or ``None`` when the session has no recorded trial.

        Raises:
            SessionNotFoundError: unknown session.
        """
        self._writable()
        self.plan(session_id)
        where, ids = self._runs_where(session_id)
        with self.runs.transaction() as conn:
            row = conn.execute(
                f"SELECT run_id, cell, episode, repeat FROM episodes WHERE {where} "
                f"ORDER BY {_SEQ} DESC LIMIT 1", ids,
            ).fetchone()
            if row is None:
                return None
            (found,) = self.runs.episode_records(
                row[0], where=f"cell = {_quote(row[1])} AND episode = {int(row[2])} "
                f"AND repeat = {int(row[3])}"
            )
            conn.execute(
                "DELETE FROM episodes WHERE run_id = ? AND cell = ? AND episode = ? "
                "AND repeat = ?", tuple(row),
            )
            mark_finished(conn, [str(row[0])])
        return _record_from_fields(trial_fields(found))

    # -- trials: reading -----------------------------------------------------------------

    def records(self, session_id: str) -> list[TrialRecord]:
        """The recorded trials (scored and skipped), in trial order, with output tails.

        Raises:
            SessionNotFoundError: unknown session.
        """
        self.plan(session_id)
        if self._legacy:
            rows = self.runs.conn.execute(_SELECT_LEGACY, (session_id,)).fetchall()
            return [_record_from_row(r) for r in rows]
        found = [_record_from_fields(fields) for fields in self._trial_fields(session_id)]
        return sorted(found, key=lambda r: r.trial_index)

    def _trial_fields(self, session_id: str) -> list[dict[str, Any]]:
        """The confirmed trials' fields, read from the episodes of the session's runs."""
        return read_trials(self.runs.conn, list(self.run_ids(session_id).values()))

    def last_record(self, session_id: str) -> TrialRecord | None:
        """The most recently confirmed trial (what :meth:`undo_last` would delete)."""
        records = self._records_by_seq(session_id)
        return records[-1] if records else None

    def _records_by_seq(self, session_id: str) -> list[TrialRecord]:
        """The recorded trials in the order they were confirmed."""
        if self._legacy:
            rows = self.runs.conn.execute(
                _SELECT_LEGACY.replace('ORDER BY "trial_index"', 'ORDER BY "seq"'), (session_id,)
            ).fetchall()
            return [_record_from_row(r) for r in rows]
        found = [
            (int(fields["seq"]), _record_from_fields(fields))
            for fields in self._trial_fields(session_id)
        ]
        return [record for _, record in sorted(found, key=lambda pair: pair[0])]

    def next_pending(self, session_id: str) -> int | None:
        """The index of the first planned trial with no record, ``None`` when all are done.

        Raises:
            SessionNotFoundError: unknown session.
        """
        plan = self.plan(session_id)
        done = {r.trial_index for r in self.records(session_id)}
        return next((t.index for t in plan.trials if t.index not in done), None)

    def counts(self, session_id: str) -> dict[str, int]:
        """Trials per status (``pending``, ``scored``, ``skipped``) and ``total``.

        Raises:
            SessionNotFoundError: unknown session.
        """
        plan = self.plan(session_id)
        counts = dict.fromkeys(TRIAL_STATUSES, 0)
        for record in self.records(session_id):
            counts[record.status] += 1
        counts["pending"] = plan.n_trials - counts["scored"] - counts["skipped"]
        counts["total"] = plan.n_trials
        return counts

    def trials(self, session_id: str) -> pd.DataFrame:
        """One row per planned trial with its status and score (:data:`TRIAL_COLUMNS`).

        ``score`` and ``exit_code`` are nullable ``Int64``, ``success`` nullable ``boolean``
        (``<NA>`` unless scored), ``assisted`` ``bool``, ``duration_s`` ``float64`` (NaN when
        missing); ``note`` and ``scored_at`` are strings or ``None``. Output tails are in
        :meth:`records`.

        Raises:
            SessionNotFoundError: unknown session.
        """
        plan = self.plan(session_id)
        return _trials_frame(plan, self.records(session_id))


def _quote(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def _trials_frame(plan: SessionPlan, records: list[TrialRecord]) -> pd.DataFrame:
    import pandas as pd

    by_index = {r.trial_index: r for r in records}
    rows = [(t, by_index.get(t.index)) for t in plan.trials]
    columns: dict[str, Any] = {
        "trial_index": pd.Series([t.index for t, _ in rows], dtype="int64"),
        "scene": pd.Series([t.scene for t, _ in rows], dtype="int64"),
        "attempt": pd.Series([t.attempt for t, _ in rows], dtype="int64"),
        "policy": pd.Series([t.policy for t, _ in rows], dtype=object),
        "code": pd.Series([t.code for t, _ in rows], dtype=object),
        "position": pd.Series([t.position for t, _ in rows], dtype="int64"),
        "status": pd.Series([r.status if r else "pending" for _, r in rows], dtype=object),
        "score": pd.Series([r.score if r else None for _, r in rows], dtype="Int64"),
        "success": pd.Series([r.success if r else None for _, r in rows], dtype="boolean"),
        "assisted": pd.Series([bool(r and r.assisted) for _, r in rows], dtype="bool"),
        "note": pd.Series([r.note if r else None for _, r in rows], dtype=object),
        "exit_code": pd.Series([r.exit_code if r else None for _, r in rows], dtype="Int64"),
        "duration_s": pd.Series(
            [r.duration_s if r and r.duration_s is not None else math.nan for _, r in rows],
            dtype="float64",
        ),
        "scored_at": pd.Series([r.scored_at if r else None for _, r in rows], dtype=object),
    }
    return pd.DataFrame(columns, columns=list(TRIAL_COLUMNS))


def load_session(
    store_path: str | Path | None, session_id: str
) -> tuple[SessionPlan, pd.DataFrame]:
    """The session's plan and its trials frame (:meth:`SessionStore.trials`), read-only.

    Args:
        store_path: the store file (default store when ``None``).
        session_id: the session.

    Raises:
        StoreError: no store at the path; SessionNotFoundError: unknown session.

    >>> import tempfile
    >>> from evalband.session import plan_session
    >>> d = tempfile.mkdtemp()
    >>> with SessionStore(f"{d}/s.sqlite") as ss:
    ...     ss.create(plan_session(["A"], scenes=1, attempts=2, seed=0, session_id="x"))
    ...     _ = ss.record("x", 1, score=0)
    >>> plan, df = load_session(f"{d}/s.sqlite", "x")
    >>> plan.n_trials, df["status"].tolist()
    (2, ['pending', 'scored'])
    """
    with SessionStore(store_path, read_only=True) as store:
        plan = store.plan(session_id)
        return plan, store.trials(session_id)
