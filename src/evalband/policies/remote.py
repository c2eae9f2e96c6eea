"""A policy served over openpi's websocket protocol: ``--policy ws://HOST:PORT[?replan=K]``.

The protocol (openpi, https://github.com/Physical-Intelligence/openpi: the client
``packages/openpi-client/src/openpi_client/websocket_client_policy.py`` and the server
``src/openpi/serving/websocket_policy_server.py``, started by ``scripts/serve_policy.py``):

1. the client opens a websocket (no compression, no frame size limit); the server first sends
   its **metadata**, one msgpack-numpy frame (:mod:`evalband.policies._wire`);
2. for every inference the client sends the observation, a map of arrays (openpi's examples
   use keys such as ``observation/state`` and ``prompt``), and receives a map with
   ``actions`` (an action chunk ``(H, A)``) and ``server_timing`` (``infer_ms``,
   ``prev_total_ms``); a server-side exception arrives as a text frame with the traceback,
   after which the server closes the connection;
3. ``GET /healthz`` answers ``200 OK``.

openpi's protocol has no episode messages: its client resets only its own chunk broker
(``action_chunk_broker.py``). :class:`RemotePolicy` does the same (a fresh chunk every
episode) and, when the server says it speaks evalband's extension (metadata key
``"evalband"``, as ``evalband serve`` does), also sends ``"evalband": {"reset": true,
"context": {...}}`` with the first request of each episode so server-side state is reset.

An observation that is a dict is sent as is; an array is sent as ``{"state": obs}``. The
panel's task instruction goes as ``prompt``. A chunk ``(H, A)`` is executed for ``replan``
steps (all ``H`` when not given) before the server is asked again; a 1-D ``actions`` is one
action. ``timeout`` bounds each request's wall time, its reconnections and retries included
(a retry is made only while time is left), so a dead or hung server is an ``error`` episode
with the cause (:class:`ServerUnreachableError`) within ``timeout`` seconds, never a hang; the
runner stops the run after a few such episodes in a row. Needs the optional extra
``evalband[remote]`` (websockets, msgpack).

>>> p = RemotePolicy.from_url("ws://127.0.0.1:8000?replan=4&timeout=2")
>>> p.uri, p.replan, p.response_timeout, p.name
('ws://127.0.0.1:8000', 4, 2.0, 'ws://127.0.0.1:8000?replan=4&timeout=2')
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from evalband.errors import EvalbandError, InvalidParameterError
from evalband.policies._contract import EpisodeContext

__all__ = ["RemotePolicy", "RemotePolicyError", "ServerUnreachableError", "is_remote"]


class RemotePolicyError(EvalbandError):
    """The policy server could not be reached, timed out, or answered with an error."""


class ServerUnreachableError(RemotePolicyError):
    """The policy server did not answer a request in time, or could not be reached.

    The transport failed, every retry included (the server's own policy errors are not
    this). The runner stops a run after several episodes in a row end in it (a dead or hung
    server would turn the rest of the run into error episodes).
    """


def is_remote(name: str) -> bool:
    """Whether a policy name is a policy server URL.

    >>> is_remote("ws://gpu-box:8000"), is_remote("reach1d:damped")
    (True, False)
    """
    return name.startswith(("ws://", "wss://"))


@dataclass
class _Slot:
    """One lockstep slot's connection and episode state."""

    conn: Any = None
    queue: deque[Any] = field(default_factory=deque)
    context: EpisodeContext | None = None
    fresh: bool = True
    server_ms: list[float] = field(default_factory=list)


