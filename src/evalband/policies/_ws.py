"""Lean websocket I/O for remote policies: websockets' own protocol, without its I/O layers.

The ``websockets`` package (https://websockets.readthedocs.io, "Sans-I/O" layer:
``websockets.client.ClientProtocol`` and ``websockets.server.ServerProtocol``) implements
RFC 6455 (handshake, framing, masking, ping/pong, the closing handshake) as plain objects fed
with bytes. Its ready-made connections add a reader thread per client connection (the
``sync`` client: every message crosses threads, and the GIL, before ``recv`` returns it) and
a task, locks and futures per message (the ``asyncio`` server). A policy server's requests
are small and many, so this module drives the same protocol objects directly (parsing and
framing a request and its reply costs them ~25 us, both sides together, measured here):

* :class:`BlockingClient`: one blocking socket (``TCP_NODELAY``), no thread; ``recv`` reads
  until a whole message has arrived or the timeout passes (``TimeoutError``);
* :class:`ServerConnection`: an :class:`asyncio.Protocol` that answers plain HTTP requests
  (``GET /healthz``) from a callback, and hands every complete message to a callback as it
  is parsed, on the event loop, with no task per message.

Everything on the wire is what the ``websockets`` protocol objects write, so peers using
``websockets`` (openpi's client and server, ``websockets.sync``) see no difference.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidHandshake
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

__all__ = ["BlockingClient", "ServerConnection"]

_READ = 1 << 16


class _Assembler:
    """Whole messages from data frames (a fragmented message's frames joined)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.text = False

    def add(self, frame: Frame) -> bytes | str | None:
        """The message ``frame`` completes, or ``None`` (a control frame, or more to come)."""
        if frame.opcode is Opcode.TEXT or frame.opcode is Opcode.BINARY:
            self.text, self.parts = frame.opcode is Opcode.TEXT, []
        elif frame.opcode is not Opcode.CONT:
            return None
        self.parts.append(bytes(frame.data))
        if not frame.fin:
            return None
        data = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        self.parts = []
        return data.decode() if self.text else data


class BlockingClient:
    """A websocket client on one blocking socket (no reader thread).

    Args:
        uri: ``ws://HOST:PORT[/path]`` (``wss://`` over TLS).
        open_timeout: seconds to connect and complete the handshake.
        max_size: largest message read (bytes); a larger one closes the connection
            (``None``: no limit).

    Raises:
        OSError: the connection failed (refused, unreachable; ``TimeoutError`` when late).
        websockets.exceptions.InvalidHandshake: the server refused the websocket handshake.
    """

    def __init__(self, uri: str, *, open_timeout: float = 10.0,
                 max_size: int | None = None) -> None:
        wsuri = parse_uri(uri)
        deadline = time.monotonic() + open_timeout
        sock = socket.create_connection((wsuri.host, wsuri.port), timeout=open_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if wsuri.secure:
                import ssl

                sock = ssl.create_default_context().wrap_socket(sock,
                                                                server_hostname=wsuri.host)
            self._sock = sock
            self._messages: deque[bytes | str] = deque()
            self._frames = _Assembler()
            self.protocol = ClientProtocol(wsuri, max_size=max_size)
            self.protocol.send_request(self.protocol.connect())
            self._flush()
            while self.protocol.state is State.CONNECTING and self._read(deadline):
                pass
            if self.protocol.handshake_exc is not None:
                raise self.protocol.handshake_exc
            if self.protocol.state is not State.OPEN:
                raise InvalidHandshake(f"websocket handshake with {uri} did not complete")
        except BaseException:
            sock.close()
            raise

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self._sock.sendall(data)

    def _read(self, deadline: float | None) -> bool:
        """Read once from the socket and parse what came; ``False`` at the end of the stream.

        Raises:
            TimeoutError: nothing came before ``deadline``.
        """
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out")
            self._sock.settimeout(left)
        else:
            self._sock.settimeout(None)
        data = self._sock.recv(_READ)
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        for event in self.protocol.events_received():
            if isinstance(event, Frame):
                message = self._frames.add(event)
                if message is not None:
                    self._messages.append(message)
        self._flush()
        return bool(data)

    def send(self, data: bytes, timeout: float | None = None) -> None:
        """Send one binary message (``timeout``: seconds the socket may block writing it)."""
        if self.protocol.state is not State.OPEN:
            raise _closed(self.protocol)
        self.protocol.send_binary(data)
        self._sock.settimeout(timeout)
        self._flush()

    def recv(self, timeout: float | None = None) -> bytes | str:
        """The next message (``bytes`` for binary, ``str`` for text), waiting up to ``timeout``.

        Raises:
            TimeoutError: no whole message within ``timeout`` seconds.
            websockets.exceptions.ConnectionClosed: the connection closed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._messages:
            if self.protocol.state is not State.OPEN or not self._read(deadline):
                if not self._messages:
                    raise _closed(self.protocol)
        return self._messages.popleft()

    def close(self) -> None:
        """Start the closing handshake (when open) and close the socket; never raises."""
        try:
            if self.protocol.state is State.OPEN:
                self.protocol.send_close()
                self._flush()
        except (OSError, AttributeError):
            pass
        finally:
            self._sock.close()


class ServerConnection(asyncio.Protocol):
    """One client of an asyncio websocket server, its messages handed to callbacks.

    Args:
        on_http: called with each handshake ``Request``; returns ``(status, text)`` to answer
            it as plain HTTP (and close), or ``None`` to accept the websocket.
        on_open: called with this connection once the websocket is open.
        on_message: called with this connection and each complete message.
        on_close: called with this connection once it is closed (only if it opened).
        max_size: largest message taken (bytes): a frame announcing more closes the
            connection (1009, "message too big") before its payload is read.
    """

    def __init__(self, on_http: Callable[[Request], tuple[int, str] | None],
                 on_open: Callable[[ServerConnection], None],
                 on_message: Callable[[ServerConnection, bytes | str], None],
                 on_close: Callable[[ServerConnection], None],
                 max_size: int | None = None) -> None:
        self._on_http, self._on_open = on_http, on_open
        self._on_message, self._on_close = on_message, on_close
        self.protocol = ServerProtocol(max_size=max_size)
        self.transport: asyncio.Transport | None = None
        self._frames = _Assembler()
        self.opened = False
        self.data: dict[str, Any] = {}  # the application's per-connection state

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.protocol.receive_data(data)
        self._events()

    def eof_received(self) -> bool | None:
        self.protocol.receive_eof()
        self._events()
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.opened:
            self.opened = False
            self._on_close(self)

    # -- websocket ---------------------------------------------------------------------------

    @property
    def open(self) -> bool:
        """Whether messages can still be sent."""
        return self.transport is not None and self.protocol.state is State.OPEN

    def _events(self) -> None:
        for event in self.protocol.events_received():
            if isinstance(event, Request):
                answer = self._on_http(event)
                if answer is None:
                    response = self.protocol.accept(event)
                else:
                    response = self.protocol.reject(answer[0], answer[1])
                self.protocol.send_response(response)
                self._flush()
                if self.protocol.state is State.OPEN:
                    self.opened = True
                    self._on_open(self)
            elif isinstance(event, Frame):
                message = self._frames.add(event)
                if message is not None:
                    self._on_message(self, message)
        self._flush()

    def _flush(self) -> None:
        if self.transport is None:
            return
        for data in self.protocol.data_to_send():
            if data:
                self.transport.write(data)
            else:  # the protocol is done with the connection
                self.transport.close()
                return

    def send(self, data: bytes | str) -> None:
        """Send one message (text for ``str``); dropped when the connection is closed."""
        if not self.open:
            return
        if isinstance(data, str):
            self.protocol.send_text(data.encode())
        else:
            self.protocol.send_binary(data)
        self._flush()

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake (the client's reply, or its EOF, ends the connection)."""
        if self.open:
            self.protocol.send_close(code, reason)
            self._flush()
        if self.transport is not None and self.protocol.close_expected():
            loop = asyncio.get_running_loop()
            transport = self.transport
            loop.call_later(2.0, transport.abort)  # a client that never answers the close

    def abort(self) -> None:
        """Drop the connection at once."""
        if self.transport is not None:
            self.transport.abort()


def _closed(protocol: ClientProtocol) -> ConnectionClosed:
    """What to raise on a connection that is closing or closed."""
    if protocol.state is State.CLOSED:
        return protocol.close_exc
    return ConnectionClosedError(protocol.close_rcvd, protocol.close_sent)
