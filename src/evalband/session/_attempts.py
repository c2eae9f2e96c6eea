"""Robot sessions in the store: every play of a trial, and each scene's captured start state.

A confirmed trial is one episode (:mod:`evalband.session._store`); what happens before it is
confirmed lives here, in the store's tables ``session_attempts`` and ``session_scenes``
(schema 4, created with the store):

* each **play** of a trial on the robot is an attempt row, written ``running`` before the
  first action is sent and closed as ``played`` (the policy phase, stress and return home
  ran; its result holds the end, the suggestion, the timing and the media references),
  ``aborted`` (the operator or Ctrl-C stopped it), ``failed`` (a policy or robot exception:
  ``reason`` has it) or ``interrupted`` (found ``running`` when a session resumed: the
  process died). Only a ``played`` attempt can be scored; an aborted, failed or interrupted
  one leaves its trial pending and is kept, so what happened is never lost;
* each scene's **capture** (the pose and the last two observations, the frames as PNG in
  the media area, a simulator's scene state) is written once, durably, the moment it is
  taken; later trials of the scene are re-placed to it.

The clip and the step data of a play are written to the media area (``fsync``-ed) before its
attempt is closed, so a played attempt's references always resolve.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.session._png import png_array, png_bytes

if TYPE_CHECKING:
    from evalband.session._store import SessionStore

__all__ = ["ATTEMPT_STATUSES", "AttemptLog", "AttemptRecord", "load_frame"]

ATTEMPT_STATUSES = ("running", "played", "aborted", "failed", "interrupted")
"""What became of a play of a trial."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class AttemptRecord:
    """One play of a trial (a row of ``session_attempts``).

    Attributes:
        attempt_id: ``<session>:<trial index>:<n>``.
        session_id: the session.
        trial_index: the planned trial.
        n: the play's number for this trial (1, 2, ... after aborts).
        status: one of :data:`ATTEMPT_STATUSES`.
        robot: the robot it ran on (``sim-arm``, ``lerobot:so101_follower``).
        operator: ``"human"`` or ``"suggested"`` (a rehearsal accepting the suggestions).
        started_at: UTC start time.
        ended_at: UTC end time (``None`` while running).
        reason: why it was aborted or failed.
        result: what the play left (JSON: end, suggestion, timing, media references).
    """

    attempt_id: str
    session_id: str
    trial_index: int
    n: int
    status: str
    robot: str
    operator: str
    started_at: str
    ended_at: str | None
    reason: str | None
    result: dict[str, Any]


_COLUMNS = ("attempt_id", "session_id", "trial_index", "n", "status", "robot", "operator",
            "started_at", "ended_at", "reason", "result")


def _record(row: tuple[Any, ...]) -> AttemptRecord:
    data = dict(zip(_COLUMNS, row, strict=True))
    data["result"] = json.loads(data["result"]) if data["result"] else {}
    return AttemptRecord(**data)


