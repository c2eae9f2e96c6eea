"""The Ray backend: chunks of episodes as Ray tasks, on one machine or a whole cluster.

Each chunk is one Ray task that runs the process backend's worker entry
(:func:`~evalband.run._execute.execute_chunk_list`): the worker builds the env and the policy
from the :class:`~evalband.run._execute.RunTask` (names, not objects) and plays the chunk.
Records stream back to the driver as chunks finish (``ray.wait``); the driver alone writes the
store, so the store's guarantees (one row per episode, resume after a crash) hold unchanged.

Retries are made, and counted, by the driver: a chunk whose worker died (or whose task failed
for any reason other than a deterministic evalband error) is submitted again, up to
``max_attempts`` times, and every record of a chunk that succeeded on attempt *k* carries
``attempts == k``. Ray's own silent task retry is off (``max_retries=0``): a retry Ray made
behind the driver's back could not be recorded on the episode.

``ray`` is an optional extra (``pip install 'evalband[ray]'``) and is imported only here, only
when the backend is built.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from evalband.episode import EpisodeRecord
from evalband.errors import BackendError, EvalbandError, InvalidParameterError
from evalband.panel import EpisodeSpec
from evalband.run._backends import chunked, guided_chunks
from evalband.run._execute import RunTask, execute_chunk_list
from evalband.run._worker import Worker

__all__ = [
    "RayBackend",
    "connect",
    "normalize_address",
    "MAX_ATTEMPTS",
    "LOCAL_OBJECT_STORE_BYTES",
]

MAX_ATTEMPTS = 3
"""Tries per chunk (the first one included) before the run stops with a :class:`BackendError`."""

LOCAL_OBJECT_STORE_BYTES = 78_643_200
"""Object store of a local cluster (75 MiB, Ray's minimum): only chunks of records travel."""

_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-]+:\d{1,5}$|^\[[0-9A-Fa-f:]+\]:\d{1,5}$")


def normalize_address(address: str | None) -> str:
    """Check a ``--address`` value: ``local``, ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT``.

    ``None`` and the empty string mean ``local`` (start a cluster in this process).

    Raises:
        InvalidParameterError: any other value.

    >>> normalize_address(None), normalize_address("auto"), normalize_address("ray://head:10001")
    ('local', 'auto', 'ray://head:10001')
    >>> normalize_address("head")
    Traceback (most recent call last):
    ...
    evalband.errors.InvalidParameterError: `address` must be local, auto, ray://HOST:PORT or ...
    """
    if address is None or address.strip() in ("", "local"):
        return "local"
    text = address.strip()
    if text == "auto":
        return text
    if _HOST_PORT.match(text.removeprefix("ray://")):
        return text
    raise InvalidParameterError(
        "`address` must be local, auto, ray://HOST:PORT or HOST:PORT (a Ray head); "
        f"got {address!r}",
        parameters=("address",),
    )


def probe_address(where: str, timeout_s: float = 3.0) -> None:
    """Refuse at once, in one line, a ``HOST:PORT`` where nothing listens.

    Ray itself retries a dead address for minutes, printing warnings; a TCP connect with a
    short timeout tells a typo or a stopped head apart in seconds.

    Raises:
        BackendError: nothing accepts connections at that host and port.

    >>> try:
    ...     probe_address("ray://127.0.0.1:1", timeout_s=1.0)
    ... except BackendError as exc:
    ...     print(str(exc)[:46])
    nothing accepts connections at ray://127.0.0.1
    """
    import socket

    host, _, port = where.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    raise BackendError(
        f"nothing accepts connections at {where} ({reason}); start the Ray head there "
        "(`ray start --head`, see docs/ray.md), check the address, or drop `address` to run "
        "on a local cluster", parameters=("address",),
    )


def _import_ray() -> Any:
    """The ``ray`` module, or a :class:`BackendError` that says how to install it."""
    try:
        import ray
    except ImportError:
        raise BackendError(
            "the ray backend needs Ray, which is not installed; install the extra: "
            "pip install 'evalband[ray]'"
        ) from None
    return ray


