"""A writer lease on a run: one process writes a run at a time.

Several processes may write one store (different runs, WAL mode), but two writers on one
run would interleave its episodes and fight over its status. Before writing, the runner takes
the run's lease, a row in the ``run_leases`` table holding the writer's host, pid, process
start time and a heartbeat it renews while it works. A second writer is refused in one line
while the holder is alive; a holder that is gone (its pid is dead, or was reused by another
process, on this host; or its heartbeat is older than :data:`STALE_AFTER_S` on another host)
is taken over cleanly. Claiming is one ``BEGIN IMMEDIATE`` transaction, so two writers
racing for a free lease cannot both win.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING

from evalband.errors import StoreError

if TYPE_CHECKING:
    from evalband.store._sqlite import RunStore

__all__ = ["RunLease", "RunLockedError", "STALE_AFTER_S", "discard_empty_run"]

STALE_AFTER_S = 120.0
"""A holder on another host whose heartbeat is older than this is presumed dead."""

HEARTBEAT_S = 5.0
"""How often :meth:`RunLease.beat` renews the heartbeat at most."""

# The run_leases table is created with the store (evalband.store._schema.RUN_LEASES).


class RunLockedError(StoreError):
    """The run is being written by another live process."""


def _pid_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), to tell pid reuse apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def _alive(pid: int, pid_start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    if pid_start is None:
        return True
    now = _pid_start(pid)
    return now is None or now == pid_start


class RunLease:
    """The lease of one run, held by this process (a context manager).

    Args:
        store: the (writable) store.
        run_id: the run to write.

    Raises:
        RunLockedError: on enter, when a live process holds the run's lease.

    >>> import tempfile
    >>> from evalband.store import open_store
    >>> from evalband.store._manifest import _example
    >>> with tempfile.TemporaryDirectory() as d, open_store(f"{d}/s.sqlite") as st:
    ...     st.create_run(_example())
    ...     with RunLease(st, "r1"):
    ...         try:
    ...             RunLease(st, "r1", pid=1).__enter__()  # pid 1 is alive: refused
    ...         except RunLockedError as exc:
    ...             print(str(exc)[:32])
    run 'r1' is being written by pid
    """

    def __init__(self, store: RunStore, run_id: str, *, pid: int | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.pid = os.getpid() if pid is None else pid
        self.host = socket.gethostname()
        self._last_beat = 0.0

    def __enter__(self) -> RunLease:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lease, or take it over from a dead holder; refuse a live one."""
        now = time.time()
        with self.store.transaction() as conn:
            row = conn.execute(
                'SELECT "host", "pid", "pid_start", "acquired_at", "heartbeat" FROM run_leases '
                "WHERE run_id = ?",
                (self.run_id,),
            ).fetchone()
            if row is not None:
                host, pid, pid_start, since, beat = str(row[0]), int(row[1]), row[2], row[3], row[4]
                mine = host == self.host and pid == self.pid
                if not mine and self._holder_alive(host, pid, pid_start, float(beat), now):
                    where = "this host" if host == self.host else f"host {host}"
                    raise RunLockedError(
                        f"run {self.run_id!r} is being written by pid {pid} on {where} (since "
                        f"{since}); a run has one writer: wait for it to finish, or stop it "
                        "and resume then"
                    )
            conn.execute(
                'INSERT OR REPLACE INTO run_leases ("run_id", "host", "pid", "pid_start", '
                '"acquired_at", "heartbeat") VALUES (?, ?, ?, ?, ?, ?)',
                (self.run_id, self.host, self.pid, _pid_start(self.pid),
                 datetime.now(UTC).isoformat(timespec="seconds"), now),
            )
        self._last_beat = time.monotonic()

    def _holder_alive(
        self, host: str, pid: int, pid_start: str | None, beat: float, now: float
    ) -> bool:
        if host == self.host:
            return _alive(pid, None if pid_start is None else str(pid_start))
        return now - beat < STALE_AFTER_S

    def beat(self) -> None:
        """Renew the heartbeat (at most every :data:`HEARTBEAT_S` seconds; cheap otherwise)."""
        if time.monotonic() - self._last_beat < HEARTBEAT_S:
            return
        self._last_beat = time.monotonic()
        with self.store._lock:
            self.store.conn.execute(
                "UPDATE run_leases SET heartbeat = ? WHERE run_id = ? AND pid = ? AND host = ?",
                (time.time(), self.run_id, self.pid, self.host),
            )

    def release(self) -> None:
        """Give the lease back (only if this process still holds it)."""
        if self.store._conn is None:
            return
        with self.store._lock:
            self.store.conn.execute(
                "DELETE FROM run_leases WHERE run_id = ? AND pid = ? AND host = ?",
                (self.run_id, self.pid, self.host),
            )


def discard_empty_run(store: RunStore, run_id: str) -> bool:
    """Remove a run that holds no episode (a run that failed before its first episode).

    Returns:
        Whether the run was removed (``False`` when it holds episodes or is not stored).
    """
    with store.transaction() as conn:
        row = conn.execute("SELECT 1 FROM episodes WHERE run_id = ? LIMIT 1", (run_id,)).fetchone()
        if row is not None:
            return False
        return conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount > 0
