"""A warm worker pool for the process backend, kept across runs of one Python session.

Starting workers is the process backend's fixed cost: the forkserver imports numpy,
gymnasium, MuJoCo... once (~0.5 s on a 2-core VM), then each worker forks from it and
builds its env and policy. A session that runs several panels (``run_panel`` in a loop, a
notebook, the labs) pays that once: :func:`warm_pool` hands the same
``ProcessPoolExecutor`` to every run that asks for the same number of workers, and
replaces it when it broke (a worker died). :func:`prestart` starts the forkserver and the
workers in the background, so the command line overlaps their start with its own imports
and planning. The pool closes with the interpreter (or :func:`close_pools`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

__all__ = ["check_workers", "warm_pool", "prestart", "close_pools", "forkserver_context",
           "worker_init", "WATCH_INTERVAL_S"]

_LOCK = threading.Lock()
_PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.25
"""How often a worker checks that its driver still lives."""
_IDLE: dict[tuple[Any, ...], ProcessPoolExecutor] = {}  # key -> a pool no run is using
_ASKED: weakref.WeakKeyDictionary[ProcessPoolExecutor, set[str]] = weakref.WeakKeyDictionary()
"""Pool -> the modules its workers were asked to import (forgotten with the pool)."""


_PRELOAD: list[str] = []  # every module asked for so far, in order


def forkserver_context(preload: Sequence[str] = ()) -> Any:
    """The forkserver context, asking it to import ``preload`` when it starts.

    The preload only takes effect if this call comes before the forkserver starts; a
    module that fails to import is skipped by the forkserver. Calls add to what earlier
    calls asked for, never take it back: the command line asks for the panel's env and
    policy modules, and a later call for fewer (before the forkserver has started, in the
    background) must not undo that.

    >>> forkserver_context(["json"]).get_start_method()
    'forkserver'
    """
    import multiprocessing

    with _LOCK:
        _PRELOAD.extend(m for m in preload if m not in _PRELOAD)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["__main__", *_PRELOAD])
    return context


def _key(
    workers: int, context: Any, initializer: Any, initargs: tuple[Any, ...]
) -> tuple[Any, ...]:
    # A worker keeps the import path and working directory it started with: a run after
    # either changed gets new workers, as it would without the warm pool.
    import os
    import sys

    return (workers, context.get_start_method(), initializer, initargs, tuple(sys.path),
            os.getcwd())


def _broken(pool: ProcessPoolExecutor) -> bool:
    # ProcessPoolExecutor marks itself broken when a worker dies (no public accessor).
    return bool(getattr(pool, "_broken", False)) or bool(getattr(pool, "_shutdown_thread",
                                                                  False))


@contextmanager
def warm_pool(
    workers: int,
    context: Any,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Iterator[ProcessPoolExecutor]:
    """A process pool of ``workers`` workers: the session's idle one if it has one.

    On leaving the block the pool stays alive for the next run, unless it broke or the
    block raised (then it is shut down, not reused). Two runs at once (threads) get two
    pools; a change of ``sys.path`` or of the working directory gets a new one. Like the
    driver itself, warm workers keep the modules they imported: a policy module edited
    between two runs of one session needs a new session (or :func:`close_pools`).

    Args:
        workers: worker processes.
        context: the multiprocessing context (:func:`forkserver_context`).
        initializer: run in each new worker (``ProcessPoolExecutor``'s).
        initargs: its arguments.

    >>> import os
    >>> with warm_pool(1, forkserver_context()) as pool:
    ...     first = pool.submit(os.getpid).result()
    >>> with warm_pool(1, forkserver_context()) as pool:
    ...     first == pool.submit(os.getpid).result()  # the same worker, still warm
    True
    >>> close_pools()
    """
    key = _key(workers, context, initializer, initargs)
    with _LOCK:
        pool = _IDLE.pop(key, None)
    if pool is not None and _broken(pool):
        pool.shutdown(wait=False, cancel_futures=True)
        pool = None
    if pool is None:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                   initializer=initializer, initargs=initargs)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    if _broken(pool):
        pool.shutdown(wait=False, cancel_futures=True)
        return
    with _LOCK:
        spare = _IDLE.get(key)
        if spare is None:
            _IDLE[key] = pool
    if spare is not None:  # another run parked one meanwhile: keep one
        pool.shutdown(wait=False)


def _warm_up(modules: Sequence[str]) -> int:
    """In a worker: import ``modules`` (those that import); the worker's pid."""
    import importlib
    import os

    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the run will report a real problem itself
            pass
    return os.getpid()


def check_workers(workers: int) -> int:
    """``workers`` when 1..:data:`~evalband._util.limits.MAX_WORKERS`, else one line.

    >>> check_workers(4)
    4
    """
    from evalband._util.limits import MAX_WORKERS
    from evalband.errors import InvalidParameterError

    if not 1 <= workers <= MAX_WORKERS:
        raise InvalidParameterError(
            f"`workers` must be from 1 to {MAX_WORKERS:,} (about one per CPU runs well); "
            f"got {workers:,}", parameters=("workers",))
    return workers


def prestart(
    workers: int,
    modules: Sequence[str] = ("evalband.run._execute",),
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
) -> None:
    """Start the forkserver and ``workers`` workers in the background; returns at once.

    The pool is the session's idle pool from now on (the next :func:`warm_pool` with the
    same workers, initializer and arguments takes it, started or not); its workers
    import ``modules`` while the caller goes on with its own imports, the panel and the
    store. Called again for a pool that is already idle (the command line starts it before
    it knows the env; ``run_panel`` then names the env's and the policy's modules), it
    asks the workers to import the modules not asked for yet. Errors are left for the run
    itself to meet.

    Args:
        workers: worker processes to start.
        modules: what the forkserver preloads and each worker imports.
        initializer: run in each worker first, as :func:`warm_pool`'s (the backend's).
        initargs: its arguments.

    >>> prestart(1, ["json"]); close_pools()
    """
    check_workers(workers)
    context = forkserver_context(modules)
    key = _key(workers, context, initializer, initargs)
    with _LOCK:
        pool = _IDLE.get(key)
        warming = pool is not None
        if pool is None:
            pool = _IDLE[key] = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                                    initializer=initializer, initargs=initargs)
    if warming and set(modules) <= _ASKED.get(pool, set()):
        return  # already warm (or warming) with these modules
    _ASKED.setdefault(pool, set()).update(modules)

    def start() -> None:  # each submit starts a worker; the first also the forkserver
        try:
            for _ in range(workers):
                pool.submit(_warm_up, list(modules))
        except Exception:  # noqa: BLE001 - the run meets (and reports) the same problem
            pass

    threading.Thread(target=start, name="evalband-prestart", daemon=True).start()


