"""The episode in flight, named when the process playing it crashes.

A crash of the process that plays an episode (a segfault in an env's or a policy's C code)
names it, so a resume records it as an error and goes on.

The process backend isolates each episode in a worker already (a worker that dies is an
``error`` episode). The driver plays episodes itself (the serial backend; the process
backend while its workers start), and a fatal signal there used to end the run with exit
139 and nothing said: every resume then died on the same episode.

:class:`FlightRecorder` writes the key of each episode before it is played into a small file
beside the store (``.evalband-inflight/<run id>``, a ``pwrite`` of 256 bytes at offset 0) and
points Python's :mod:`faulthandler` at the same file, after those bytes: a fatal signal
(SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL) appends ``Fatal Python error: ...`` there. A run
that ends in any other way (finished, Ctrl-C, an exception, and ``kill -9``, which nothing
can catch and which is no fault of the episode) leaves no fatal text, so its resume replays
the episode as usual. :func:`crashed_episode` reads the file on a resume.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
from pathlib import Path
from typing import Any

from evalband.episode import EpisodeSpec

__all__ = ["FlightRecorder", "crashed_episode", "flight_path"]

_KEY_BYTES = 256
_FATAL = b"Fatal Python error"


def flight_path(store_path: str | Path, run_id: str) -> Path:
    """Where a run's in-flight marker lives (beside its store).

    >>> flight_path("/x/evalband.sqlite", "r1").as_posix()
    '/x/.evalband-inflight/r1'
    """
    return Path(store_path).parent / ".evalband-inflight" / run_id


class FlightRecorder:
    """Notes each episode before it is played; a fatal signal appends its cause.

    A context manager: :mod:`faulthandler` points at the marker inside the block and is put
    back as it was after (to ``sys.stderr`` when it was enabled), and the marker is removed.
    """

    def __init__(self, store_path: str | Path, run_id: str) -> None:
        self.path = flight_path(store_path, run_id)
        self._fd: int | None = None
        self._was_enabled = False

    def __enter__(self) -> FlightRecorder:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            os.lseek(self._fd, _KEY_BYTES, os.SEEK_SET)  # faulthandler writes after the key
        except OSError:  # no marker (a read-only folder): the run goes on without one
            self._fd = None
            return self
        self._was_enabled = faulthandler.is_enabled()
        faulthandler.enable(file=self._fd, all_threads=False)
        return self

    def note(self, spec: EpisodeSpec) -> None:
        """The episode about to be played."""
        if self._fd is None:
            return
        key = json.dumps([spec.cell, spec.episode, spec.repeat]).encode()[: _KEY_BYTES - 1]
        os.pwrite(self._fd, key.ljust(_KEY_BYTES - 1) + b"\n", 0)

    def __exit__(self, *exc: object) -> None:
        if self._fd is None:
            return
        faulthandler.disable()
        if self._was_enabled:  # as it was: to stderr (the process's own, if captured)
            for stream in (sys.stderr, sys.__stderr__):
                if stream is None:
                    continue
                try:
                    faulthandler.enable(file=stream)
                    break
                except (AttributeError, ValueError, OSError):  # no file descriptor
                    continue
        os.close(self._fd)
        self._fd = None
        try:
            self.path.unlink()
        except OSError:
            pass


def crashed_episode(store_path: str | Path,
                    run_id: str) -> tuple[tuple[str, int, int], str] | None:
    """The episode the run's last process crashed in, and the crash, from its marker.

    ``None`` when there is no marker or it holds no fatal error (the process ended any
    other way). The marker is removed once read.
    """
    path = flight_path(store_path, run_id)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        path.unlink()
    except OSError:
        pass
    at = data.find(_FATAL, _KEY_BYTES)
    if at < 0:
        return None
    try:
        cell, episode, repeat = json.loads(data[:_KEY_BYTES].decode().strip())
        key: Any = (str(cell), int(episode), int(repeat))
    except (ValueError, TypeError):
        return None
    cause = data[at:].decode("utf-8", "replace").splitlines()[0].strip()
    return key, cause
