"""``evalband serve``: any evalband policy behind openpi's websocket protocol, batched.

The wire protocol is openpi's (see :mod:`evalband.policies.remote` for the citation): on
connect the server sends its metadata; each request frame is an observation map, each answer
``{"actions": ..., "server_timing": {"infer_ms": ...}}``; a policy exception is sent as a text
frame (the traceback) and the connection is closed; ``GET /healthz`` answers ``200 OK``, so
``openpi-client``'s ``WebsocketClientPolicy`` works against it unchanged.

What it adds:

* **dynamic batching across clients**: requests from all connections wait in one batch; a
  batch is cut when it holds ``max_batch`` requests, or one from every busy client (one that
  sent a request within the last ``max(50 ms, 10 max_wait_ms)``, or within three of its own
  usual intervals), or ``max_wait_ms`` after its first one arrived, and goes through the
  policy in ONE batched call (``act_batch``): on the event loop when calls are short
  (:data:`INLINE_MS`), else on a single inference thread, during which requests gather for
  the next batch (cut as soon as the thread is free). ``server_timing`` also reports
  ``batch_size`` and ``queue_ms``; ``GET /stats`` the totals (requests, batches, mean batch
  size).
* **per-client episode state**: each connection is a slot of the policy (per-slot
  ``act_batch`` or a factory instance). A request carrying evalband's extension
  ``"evalband": {"reset": true, "context": {...}}`` (sent by ``--policy ws://...``) resets the
  slot with that episode's context; a client without it (openpi's) gets one reset when it
  connects. A stateful policy without per-slot state is refused: clients would share it.
* binds ``127.0.0.1`` unless told otherwise.
"""

from __future__ import annotations

import asyncio
import http
import json
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalband.errors import InvalidParameterError
from evalband.policies._contract import EpisodeContext, episode_seed
from evalband.policies._runtime import as_runtime

__all__ = ["PolicyServer"]

_RESERVED = ("evalband", "prompt")

INLINE_MS = 5.0
"""Batches whose policy call takes (on average) less than this run on the event loop itself;
longer ones on the inference thread, so the loop keeps reading requests meanwhile. Handing a
sub-millisecond MLP call to a thread and back cost more than the call (on 2 cores: the
loop's and the thread's GIL hand-offs, ~0.3 ms per batch)."""


@dataclass
class _Job:
    conn: Any  # the client's ServerConnection (evalband.policies._ws)
    slot: int
    obs: Any
    context: EpisodeContext | None
    queued: float = field(default_factory=time.perf_counter)


def _observation(request: dict[str, Any]) -> Any:
    """The policy's observation from a request: ``state`` alone, else the map less reserved."""
    obs = {k: v for k, v in request.items() if k not in _RESERVED}
    return obs["state"] if set(obs) == {"state"} else obs


def _context(name: str, slot: int, request: dict[str, Any], count: int) -> EpisodeContext:
    """The episode context of a reset: the client's (evalband's extension) or a default."""
    given = (request.get("evalband") or {}).get("context") or {}
    prompt = request.get("prompt")
    seed = int(given.get("condition_seed", count))
    return EpisodeContext(
        run_id=str(given.get("run_id", "")), policy=str(given.get("policy", name)),
        cell=str(given.get("cell", "")), slices=dict(given.get("slices") or {}),
        episode=int(given.get("episode", count)), repeat=int(given.get("repeat", 0)),
        condition_seed=seed, seed=int(given.get("seed", episode_seed(seed))),
        task=given.get("task", prompt if isinstance(prompt, str) else None), slot=slot,
    )


