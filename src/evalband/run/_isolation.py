"""Crash isolation for the process backend: a worker that dies is not the run's death.

A Python exception in an episode is an ``error`` episode already (:mod:`evalband.run._execute`);
this module handles a worker *process* dying (a segfault in an env's C code, the OOM killer,
a hard exit that skips Python's clean-up), which breaks the whole
:class:`~concurrent.futures.ProcessPoolExecutor`:

* every chunk that was in flight is retried once, each alone in its own process
  (:func:`play_isolated`); a chunk whose process dies again is narrowed to its episodes, each
  in its own process, and an episode whose process dies is recorded as an ``error`` episode
  saying how the process ended (e.g. "killed by signal SIGSEGV"); nothing is dropped;
* workers die with the driver: each sets ``PR_SET_PDEATHSIG`` (Linux; it fires when its
  parent, the forkserver, exits) and watches the driver's pid
  (:func:`~evalband.run._pool.worker_init`, which lives with the pool so that the command
  line can start workers before it imports anything heavy), so a driver killed with
  ``kill -9`` leaves no worker playing on.
"""

from __future__ import annotations

import os
import pickle
import signal
import tempfile
from collections.abc import Sequence
from typing import Any

from evalband.episode import EpisodeRecord, Outcome
from evalband.panel import EpisodeSpec
from evalband.run._execute import RunTask, _record, execute_chunk_list

__all__ = [
    "play_isolated", "death_text", "crash_record", "check_not_bootstrapping",
    "GUARD_HINT", "check_workers_start",
]

GUARD_HINT = (
    "if you run evalband from a script, put the calls under `if __name__ == \"__main__\":` "
    "(the process backend's workers import your script, as Python's multiprocessing does)"
)


def check_not_bootstrapping() -> None:
    """Refuse to start a run while a worker process is importing the user's script.

    Without an ``if __name__ == "__main__":`` guard, every worker (and the forkserver)
    re-runs a script's top level as it starts; a run started there would run the script
    again, once per worker. Python marks that phase (``_inheriting``); the call fails here
    instead, before it touches the store.

    Raises:
        BackendError: during that phase.

    >>> check_not_bootstrapping()  # the main process, not bootstrapping: nothing happens
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        from evalband.errors import BackendError

        raise BackendError(f"a run was started while a worker process imported the script; "
                           f"{GUARD_HINT}")


def check_workers_start(context: Any, task: RunTask) -> None:
    """After a worker died: a process that plays nothing must live, else no worker can.

    Raises:
        BackendError: a worker process dies before playing anything (the episodes are not
            at fault, so none is recorded as an error).
    """
    records, how = _run_alone(context, task, [])
    if records is None:
        from evalband.errors import BackendError

        raise BackendError(f"worker processes die before playing any episode ({how}); "
                           f"{GUARD_HINT}; or see the worker's message above")


def death_text(exitcode: int | None) -> str:
    """How a worker process ended, in words.

    >>> death_text(-11), death_text(3)
    ('killed by signal SIGSEGV', 'exited with status 3')
    """
    if exitcode is None:
        return "did not finish"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


def crash_record(task: RunTask, spec: EpisodeSpec, how: str) -> EpisodeRecord:
    """The ``error`` record of an episode whose worker process died playing it."""
    return _record(
        task, spec, outcome=Outcome.ERROR, sim_time_s=None, terminated=False, truncated=False,
        steps=0,
        error=f"WorkerDied: the worker process playing this episode {how}; it was retried "
              "in a process of its own and died again",
    )


def _child(task: RunTask, specs: Sequence[EpisodeSpec], out_path: str, driver_pid: int) -> None:
    from evalband.run._pool import worker_init  # (not at import: a serial run needs no pool)

    worker_init(driver_pid)
    records = execute_chunk_list(task, specs)
    with open(out_path + ".part", "wb") as fh:
        pickle.dump(records, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(out_path + ".part", out_path)  # present only when complete


def _run_alone(
    context: Any, task: RunTask, specs: Sequence[EpisodeSpec]
) -> tuple[list[EpisodeRecord] | None, str]:
    """Play specs in a fresh process: (records, "") or (None, how the process died).

    The records come back through a file rather than a pipe: passing a pipe to a
    forkserver child costs a round trip through the driver's resource-sharer thread.
    """
    with tempfile.TemporaryDirectory(prefix="evalband-isolated-") as folder:
        out_path = os.path.join(folder, "records.pickle")
        proc = context.Process(target=_child, args=(task, list(specs), out_path, os.getpid()),
                               daemon=True)
        proc.start()
        proc.join()
        if proc.exitcode == 0 and os.path.exists(out_path):
            with open(out_path, "rb") as fh:
                records: list[EpisodeRecord] = pickle.load(fh)
            return records, ""
    return None, death_text(proc.exitcode)


def play_isolated(
    context: Any, task: RunTask, chunk: Sequence[EpisodeSpec]
) -> list[EpisodeRecord]:
    """Retry a chunk whose worker died: alone, then episode by episode (see the module doc).

    Returns:
        One record per spec of ``chunk``, in order; an episode whose own process died is an
        ``error`` record naming the signal (or exit status).
    """
    records, _ = _run_alone(context, task, chunk)
    if records is not None:
        return records
    out: list[EpisodeRecord] = []
    for spec in chunk:
        one, how = _run_alone(context, task, [spec])
        out.extend(one if one is not None else [crash_record(task, spec, how)])
    return out
