"""Backends: where episodes are played. The driver alone writes the store.

A backend takes a :class:`~evalband.run._execute.RunTask` and the planned specs and yields
records as they finish. Serial plays them in this process; process uses a pool of worker
processes. A Ray backend implements the same :class:`Backend` protocol.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Protocol

from evalband.episode import EpisodeRecord
from evalband.errors import InvalidParameterError
from evalband.panel import EpisodeSpec
from evalband.run._execute import RunTask, execute_chunk, execute_chunk_list

__all__ = ["Backend", "SerialBackend", "ProcessBackend", "get_backend", "BACKENDS", "chunked"]


class Backend(Protocol):
    """Plays episode specs and yields their records as they finish (any order)."""

    name: str
    workers: int

    def run(self, task: RunTask, specs: Sequence[EpisodeSpec]) -> Iterator[EpisodeRecord]:
        """Yield one record per spec."""
        ...


def chunked(specs: Sequence[EpisodeSpec], size: int) -> list[list[EpisodeSpec]]:
    """Split specs into consecutive chunks of at most ``size``.

    >>> [len(c) for c in chunked(list(range(5)), 2)]  # type: ignore[arg-type]
    [2, 2, 1]
    """
    return [list(specs[i : i + size]) for i in range(0, len(specs), size)]


class SerialBackend:
    """Plays every episode in this process, one chunk at a time."""

    name = "serial"

    def __init__(self, workers: int = 1, chunk_size: int = 64) -> None:
        self.workers = 1
        self.chunk_size = chunk_size

    def run(self, task: RunTask, specs: Sequence[EpisodeSpec]) -> Iterator[EpisodeRecord]:
        """Yield records in plan order."""
        for chunk in chunked(specs, self.chunk_size):
            yield from execute_chunk(task, chunk)


class ProcessBackend:
    """Plays chunks of episodes in a pool of worker processes (forkserver context)."""

    name = "process"

    def __init__(self, workers: int = 2, chunk_size: int | None = None) -> None:
        if workers < 1:
            raise InvalidParameterError(f"--workers must be >= 1, got {workers}")
        self.workers = workers
        self.chunk_size = chunk_size

    def run(self, task: RunTask, specs: Sequence[EpisodeSpec]) -> Iterator[EpisodeRecord]:
        """Yield records chunk by chunk as workers finish them."""
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

        if not specs:
            return
        size = self.chunk_size or max(1, min(64, math.ceil(len(specs) / (self.workers * 4))))
        chunks = chunked(specs, size)
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
            pending: set[Future[list[EpisodeRecord]]] = set()
            queue = iter(chunks)
            for chunk in queue:
                pending.add(pool.submit(execute_chunk_list, task, chunk))
                if len(pending) >= self.workers * 2:
                    break
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield from future.result()
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(execute_chunk_list, task, nxt))


BACKENDS = ("serial", "process")


def get_backend(name: str, workers: int = 1) -> Backend:
    """Build a backend by name.

    >>> get_backend("serial").name
    'serial'
    """
    if name == "serial":
        return SerialBackend()
    if name == "process":
        return ProcessBackend(workers=workers)
    raise InvalidParameterError(
        f"--backend must be one of {', '.join(BACKENDS)}; got {name!r}"
    )
