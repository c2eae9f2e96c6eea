"""Backends: where episodes are played. The driver alone writes the store.

A backend takes a :class:`~evalband.run._execute.RunTask` and the planned specs and yields
records as they finish. Serial plays them in this process; process uses a pool of worker
processes; ray (:mod:`evalband.run._ray`) sends chunks to Ray tasks on a cluster. Episodes
the driver plays itself use the run's :class:`~evalband.run._worker.Worker` (its built envs
and policy); a worker process plays with its own
(:func:`~evalband.run._worker.process_worker`).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from evalband.episode import EpisodeRecord, EpisodeSpec
from evalband.errors import BackendError, InvalidParameterError
from evalband.run._execute import RunTask, execute_chunk, execute_chunk_list
from evalband.run._worker import Worker

__all__ = [
    "Backend",
    "SerialBackend",
    "ProcessBackend",
    "get_backend",
    "BACKENDS",
    "chunked",
    "guided_chunks",
    "worker_modules",
]


class Backend(Protocol):
    """Plays episode specs and yields their records as they finish (any order)."""

    name: str
    workers: int

    def run(self, task: RunTask, specs: Sequence[EpisodeSpec],
            worker: Worker | None = None) -> Iterator[EpisodeRecord]:
        """Yield one record per spec; ``worker``: the run's, for what the driver plays."""
        ...


def chunked(specs: Sequence[EpisodeSpec], size: int) -> list[list[EpisodeSpec]]:
    """Split specs into consecutive chunks of at most ``size``.

    >>> [len(c) for c in chunked(list(range(5)), 2)]  # type: ignore[arg-type]
    [2, 2, 1]
    """
    return [list(specs[i : i + size]) for i in range(0, len(specs), size)]


def guided_chunks(
    specs: Sequence[EpisodeSpec], workers: int, *, cap: int = 64, at_least: int = 1
) -> list[list[EpisodeSpec]]:
    """Split specs into consecutive chunks that shrink as the work runs out.

    Guided self-scheduling (Polychronopoulos, C. D. & Kuck, D. J. (1987), "Guided
    self-scheduling: a practical scheduling scheme for parallel supercomputers", *IEEE Trans.
    Computers* C-36(12):1425-1439): each chunk is ``1 / (4 workers)`` of the episodes still
    unassigned (at most ``cap``, at least ``at_least``), so the first chunks are large (few
    round trips) and the last ones small (the workers finish together: with equal chunks
    of 25 PushT episodes one worker idled for up to a chunk's length at the end).

    Args:
        specs: the episodes, in plan order.
        workers: worker count.
        cap: largest chunk.
        at_least: smallest chunk (the lockstep batch size, so a batch is never starved).

    >>> [len(c) for c in guided_chunks(list(range(40)), 2)]  # type: ignore[arg-type]
    [5, 5, 4, 4, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]
    """
    chunks: list[list[EpisodeSpec]] = []
    start, n = 0, len(specs)
    while start < n:
        size = max(at_least, min(cap, math.ceil((n - start) / (4 * workers))), 1)
        chunks.append(list(specs[start : start + size]))
        start += size
    return chunks


def worker_modules(task: RunTask) -> list[str]:
    """Modules a worker needs for ``task``: imported once by the forkserver, then inherited.

    >>> worker_modules(RunTask(run_id="r", policy="reach1d:damped", panel_fingerprint="f",
    ...                        env="evalband/Reach1D-v0"))[:2]
    ['evalband.run._execute', 'evalband.envs.reach1d']
    """
    from evalband._util.names import worker_preload

    return worker_preload(_env_module(task.env), task.imports, task.policy)


def _env_module(env: str) -> str | None:
    """The module defining an env id's class, read from its registration, not imported.

    The driver of a process run need not import the env (MuJoCo, ...): only its workers do.

    >>> _env_module("evalband/Reach1D-v0"), _env_module("pkg.mod:Env")
    ('evalband.envs.reach1d', 'pkg.mod')
    """
    from evalband._util.names import env_module

    known = env_module(env)  # a built-in id or an import path: no registry needed
    if known is not None:
        return known
    import gymnasium

    import evalband.envs  # noqa: F401  (registers the built-in env ids)

    try:
        entry = gymnasium.spec(env).entry_point
    except gymnasium.error.Error:
        return None
    if isinstance(entry, str):
        return entry.partition(":")[0]
    return getattr(entry, "__module__", None)