class PolicyServer:
    """Serve a policy to many clients with dynamic batching (module docstring).

    Args:
        policy: any evalband policy (object, callable, batched, per-slot or factory).
        name: what the metadata and default contexts call it.
        host: interface to bind (loopback unless told otherwise).
        port: TCP port (``0``: any free one; :attr:`port` says which once started).
        max_batch: most requests per policy call.
        max_wait_ms: longest a batch waits for more requests after its first.
        max_frame_bytes: largest request taken; a client sending a larger one is closed
            (1009) before its payload is read, and no other client waits for it.

    Raises:
        InvalidParameterError: bad limits, or a policy that keeps state without per-slot
            state (it would mix the clients' episodes).
    """

    def __init__(self, policy: Any, *, name: str, host: str = "127.0.0.1", port: int = 8000,
                 max_batch: int = 8, max_wait_ms: float = 2.0,
                 max_frame_bytes: int | None = None) -> None:
        from evalband._util.limits import MAX_FRAME_BYTES

        self.max_frame_bytes = MAX_FRAME_BYTES if max_frame_bytes is None else max_frame_bytes
        if self.max_frame_bytes < 1024:
            raise InvalidParameterError(
                f"`max_frame_bytes` must be at least 1024; got {self.max_frame_bytes}",
                parameters=("max_frame_bytes",))
        if max_batch < 1 or max_wait_ms < 0:
            raise InvalidParameterError(
                f"`max_batch` must be >= 1 and `max_wait_ms` >= 0; got {max_batch}, "
                f"{max_wait_ms}", parameters=("max_batch", "max_wait_ms"))
        self.runtime = as_runtime(policy)
        if (refusal := self.runtime.batch_refusal(name)) is not None:
            refusal = refusal.replace("`batch_size` > 1", "serving several clients")
            raise InvalidParameterError(refusal.replace(", or drop `batch_size`", ""))
        self.name, self.host, self.port = name, host, port
        self.max_batch, self.max_wait_s = int(max_batch), max_wait_ms / 1000.0
        self.stats = {"requests": 0, "batches": 0, "clients": 0}
        self._slots = 0
        self._last: dict[int, float] = {}  # slot -> when its last request arrived
        self.idle_s = max(0.05, 10 * self.max_wait_s)
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalband-infer")
        self._infer_ms = 0.0  # moving average of a batch's policy call
        self._pending: list[_Job] = []  # the open batch
        self._timer: asyncio.Handle | None = None  # cuts the open batch when due
        self._tasks: set[asyncio.Future[None]] = set()  # batches on the inference thread
        self._connections: set[Any] = set()
        self._gap: dict[int, float] = {}  # slot -> moving average of its request interval
        self._running = False  # a batch is on the inference thread

    @property
    def metadata(self) -> dict[str, Any]:
        """What a client receives on connect."""
        return {"policy": self.name, "evalband": {"protocol": 1, "max_batch": self.max_batch}}

    # -- the inference thread ------------------------------------------------------------

    def _compute(self, jobs: list[_Job]) -> list[tuple[Any, str | None]]:
        """Resets, then one batched call; on failure one call per job to pin the error."""
        for job in jobs:
            if job.context is not None:
                self.runtime.reset(job.context)
        observations, slots = [j.obs for j in jobs], [j.slot for j in jobs]
        try:
            return [(a, None) for a in self.runtime.act_batch(observations, slots)]
        except Exception:  # noqa: BLE001 - retried one by one to find whose request fails
            if len(jobs) == 1:
                return [(None, traceback.format_exc())]
        out: list[tuple[Any, str | None]] = []
        for obs, slot in zip(observations, slots, strict=True):
            try:
                out.append((self.runtime.act(obs, slot), None))
            except Exception:  # noqa: BLE001 - sent to that client as a text frame
                out.append((None, traceback.format_exc()))
        return out

    # -- asyncio side ----------------------------------------------------------------------

    def _submit(self, job: _Job) -> None:
        """Add a request to the open batch; cut the batch when it is complete (:meth:`_due`)."""
        self._pending.append(job)
        self._due()

    def _due(self) -> None:
        """Cut the open batch now if it is complete, else start its ``max_wait_ms`` timer.

        No point waiting once every client that is busy has a request in the batch; an idle
        connection (a driver done with its share, a worker between chunks) does not hold
        batches back. A client is busy if it asked within ``idle_s``, or within three of its
        own usual intervals between requests (a slow simulator step is not idleness). While
        a batch runs on the inference thread nothing is cut: requests gather, and the batch
        is cut when the thread is free again (the policy is never idle with requests waiting,
        and never runs a batch of one because it was busy when the others came).
        """
        if self._running or not self._pending:
            return
        now = time.perf_counter()
        busy = sum(1 for slot, t in self._last.items()
                   if now - t < max(self.idle_s, 3.0 * self._gap.get(slot, 0.0)))
        if len(self._pending) >= min(self.max_batch, max(busy, 1)):
            self._cut()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.max_wait_s, self._cut)

    def _cut(self) -> None:
        """Send the open batch (at most ``max_batch`` requests) through the policy."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running:  # cut when the running batch is done
            return
        jobs, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch:]
        if self._pending:  # more than one batch's worth waited: the rest goes next
            self._timer = asyncio.get_running_loop().call_soon(self._cut)
        if not jobs:
            return
        if self._infer_ms < INLINE_MS:  # a short call: a thread hand-off costs more
            t0 = time.perf_counter()
            self._answer(jobs, self._compute(jobs), t0)
        else:
            self._running = True
            task = asyncio.ensure_future(self._in_pool(jobs))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _in_pool(self, jobs: list[_Job]) -> None:
        t0 = time.perf_counter()
        try:
            results = await asyncio.get_running_loop().run_in_executor(self._pool,
                                                                       self._compute, jobs)
        finally:
            self._running = False
        self._answer(jobs, results, t0)
        self._due()

    def _answer(self, jobs: list[_Job], results: list[tuple[Any, str | None]],
                t0: float) -> None:
        infer_ms = 1000.0 * (time.perf_counter() - t0)
        self._infer_ms = 0.8 * self._infer_ms + 0.2 * infer_ms
        self.stats["batches"] += 1
        self.stats["requests"] += len(jobs)
        for job, (action, error) in zip(jobs, results, strict=True):
            self._reply(job, action, error, infer_ms, len(jobs), 1000.0 * (t0 - job.queued))

    # -- connections (evalband.policies._ws: websockets' protocol, driven on the loop) ------

    def _http(self, request: Any) -> tuple[int, str] | None:
        """Plain HTTP answers: ``/healthz`` and ``/stats``; ``None`` opens a websocket."""
        if request.path == "/healthz":
            return http.HTTPStatus.OK, "OK\n"
        if request.path == "/stats":
            stats: dict[str, float] = dict(self.stats)
            stats["mean_batch"] = stats["requests"] / stats["batches"] if stats["batches"] else 0
            return http.HTTPStatus.OK, json.dumps(stats) + "\n"
        return None

    def _opened(self, conn: Any) -> None:
        from evalband.policies._wire import packb

        conn.data.update(slot=self._slots, started=False, busy=False, backlog=[])
        self._slots += 1
        self.stats["clients"] += 1
        self._connections.add(conn)
        conn.send(packb(self.metadata))

    def _closed(self, conn: Any) -> None:
        self._last.pop(conn.data["slot"], None)
        self._gap.pop(conn.data["slot"], None)
        self._connections.discard(conn)

    def _message(self, conn: Any, data: bytes | str) -> None:
        """A request: into the open batch, or queued behind the client's unanswered one."""
        if conn.data["busy"]:
            from evalband._util.limits import MAX_QUEUED_REQUESTS

            if len(conn.data["backlog"]) >= MAX_QUEUED_REQUESTS:  # a flood: not our memory
                self._fail(conn, f"too many requests queued ({MAX_QUEUED_REQUESTS}) behind an "
                           "unanswered one; send the next request after each answer")
                return
            conn.data["backlog"].append(data)
            return
        from evalband.policies._wire import unpackb

        slot = conn.data["slot"]
        try:
            if isinstance(data, str):
                raise TypeError("got a text frame; a request is a binary msgpack-numpy frame")
            request = unpackb(data)
        except Exception:  # noqa: BLE001 - not a msgpack frame: say so, as a policy error
            self._fail(conn, traceback.format_exc())
            return
        if not isinstance(request, dict):
            request = {"state": request}
        extension = request.get("evalband") or {}
        reset = bool(extension.get("reset")) or not conn.data["started"]
        context = _context(self.name, slot, request, slot) if reset else None
        conn.data["started"], conn.data["busy"] = True, True
        now = time.perf_counter()
        if slot in self._last and (gap := now - self._last[slot]) < 1.0:
            self._gap[slot] = 0.8 * self._gap.get(slot, gap) + 0.2 * gap
        self._last[slot] = now
        self._submit(_Job(conn, slot, _observation(request), context))

    def _reply(self, job: _Job, action: Any, error: str | None, infer_ms: float, size: int,
               queue_ms: float) -> None:
        from evalband.policies._wire import packb

        conn = job.conn
        conn.data["busy"] = False
        if error is not None:
            self._fail(conn, error)
            return
        conn.send(packb({
            "actions": np.asarray(action),
            "server_timing": {"infer_ms": infer_ms, "batch_size": size, "queue_ms": queue_ms},
        }))
        if conn.data["backlog"] and conn.open:
            self._message(conn, conn.data["backlog"].pop(0))

    @staticmethod
    def _fail(conn: Any, error: str) -> None:
        """Send the traceback as a text frame, then close (1011): openpi's way."""
        conn.data["backlog"].clear()
        conn.send(error)
        conn.close(1011, "Internal server error. Traceback included in previous frame.")

    async def serve(self, ready: Callable[[int], None] | None = None) -> None:
        """Serve until :meth:`stop` (or cancellation); ``ready(port)`` once listening."""
        from evalband.policies._ws import ServerConnection

        self.runtime.setup()
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = None
        try:
            server = await self._loop.create_server(
                lambda: ServerConnection(self._http, self._opened, self._message, self._closed,
                                         max_size=self.max_frame_bytes),
                self.host, self.port)
            self.port = int(server.sockets[0].getsockname()[1])
            if ready is not None:
                ready(self.port)
            await self._stop.wait()
        finally:
            if self._timer is not None:
                self._timer.cancel()
            if server is not None:
                server.close()
            for conn in list(self._connections):
                conn.close(1001)
                conn.abort()
            self.runtime.close()

    def stop(self) -> None:
        """Stop a server running in another thread."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    def start_in_thread(self) -> int:
        """Serve from a daemon thread; return the port once it listens.

        >>> server = PolicyServer(lambda obs: -obs, name="neg", port=0)
        >>> server.start_in_thread() > 0
        True
        >>> server.stop()
        """
        ready = threading.Event()
        thread = threading.Thread(
            target=lambda: asyncio.run(self.serve(lambda _port: ready.set())), daemon=True)
        thread.start()
        if not ready.wait(30):
            raise InvalidParameterError(f"policy server did not start on {self.host}:{self.port}")
        return self.port