def _driver_pythonpath() -> str:
    """The driver's ``sys.path`` as a ``PYTHONPATH``: local workers import what it imports.

    (A forkserver worker inherits the same list; ``module:attr`` policies and envs that
    resolve in the driver resolve in a local Ray worker too.)

    >>> os.path.dirname(os.__file__) in _driver_pythonpath().split(os.pathsep)  # the stdlib
    True
    """
    paths = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
    return os.pathsep.join(dict.fromkeys(p for p in paths if os.path.isdir(p)))


def connect(
    address: str | None = None,
    workers: int | None = None,
    *,
    object_store_memory: int | None = LOCAL_OBJECT_STORE_BYTES,
) -> bool:
    """Connect this process to Ray, starting a local cluster unless ``address`` names one.

    An existing connection (``ray.is_initialized()``) is reused as it is.

    Args:
        address: ``local`` / ``None`` (a cluster of this machine, its workers importing what
            this process imports, on ``num_cpus=workers``), ``auto`` (the cluster a ``ray
            start`` on this machine joined) or ``ray://HOST:PORT`` (Ray Client).
        workers: CPUs of a local cluster (``None``: every CPU of this machine); ignored
            when connecting to a running cluster.
        object_store_memory: object store bytes of a local cluster.

    Returns:
        Whether this call made the connection (``False``: one already existed).

    Raises:
        BackendError: Ray is not installed, or the cluster cannot be reached.
        InvalidParameterError: a malformed address or worker count.

    >>> connect("local", workers=0)  # checked before Ray is imported or started
    Traceback (most recent call last):
    ...
    evalband.errors.InvalidParameterError: `workers` must be >= 1, got 0
    """
    where = normalize_address(address)
    if workers is not None and workers < 1:
        raise InvalidParameterError(
            f"`workers` must be >= 1, got {workers}",
            parameters=("workers",),
        )
    if where not in ("local", "auto"):
        probe_address(where)  # before importing Ray: a dead address is one line at once
    ray = _import_ray()
    if ray.is_initialized():
        return False
    common: dict[str, Any] = {
        "ignore_reinit_error": True,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
    }
    try:
        if where == "local":
            ray.init(
                num_cpus=workers,
                include_dashboard=False,
                object_store_memory=object_store_memory,
                # Ray maps loopback to this host's address, and starts no remote node.
                _node_ip_address="127.0.0.1",
                runtime_env={"env_vars": {"PYTHONPATH": _driver_pythonpath()}},
                **common,
            )
        else:
            ray.init(address=where, **common)
    except (ConnectionError, RuntimeError, TimeoutError, ValueError) as exc:
        raise BackendError(
            f"could not connect to the Ray cluster at {where!r}: {exc}; start one with "
            "`ray start --head --port=6379` (see docs/ray.md) or drop `address` to run on a "
            "local cluster", parameters=("address",),
        ) from None
    _cluster_messages_to_stderr()
    return True