class SerialBackend:
    """Plays every episode in this process, one chunk at a time."""

    name = "serial"

    def __init__(self, workers: int = 1, chunk_size: int = 64) -> None:
        self.workers = 1
        self.chunk_size = chunk_size

    def run(self, task: RunTask, specs: Sequence[EpisodeSpec],
            worker: Worker | None = None) -> Iterator[EpisodeRecord]:
        """Yield records in plan order, played by ``worker`` (the run's).

        Without one, a worker of its own, closed when the last record is yielded.
        """
        with _worker_for(worker) as playing:
            for chunk in chunked(specs, max(self.chunk_size, task.batch_size)):
                yield from execute_chunk(task, chunk, playing)


class ProcessBackend:
    """Plays chunks of episodes in a pool of worker processes (forkserver context).

    The driver helps while the workers start: until the first worker is up it plays chunks
    from the back of the queue in its own process (same code, same records). The pool is
    the session's warm one (:func:`~evalband.run._pool.warm_pool`): a second run in the
    same Python process starts no workers.
    """

    name = "process"

    def __init__(self, workers: int = 2, chunk_size: int | None = None) -> None:
        from evalband.run._pool import check_workers

        self.workers = check_workers(workers)
        self.chunk_size = chunk_size

    def warm_up(self, env: str, policy: str) -> None:
        """Start the workers for ``policy`` on ``env`` in the background; returns at once.

        ``run_panel`` calls it before it plans the episodes and writes the manifest, so the
        workers start meanwhile; :meth:`run` then takes the warm pool.
        """
        from evalband.run._pool import prestart, worker_init

        task = RunTask(run_id="", policy=policy, panel_fingerprint="", env=env)
        prestart(self.workers, worker_modules(task), worker_init, (os.getpid(),))

    def run(self, task: RunTask, specs: Sequence[EpisodeSpec],
            worker: Worker | None = None) -> Iterator[EpisodeRecord]:
        """Yield records chunk by chunk as workers finish them.

        Chunks shrink as the work runs out (:func:`guided_chunks`); while the workers start,
        the driver plays the last (smallest) chunks itself, with ``worker`` (the run's;
        without one, a worker of its own, closed at the end).
        """
        import threading
        from collections import deque
        from concurrent.futures import FIRST_COMPLETED, Future, wait
        from concurrent.futures.process import BrokenProcessPool

        from evalband.run._pool import forkserver_context, warm_pool, worker_init

        if not specs:
            return
        if self.chunk_size:
            chunks = chunked(specs, max(self.chunk_size, task.batch_size))
        else:
            chunks = guided_chunks(specs, self.workers, at_least=task.batch_size or 1)
        # The forkserver imports what workers need once; each worker forks with it loaded
        # (instead of every worker importing numpy, gymnasium, mujoco... itself). Only takes
        # effect when this process starts its forkserver; a missing module is skipped.
        context = forkserver_context(worker_modules(task))

        def new_pool() -> Any:
            # The session's warm pool when it has one (an earlier run, or the command
            # line's prestart): no start-up at all; it stays warm for the next run. Its
            # workers die with the driver (worker_init); a broken pool is not kept.
            return warm_pool(self.workers, context, initializer=worker_init,
                             initargs=(os.getpid(),))

        if not _driver_may_play(task):
            yield from self._run_isolated(task, chunks, context, new_pool)
            return
        with new_pool() as pool, _worker_for(worker) as playing:
            queue = deque(chunks)
            # The first submit starts a worker and blocks until it is forked: a fresh
            # forkserver first imports numpy, MuJoCo, ... (~0.5 s here), a warm one forks in
            # milliseconds. Meanwhile the driver, which has all that loaded, plays the
            # smallest chunks, from the back of the queue, itself.
            # An exception in the thread is kept and raised here, in the driver, after the
            # join (a thread's uncaught exception would only print a traceback on stderr).
            failures: list[BaseException] = []

            def start_worker() -> None:
                try:
                    pool.submit(os.getpid)
                except BaseException as exc:  # noqa: BLE001 - re-raised by the driver
                    failures.append(exc)

            starter = threading.Thread(target=start_worker, daemon=True)
            starter.start()
            while queue and starter.is_alive():
                yield from execute_chunk(task, queue.pop(), playing)
            starter.join()
            if failures:
                raise failures[0]
            pending: set[Future[list[EpisodeRecord]]] = set()
            while queue and len(pending) < self.workers * 2:
                pending.add(pool.submit(execute_chunk_list, task, queue.popleft()))
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        records = future.result()
                    except BrokenProcessPool:
                        from evalband.run._isolation import GUARD_HINT

                        raise BackendError(
                            f"a worker process died; {GUARD_HINT}; resume the run to retry"
                        ) from None
                    yield from records
                    if queue:
                        pending.add(pool.submit(execute_chunk_list, task, queue.popleft()))

    def _run_isolated(
        self, task: RunTask, chunks: list[list[EpisodeSpec]], context: Any,
        new_pool: Callable[[], Any],
    ) -> Iterator[EpisodeRecord]:
        """Play every chunk in worker processes only, surviving workers that die.

        A dying worker breaks the pool; each chunk in flight then is retried on its own
        (:func:`~evalband.run._isolation.play_isolated`) and the rest go to a new pool.
        """
        from concurrent.futures import FIRST_COMPLETED, Future, wait
        from concurrent.futures.process import BrokenProcessPool

        from evalband.run._isolation import check_workers_start, play_isolated

        queue = deque(chunks)
        while queue:
            broken: list[list[EpisodeSpec]] = []
            with new_pool() as pool:
                pending: dict[Future[list[EpisodeRecord]], list[EpisodeSpec]] = {}
                while queue or pending:
                    while queue and len(pending) < self.workers * 2:
                        chunk = queue.popleft()
                        try:
                            pending[pool.submit(execute_chunk_list, task, chunk)] = chunk
                        except BrokenProcessPool:  # a worker died since the last wait
                            queue.appendleft(chunk)  # never started: back for a new pool
                            break
                    if not pending:  # the pool broke with nothing else in flight:
                        broken.append(queue.popleft())  # play the next chunk in isolation
                        break
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        chunk = pending.pop(future)
                        try:
                            records = future.result()
                        except BrokenProcessPool:
                            broken.append(chunk)
                            continue
                        yield from records
                    if broken:
                        broken.extend(pending.values())  # the pool is gone: all in flight
                        break
            if broken:
                check_workers_start(context, task)  # a worker that cannot start at all
            for chunk in broken:  # retried alone, then episode by episode
                yield from play_isolated(context, task, chunk)