def close_pools() -> None:
    """Shut down the session's idle worker pools (they also close at exit).

    >>> close_pools()
    """
    with _LOCK:
        pools = list(_IDLE.values())
        _IDLE.clear()
        _ASKED.clear()
    for pool in pools:
        pool.shutdown(wait=True)


def _set_parent_death_signal() -> None:
    """Linux: ask the kernel to SIGKILL this process when its parent exits."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def driver_gone(driver_pid: int) -> bool:
    """Whether the driver process has ended, also when it is a zombie nobody reaped yet.

    ``kill(pid, 0)`` succeeds on a zombie (a ``kill -9``-ed driver whose caller has not
    waited for it), so on Linux the process state is read too (``Z``: dead, not reaped).

    >>> driver_gone(os.getpid())
    False
    """
    try:
        os.kill(driver_pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # pragma: no cover - the pid was reused by another user
        return True
    try:
        with open(f"/proc/{driver_pid}/stat", "rb") as fh:
            state = fh.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False  # no /proc here: kill(pid, 0) said it lives
    return state in (b"Z", b"X")


def _watch_driver(driver_pid: int) -> None:
    while True:
        time.sleep(WATCH_INTERVAL_S)
        if driver_gone(driver_pid):
            os.kill(os.getpid(), signal.SIGKILL)


def worker_init(driver_pid: int) -> None:
    """Initialise a worker so that it dies with the driver (:mod:`evalband.run._isolation`).

    >>> worker_init(os.getpid())  # in the driver itself: harmless, the driver lives
    """
    _set_parent_death_signal()
    if driver_pid != os.getpid():
        threading.Thread(target=_watch_driver, args=(driver_pid,), daemon=True,
                         name="evalband-driver-watch").start()