class AttemptLog:
    """The attempts and captures of the sessions in ``store`` (a writable SessionStore).

    >>> import tempfile
    >>> from evalband.session import SessionStore, plan_session
    >>> with tempfile.TemporaryDirectory() as d, SessionStore(f"{d}/s.sqlite") as ss:
    ...     ss.create(plan_session(["A"], scenes=1, attempts=2, seed=0, session_id="s"))
    ...     log = AttemptLog(ss)
    ...     a = log.start("s", 0, "sim-arm", "human")
    ...     log.finish(a.attempt_id, "aborted", reason="operator")
    ...     b = log.start("s", 0, "sim-arm", "human")
    ...     print(a.attempt_id, b.n, [r.status for r in log.attempts("s")])
    s:0:1 2 ['aborted', 'running']
    """

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    @property
    def _conn(self) -> Any:
        return self.store.runs.conn

    def _has(self, table: str) -> bool:
        row = self._conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                                 "AND name = ?", (table,)).fetchone()
        return int(row[0]) == 1

    # -- attempts --------------------------------------------------------------------------

    def start(self, session_id: str, trial_index: int, robot: str,
              operator: str) -> AttemptRecord:
        """Open a play of the trial (``running``), durable before the robot moves."""
        with self.store.runs.transaction() as conn:
            (n,) = conn.execute(
                'SELECT COALESCE(MAX("n"), 0) + 1 FROM session_attempts WHERE "session_id" = ? '
                'AND "trial_index" = ?', (session_id, int(trial_index))).fetchone()
            attempt_id = f"{session_id}:{int(trial_index)}:{int(n)}"
            row = (attempt_id, session_id, int(trial_index), int(n), "running", robot,
                   operator, _now(), None, None, None)
            conn.execute(f"INSERT INTO session_attempts ({', '.join(_COLUMNS)}) VALUES "
                         f"({', '.join('?' for _ in _COLUMNS)})", row)
        return _record(row)

    def finish(self, attempt_id: str, status: str, *, reason: str | None = None,
               result: dict[str, Any] | None = None) -> None:
        """Close a play: ``played``, ``aborted``, ``failed`` or ``interrupted`` (durable)."""
        if status not in ATTEMPT_STATUSES[1:]:
            raise ValueError(f"an attempt ends {ATTEMPT_STATUSES[1:]}; got {status!r}")
        with self.store.runs.transaction() as conn:
            conn.execute(
                'UPDATE session_attempts SET "status" = ?, "ended_at" = ?, "reason" = ?, '
                '"result" = ? WHERE "attempt_id" = ?',
                (status, _now(), reason, None if result is None else json.dumps(result),
                 attempt_id))

    def attempts(self, session_id: str, trial_index: int | None = None) -> list[AttemptRecord]:
        """The plays of a session (or of one trial), in the order they started."""
        if not self._has("session_attempts"):
            return []
        where, args = '"session_id" = ?', [session_id]
        args_any: list[Any] = list(args)
        if trial_index is not None:
            where += ' AND "trial_index" = ?'
            args_any.append(int(trial_index))
        rows = self._conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM session_attempts WHERE {where} "
            'ORDER BY "started_at", "trial_index", "n"', args_any).fetchall()
        return [_record(r) for r in rows]

    def played(self, session_id: str, trial_index: int) -> AttemptRecord | None:
        """The trial's latest ``played`` attempt (what its score is about), if any."""
        found = [a for a in self.attempts(session_id, trial_index) if a.status == "played"]
        return found[-1] if found else None

    def interrupt_stale(self, session_id: str) -> list[AttemptRecord]:
        """Mark plays left ``running`` by a process that died as ``interrupted``; them."""
        stale = [a for a in self.attempts(session_id) if a.status == "running"]
        for attempt in stale:
            self.finish(attempt.attempt_id, "interrupted",
                        reason="the session stopped during this play (process ended)")
        return stale

    # -- captures --------------------------------------------------------------------------

    def capture(self, session_id: str, scene: int) -> dict[str, Any] | None:
        """The scene's stored capture (``None`` before one is taken)."""
        if not self._has("session_scenes"):
            return None
        row = self._conn.execute(
            'SELECT "capture", "attempt_id", "captured_at" FROM session_scenes '
            'WHERE "session_id" = ? AND "scene" = ?', (session_id, int(scene))).fetchone()
        if row is None:
            return None
        return {**json.loads(row[0]), "attempt_id": row[1], "captured_at": row[2]}

    def save_capture(self, session_id: str, scene: int, attempt_id: str, how: str, t: float,
                     pose: dict[str, float], states: list[dict[str, float]],
                     frames: list[dict[str, np.ndarray]],
                     sim_state: dict[str, Any] | None) -> dict[str, Any]:
        """Store a scene's capture (frames as PNG in the media area) once; the stored one.

        A scene keeps its first capture: a second is ignored (the stored one is returned).
        """
        from evalband.store._media import store_media_bytes

        existing = self.capture(session_id, scene)
        if existing is not None:
            return existing
        refs = [{camera: store_media_bytes(self.store.path, png_bytes(image),
                                           content_type="image/png", kind="reference")
                 for camera, image in shot.items()} for shot in frames]
        capture = {"how": how, "t": float(t), "pose": pose, "states": states,
                   "frames": refs, "sim_state": sim_state}
        with self.store.runs.transaction() as conn:
            conn.execute(
                'INSERT OR IGNORE INTO session_scenes ("session_id", "scene", "attempt_id", '
                '"captured_at", "capture") VALUES (?, ?, ?, ?, ?)',
                (session_id, int(scene), attempt_id, _now(), json.dumps(capture)))
        stored = self.capture(session_id, scene)
        assert stored is not None
        return stored


    def save_region(self, session_id: str, scene: int,
                    region: list[float] | None) -> dict[str, Any]:
        """Keep the operator's alignment region with the scene's capture (``None`` clears it).

        The region is ``[x0, y0, x1, y1]`` in fractions of the frame: where the console's
        ghost overlay measures how far the block is from its reference (drawn once per
        scene). The stored capture is returned.

        Raises:
            InvalidInputError: the scene has no capture yet (nothing to align to).
        """
        from evalband.errors import InvalidInputError

        with self.store.runs.transaction() as conn:
            row = conn.execute('SELECT "capture" FROM session_scenes WHERE "session_id" = ? '
                               'AND "scene" = ?', (session_id, int(scene))).fetchone()
            if row is None:
                raise InvalidInputError(f"scene {int(scene)} has no captured start state yet: "
                                        "a region is drawn on its reference frame")
            capture = json.loads(row[0])
            capture["region"] = None if region is None else [float(v) for v in region]
            conn.execute('UPDATE session_scenes SET "capture" = ? WHERE "session_id" = ? AND '
                         '"scene" = ?', (json.dumps(capture), session_id, int(scene)))
        stored = self.capture(session_id, scene)
        assert stored is not None
        return stored


def load_frame(store_path: Any, ref: dict[str, Any]) -> np.ndarray | None:
    """A stored reference frame (PNG in the media area) as an RGB array, or ``None``."""
    from evalband.store._media import media_file

    path = media_file(store_path, ref)
    if path is None:
        return None
    return png_array(path.read_bytes())