@contextlib.contextmanager
def _worker_for(worker: Worker | None) -> Iterator[Worker]:
    """``worker``, or a new one closed on the way out (a backend run without a run's)."""
    if worker is not None:
        yield worker
        return
    with Worker() as own:
        yield own


def _driver_may_play(task: RunTask) -> bool:
    """Whether the driver may play chunks itself while the workers start.

    Only the envs whose family declares them pure Python (``driver_safe``), with the
    built-in controllers: they cannot crash the interpreter. Anything else (MuJoCo,
    third-party envs, user policies, torch) is played in worker processes only, so a
    segfault there never takes the driver down.
    """
    from evalband._util.families import driver_safe_modules
    from evalband._util.names import BUILTIN_POLICIES

    # the env's module from its family's declaration, not by importing it: the driver of a
    # MuJoCo run never needs MuJoCo (an import path to a class elsewhere: not played here)
    return _env_module(task.env) in driver_safe_modules() and task.policy in BUILTIN_POLICIES


BACKENDS = ("serial", "process", "ray", "vector")


def get_backend(name: str, workers: int | None = 1, address: str | None = None) -> Backend:
    """Build a backend by name.

    Args:
        name: ``serial``, ``process``, ``ray`` or ``vector`` (:mod:`evalband.run._vector`).
        workers: worker processes (``None``: 1, or every CPU of the Ray cluster for ``ray``;
            for ``vector``, the sub-envs stepped in parallel, ``None``: 2).
        address: the Ray cluster (``ray`` only; see :class:`~evalband.run._ray.RayBackend`).

    >>> get_backend("serial").name
    'serial'
    """
    if address is not None and name != "ray":
        raise InvalidParameterError(
            f"`address` is for `backend` ray; got `backend` {name}",
            parameters=("address", "backend"),
        )
    if name == "serial":
        return SerialBackend()
    if name == "process":
        return ProcessBackend(workers=1 if workers is None else workers)
    if name == "ray":
        from evalband.run._ray import RayBackend

        return RayBackend(workers=workers, address=address)
    if name == "vector":
        from evalband.run._vector import VectorBackend

        return VectorBackend(workers=2 if workers is None else workers)
    raise InvalidParameterError(
        f"`backend` must be one of {', '.join(BACKENDS)}; got {name!r}", parameters=("backend",),
    )