def _cluster_messages_to_stderr() -> None:
    """Print the cluster's messages ("(raylet) A worker died ...") on stderr, not stdout.

    Ray's driver prints them on stdout, which would break ``evalband run --json``. With
    ``log_to_driver=False`` they are the only output of ``ray._private.worker``'s
    ``print_to_stdstream``; it is looked up on every message, so wrapping it re-routes them.
    (A private name: if a Ray release drops it, the messages simply stay on stdout.)
    """
    from ray._private import worker

    original = getattr(worker, "print_to_stdstream", None)
    if original is None or getattr(original, "evalband_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix=ignore_prefix)

    to_stderr.evalband_stderr = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


class RayBackend:
    """Plays chunks of episodes as Ray tasks; the driver streams the records back.

    Building the backend connects to Ray (starting a local cluster when ``address`` is
    ``None`` or ``local``), so a missing extra or an unreachable cluster fails before the
    run is written. A cluster this backend started stays up for later runs of this process
    and stops when the process exits (``ray.shutdown()`` stops it sooner).

    Attributes:
        name: ``ray``.
        workers: chunks played at the same time (the cluster's CPUs when not given).
        address: ``local``, ``auto`` or the ``ray://`` / ``HOST:PORT`` address.
        chunk_size: episodes per task; ``None`` schedules like the process backend
            (:func:`~evalband.run._backends.guided_chunks`: large chunks first, small last).
        max_attempts: tries per chunk before the run stops.

    >>> RayBackend(workers=2, address="head-node")  # arguments are checked before connecting
    Traceback (most recent call last):
    ...
    evalband.errors.InvalidParameterError: `address` must be local, auto, ray://HOST:PORT or ...
    """

    name = "ray"

    def __init__(
        self,
        workers: int | None = None,
        address: str | None = None,
        *,
        chunk_size: int | None = None,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        if max_attempts < 1:
            raise InvalidParameterError(f"max_attempts must be >= 1, got {max_attempts}")
        if chunk_size is not None and chunk_size < 1:
            raise InvalidParameterError(f"chunk_size must be >= 1, got {chunk_size}")
        self.address = normalize_address(address)
        connect(self.address, workers)
        self._ray = _import_ray()
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        self.workers = workers if workers is not None else max(1, cpus)
        self.chunk_size = chunk_size
        self.max_attempts = max_attempts
        self._remote = self._ray.remote(execute_chunk_list).options(
            num_cpus=1, max_retries=0, retry_exceptions=False
        )

    def run(self, task: RunTask, specs: Sequence[EpisodeSpec],
            worker: Worker | None = None) -> Iterator[EpisodeRecord]:
        """Yield records chunk by chunk as Ray tasks finish (any order).

        Every episode is played in a Ray worker, by that process's own
        :func:`~evalband.run._worker.process_worker`: the driver's ``worker`` is not used.
        """
        if not specs:
            return
        ray = self._ray
        if self.chunk_size:
            chunks = chunked(specs, max(self.chunk_size, task.batch_size))
        else:
            chunks = guided_chunks(specs, self.workers, at_least=task.batch_size or 1)
        queue = iter(range(len(chunks)))
        pending: dict[Any, tuple[int, int]] = {}  # object ref -> (chunk index, attempt)

        def submit(index: int, attempt: int) -> None:
            pending[self._remote.remote(task, chunks[index])] = (index, attempt)

        for index in queue:
            submit(index, 1)
            if len(pending) >= 2 * self.workers:
                break
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    index, attempt = pending.pop(ref)
                    try:
                        records: list[EpisodeRecord] = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        self._check_retry(exc, chunks[index], attempt)
                        submit(index, attempt + 1)
                        continue
                    if attempt > 1:
                        records = [dataclasses.replace(r, attempts=attempt) for r in records]
                    yield from records
                    nxt = next(queue, None)
                    if nxt is not None:
                        submit(nxt, 1)
        finally:
            if pending:  # stopped early: an error, or the driver was interrupted
                self._abandon(list(pending))

    def _abandon(self, refs: list[Any]) -> None:
        """Cancel unfinished chunks and consume their results (best effort, 2 s at most).

        A failed task whose result is never fetched makes Ray log its traceback ("Unhandled
        error") when the reference is dropped: noise after the run has already said why it
        stopped.
        """
        ray = self._ray
        try:
            for ref in refs:
                ray.cancel(ref)
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=2.0)
        except Exception:  # noqa: BLE001 - best effort; the run stops anyway
            return
        for ref in ready:
            try:
                ray.get(ref, timeout=0)
            except Exception:  # noqa: BLE001 - cancelled or failed: that is expected
                continue

    def _check_retry(self, exc: Exception, chunk: Sequence[EpisodeSpec], attempt: int) -> None:
        """Raise instead of retrying: a deterministic evalband error, or the last attempt."""
        cause = getattr(exc, "cause", None)
        if isinstance(cause, EvalbandError):
            raise cause  # e.g. a policy that does not resolve on the worker: same every time
        if attempt >= self.max_attempts:
            what = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            last_line = (what.strip().splitlines() or [type(exc).__name__])[-1]
            first, last = (
                f"cell {s.cell!r} episode {s.episode} repeat {s.repeat}"
                for s in (chunk[0], chunk[-1])
            )
            raise BackendError(
                f"a chunk of {len(chunk)} episode(s) ({first} to {last}) failed all "
                f"{attempt} attempts on Ray; last error: {last_line}; "
                "the finished episodes are stored: resume with the same `run_id`",
                parameters=("run_id",),
            ) from None