class RemotePolicy:
    """A client of a policy server speaking openpi's websocket protocol (module docstring).

    Per-slot state (``act_batch(obs_batch, slots)``): each lockstep slot has its own
    connection and action chunk, so ``--batch N`` sends N requests at once (a batching server
    such as ``evalband serve`` combines them) and episodes never share a chunk.

    Args:
        uri: ``ws://HOST:PORT``.
        replan: actions of each chunk executed before the next request (``None``: all).
        connect_timeout: seconds to open the connection and get the metadata (at most the
            time left of the request that opens it).
        response_timeout: seconds one request may take in all: sending, waiting for the
            answer, reconnecting and retrying.
        retries: reconnect-and-resend attempts after a failure, per request (while time is
            left).
        max_frame_bytes: largest answer read (:data:`~evalband._util.limits.MAX_FRAME_BYTES`
            by default); a larger one is an error, not memory.
        name: the name recorded in the run (the URL it was made from).
    """

    def __init__(self, uri: str, *, replan: int | None = None, connect_timeout: float = 10.0,
                 response_timeout: float = 60.0, retries: int = 2, name: str | None = None,
                 max_frame_bytes: int | None = None) -> None:
        if replan is not None and replan < 1:
            raise InvalidParameterError(f"replan must be >= 1 (actions per chunk); got {replan}")
        self.uri = uri
        self.replan = replan
        self.connect_timeout = float(connect_timeout)
        self.response_timeout = float(response_timeout)
        self.retries = int(retries)
        self.name = name or uri
        from evalband._util.limits import MAX_FRAME_BYTES

        self.max_frame_bytes = MAX_FRAME_BYTES if max_frame_bytes is None else max_frame_bytes
        self.metadata: dict[str, Any] | None = None
        self._slots: dict[int, _Slot] = {}

    @classmethod
    def from_url(cls, url: str) -> RemotePolicy:
        """Parse ``ws://HOST:PORT[?replan=K&timeout=S&connect_timeout=S&retries=N]``.

        Raises:
            InvalidParameterError: a malformed URL or query.
        """
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:  # out of 0-65535, or not a number
            port = None
        if parts.scheme not in ("ws", "wss") or not parts.hostname or port is None:
            raise InvalidParameterError(
                f"a policy server is named ws://HOST:PORT[?replan=K]; got {url!r}")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        known = {"replan", "timeout", "connect_timeout", "retries", "max_frame_mb"}
        if unknown := sorted(set(query) - known):
            raise InvalidParameterError(
                f"unknown option(s) {', '.join(unknown)} in {url!r}; expected "
                f"{', '.join(sorted(known))}")
        try:
            return cls(
                f"{parts.scheme}://{parts.hostname}:{port}{parts.path}",
                replan=int(query["replan"]) if "replan" in query else None,
                response_timeout=float(query.get("timeout", 60.0)),
                connect_timeout=float(query.get("connect_timeout", 10.0)),
                retries=int(query.get("retries", 2)), name=url,
                max_frame_bytes=(int(float(query["max_frame_mb"]) * 1024**2)
                                 if "max_frame_mb" in query else None))
        except ValueError as exc:
            raise InvalidParameterError(f"bad number in {url!r}: {exc}") from None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_slots"] = {}  # connections stay in the process that opened them
        return state

    # -- connection ----------------------------------------------------------------------

    def _connect(self, deadline: float | None = None) -> Any:
        from evalband.policies._wire import unpackb
        from evalband.policies._ws import BlockingClient

        wait = self.connect_timeout if deadline is None else min(
            self.connect_timeout, deadline - time.monotonic())
        if wait <= 0:
            raise TimeoutError("no time left to connect")
        start = time.monotonic()
        # websockets' protocol on one blocking socket: no reader thread per connection
        conn = BlockingClient(self.uri, open_timeout=wait, max_size=self.max_frame_bytes)
        try:
            first = conn.recv(timeout=max(wait - (time.monotonic() - start), 1e-3))
            if isinstance(first, str):
                raise RemotePolicyError(f"policy server {self.uri} sent text, not metadata: "
                                        f"{first.strip()[:200]}")
            metadata = unpackb(first)
        except BaseException:
            conn.close()
            raise
        self.metadata = metadata if isinstance(metadata, dict) else {}
        return conn

    def setup(self) -> None:
        """Connect slot 0 and read the server's metadata (a failure is retried per request)."""
        try:
            self._slot(0).conn = self._connect()
        except Exception:  # noqa: BLE001 - the first request retries and reports the cause
            pass

    def close(self) -> None:
        """Close every connection."""
        for slot in self._slots.values():
            if slot.conn is not None:
                slot.conn.close()
                slot.conn = None
        self._slots.clear()

    def _slot(self, index: int) -> _Slot:
        return self._slots.setdefault(index, _Slot())

    # -- lifecycle -------------------------------------------------------------------------

    def reset(self, context: EpisodeContext) -> None:
        """A new episode in ``context.slot``: drop its chunk; the next request says reset."""
        slot = self._slot(context.slot)
        slot.queue.clear()
        slot.context, slot.fresh = context, True
        slot.server_ms = []

    def episode_info(self, slot: int = 0) -> dict[str, Any]:
        """Server-reported compute time of this episode's requests (``server_infer_ms_*``)."""
        ms = sorted(self._slot(slot).server_ms)
        if not ms:
            return {}
        return {"server_infer_ms_p50": float(np.median(ms)),
                "server_infer_ms_max": ms[-1], "server_requests": len(ms)}

    def _request(self, slot: _Slot, obs: Any) -> dict[str, Any]:
        request: dict[str, Any] = dict(obs) if isinstance(obs, dict) else {"state": obs}
        if slot.context is not None and slot.context.task is not None:
            request.setdefault("prompt", slot.context.task)
        if self.metadata is not None and "evalband" in self.metadata:
            extension: dict[str, Any] = {"reset": slot.fresh}
            if slot.fresh and slot.context is not None:
                extension["context"] = slot.context.as_dict()
            request["evalband"] = extension
        return request

    def _send(self, slot: _Slot, obs: Any, deadline: float) -> None:
        from evalband.policies._wire import packb

        if slot.conn is None:
            slot.conn = self._connect(deadline)
        slot.conn.send(packb(self._request(slot, obs)),
                       timeout=max(deadline - time.monotonic(), 1e-3))

    def _receive(self, slot: _Slot, deadline: float) -> Any:
        from evalband.policies._wire import unpackb

        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        reply = slot.conn.recv(timeout=left)
        if isinstance(reply, str):
            raise RemotePolicyError(
                f"policy server {self.uri} failed: {reply.strip().splitlines()[-1]}")
        answer = unpackb(reply)
        if not isinstance(answer, dict) or "actions" not in answer:
            raise RemotePolicyError(
                f"policy server {self.uri} answered without 'actions' (got "
                f"{sorted(answer) if isinstance(answer, dict) else type(answer).__name__})")
        timing = answer.get("server_timing")
        if isinstance(timing, dict) and "infer_ms" in timing:
            slot.server_ms.append(float(timing["infer_ms"]))
        slot.fresh = False
        return answer["actions"]

    def _fail(self, slot: _Slot) -> None:
        if slot.conn is not None:
            slot.conn.close()
            slot.conn = None

    def _refill(self, pairs: Sequence[tuple[_Slot, Any]]) -> None:
        """Ask the server for a chunk for each ``(slot, obs)``: all sent, then all received."""
        todo = list(pairs)
        deadline = time.monotonic() + self.response_timeout  # the whole request's wall time
        errors: list[BaseException] = []
        attempts = 0
        for attempt in range(self.retries + 1):
            attempts += 1
            sent: list[tuple[_Slot, Any]] = []
            failed: list[tuple[_Slot, Any]] = []
            for slot, obs in todo:
                try:
                    self._send(slot, obs, deadline)
                    sent.append((slot, obs))
                except Exception as exc:  # noqa: BLE001 - refused, timed out, closed: retried
                    errors.append(exc)
                    self._fail(slot)
                    failed.append((slot, obs))
            for slot, obs in sent:
                try:
                    actions = np.asarray(self._receive(slot, deadline))
                except RemotePolicyError:
                    self._fail(slot)
                    raise
                except Exception as exc:  # noqa: BLE001 - closed, timed out: retried
                    errors.append(exc)
                    self._fail(slot)
                    failed.append((slot, obs))
                    continue
                chunk = actions if actions.ndim >= 2 else actions[None]
                slot.queue.extend(chunk[: self.replan] if self.replan else chunk)
            if not failed:
                return
            todo = failed
            pause = min(0.1 * 2**attempt, 1.0)
            if attempt == self.retries or deadline - time.monotonic() <= pause:
                break  # no time left for another attempt
            time.sleep(pause)
        cause = errors[-1]
        what = "did not answer in time" if isinstance(cause, TimeoutError) else "failed"
        raise ServerUnreachableError(
            f"policy server {self.uri} {what} after {attempts} attempt(s) in "
            f"{self.response_timeout:g} s: {type(cause).__name__}: {cause}; check that it "
            "runs (GET /healthz) or raise ?timeout= / ?retries=")

    # -- acting ----------------------------------------------------------------------------

    def act_batch(self, obs_batch: Any, slots: Sequence[int]) -> Any:
        """One action per row; row ``i`` belongs to slot ``slots[i]``."""
        rows = _rows(obs_batch, len(slots))
        states = [self._slot(s) for s in slots]
        self._refill([(state, row) for state, row in zip(states, rows, strict=True)
                      if not state.queue])
        return np.stack([np.asarray(state.queue.popleft()) for state in states])

    def act(self, obs: Any) -> Any:
        """The next action for slot 0 (a new chunk is requested when the last one ran out)."""
        slot = self._slot(0)
        if not slot.queue:
            self._refill([(slot, obs)])
        return slot.queue.popleft()


def _rows(obs_batch: Any, n: int) -> list[Any]:
    """Split a stacked batch (an array, or a dict of arrays) back into ``n`` observations."""
    if isinstance(obs_batch, dict):
        return [{k: v[i] for k, v in obs_batch.items()} for i in range(n)]
    return [obs_batch[i] for i in range(n)]
