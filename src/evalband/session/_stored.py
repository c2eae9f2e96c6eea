"""Stored session results: ``session analyze`` results and sequential looks, typed back.

``evalband session analyze`` stores its :class:`~evalband.session.SessionAnalysis` in the
store's ``session_results`` table (schema 3), under the options that change it
(:func:`analysis_options`, one definition for storing and reading) and the state of the
session's confirmed trials it was computed from (:func:`trials_state`): a stored result is
*current* while both are the same, and then the command, its ``--json``, its HTML section and
the viewer render it instead of computing it again. ``session run --until-decided`` stores
each look it takes at a block boundary (:class:`~evalband.session._sequential.SessionLook`).
The store speaks JSON; :meth:`SessionAnalysis.from_dict` gives the typed result back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalband.session._results import SessionAnalysis, typed_from_dict
from evalband.session._sequential import SessionLook

if TYPE_CHECKING:
    from evalband.session._store import SessionStore, TrialRecord

__all__ = [
    "StoredAnalysis",
    "StoredLook",
    "analysis_options",
    "trials_state",
    "store_analysis",
    "find_analysis",
    "latest_analysis",
    "store_look",
    "stored_looks",
]


@dataclass(frozen=True)
class StoredAnalysis:
    """A stored ``session analyze`` result.

    Attributes:
        result_id: its id in the store.
        session_id: the session.
        options: what it was computed under (:func:`analysis_options`).
        trials_state: the confirmed trials it read (:func:`trials_state`).
        analysis: the typed result.
        stopped_early: the early-stop sentence shown with it, if the stop rule ended the
            session.
        computed_at: when it was computed (UTC, ISO 8601).
        current: whether the session's trials are still those it read.
    """

    result_id: str
    session_id: str
    options: dict[str, Any]
    trials_state: str
    analysis: SessionAnalysis
    stopped_early: str | None
    computed_at: str
    current: bool


@dataclass(frozen=True)
class StoredLook:
    """A stored sequential look of ``session run --until-decided``.

    Attributes:
        session_id: the session.
        options: the stop rule's ``alpha`` and pre-registered ``comparisons``.
        look: the typed look (scenes done, decided, per comparison).
        computed_at: when it was taken.
    """

    session_id: str
    options: dict[str, Any]
    look: SessionLook
    computed_at: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def analysis_options(
    *,
    confidence: float = 0.95,
    prereg: tuple[str, str] | None = None,
    groupings: Sequence[str] = (),
    control_floor: float | None = None,
) -> dict[str, Any]:
    """The options a session analysis is stored under (each one that changes the result).

    ``prereg``: the pre-registration's ``(name, sha256)``; ``groupings``: the post-hoc
    ``--group`` texts in order.

    >>> analysis_options()
    {'confidence': 0.95, 'prereg': None, 'groupings': [], 'control_floor': None}
    """
    return {
        "confidence": float(confidence),
        "prereg": None if prereg is None else list(prereg),
        "groupings": list(groupings),
        "control_floor": None if control_floor is None else float(control_floor),
    }


def trials_state(records: Sequence[TrialRecord]) -> str:
    """A digest of what an analysis reads from the confirmed trials.

    Each trial's index, status, score, assisted flag and confirmation time: equal digests,
    equal analysis.

    >>> trials_state([]) == trials_state([])
    True
    """
    rows = sorted(
        (r.trial_index, r.status, r.score, bool(r.assisted), r.scored_at) for r in records
    )
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def store_analysis(
    store: SessionStore,
    session_id: str,
    options: Mapping[str, Any],
    state: str,
    analysis: SessionAnalysis,
    *,
    stopped_early: str | None = None,
) -> str:
    """Store (or replace) the analysis of a session under ``options``; its result id.

    >>> import tempfile
    >>> from evalband.session import SessionStore, analyze_session, plan_session
    >>> plan = plan_session(["A", "B"], scenes=2, attempts=1, seed=0, session_id="s")
    >>> with tempfile.TemporaryDirectory() as d, SessionStore(f"{d}/s.sqlite") as ss:
    ...     ss.create(plan)
    ...     _ = ss.record("s", 0, score=2)
    ...     state = trials_state(ss.records("s"))
    ...     result = analyze_session(plan, ss.trials("s"))
    ...     _ = store_analysis(ss, "s", analysis_options(), state, result)
    ...     found = find_analysis(ss, "s", analysis_options(), state)
    ...     _ = ss.record("s", 1, score=0)
    ...     latest = latest_analysis(ss, "s")
    >>> found.current, found.analysis == result, latest.current
    (True, True, False)
    """
    result_id = f"{session_id}:analysis:{_key(dict(options))}"
    payload = {"analysis": analysis.as_dict(), "stopped_early": stopped_early}
    with store.runs.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO session_results (result_id, session_id, kind, options, "
            "trials_state, result, computed_at) VALUES (?, ?, 'analysis', ?, ?, ?, ?)",
            (result_id, session_id, json.dumps(dict(options), sort_keys=True), state,
             json.dumps(payload), _now()),
        )
    return result_id


def _has_table(store: SessionStore) -> bool:
    return bool(store.runs.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_results'"
    ).fetchone())


def _analyses(store: SessionStore, session_id: str) -> list[tuple[Any, ...]]:
    if not _has_table(store):
        return []
    return store.runs.conn.execute(
        "SELECT result_id, options, trials_state, result, computed_at FROM session_results "
        "WHERE session_id = ? AND kind = 'analysis' ORDER BY computed_at DESC, rowid DESC",
        (session_id,),
    ).fetchall()


def _stored(session_id: str, row: tuple[Any, ...], state: str | None) -> StoredAnalysis:
    result_id, options, stored_state, text, computed_at = row
    payload = json.loads(text)
    return StoredAnalysis(
        result_id=str(result_id),
        session_id=session_id,
        options=json.loads(options),
        trials_state=str(stored_state),
        analysis=SessionAnalysis.from_dict(payload["analysis"]),
        stopped_early=payload.get("stopped_early"),
        computed_at=str(computed_at),
        current=state is not None and stored_state == state,
    )


def find_analysis(
    store: SessionStore, session_id: str, options: Mapping[str, Any], state: str
) -> StoredAnalysis | None:
    """The stored analysis under ``options``, when it read the trials ``state`` (current).

    See :func:`store_analysis` for an example.
    """
    wanted = json.loads(json.dumps(dict(options), sort_keys=True))
    for row in _analyses(store, session_id):
        if json.loads(row[1]) == wanted and row[2] == state:
            return _stored(session_id, row, state)
    return None


def latest_analysis(store: SessionStore, session_id: str) -> StoredAnalysis | None:
    """The session's most recent stored analysis (any options), marked current or not.

    See :func:`store_analysis` for an example.
    """
    rows = _analyses(store, session_id)
    if not rows:
        return None
    state = trials_state(store.records(session_id))
    return _stored(session_id, rows[0], state)


def store_look(
    store: SessionStore, session_id: str, options: Mapping[str, Any], look: SessionLook
) -> None:
    """Store a sequential look (one per scenes looked at and options; a later one replaces it).

    >>> import tempfile
    >>> from evalband.session import SessionStore, plan_session
    >>> with tempfile.TemporaryDirectory() as d, SessionStore(f"{d}/s.sqlite") as ss:
    ...     ss.create(plan_session(["A", "B"], scenes=2, attempts=1, seed=0, session_id="s"))
    ...     store_look(ss, "s", {"alpha": 0.05}, SessionLook(1, False, []))
    ...     [x.look.scenes_done for x in stored_looks(ss, "s")]
    [1]
    """
    result_id = f"{session_id}:look:{look.scenes_done}:{_key(dict(options))}"
    with store.runs.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO session_results (result_id, session_id, kind, options, "
            "trials_state, result, computed_at) VALUES (?, ?, 'look', ?, ?, ?, ?)",
            (result_id, session_id, json.dumps(dict(options), sort_keys=True),
             str(look.scenes_done), json.dumps(look.as_dict()), _now()),
        )


def stored_looks(store: SessionStore, session_id: str) -> list[StoredLook]:
    """The session's stored looks, in the order of the scenes they looked at.

    See :func:`store_look` for an example.
    """
    if not _has_table(store):
        return []
    rows = store.runs.conn.execute(
        "SELECT options, result, computed_at FROM session_results WHERE session_id = ? AND "
        "kind = 'look' ORDER BY CAST(trials_state AS INTEGER), computed_at", (session_id,),
    ).fetchall()
    return [
        StoredLook(session_id, json.loads(options), typed_from_dict(SessionLook, json.loads(r)),
                   str(at))
        for options, r, at in rows
    ]
