"""The one web server: a Starlette application on uvicorn, in a thread of this process.

:class:`WebServer` binds its socket when it is made (so a port in use is a clear error at
once, and ``port=0`` knows its port), then serves the application of :func:`~evalband.web.
build_app` on uvicorn in a daemon thread: the calling thread stays free (the terminal of a
console session, Ctrl-C). :class:`ViewServer` is that server with the read-only viewer
(``evalband view``); a console session's server (``session run --console``) is the same
class with the console mounted (:func:`evalband.web.console_server`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.errors import InvalidParameterError
from evalband.web._guard import is_loopback

if TYPE_CHECKING:
    from evalband.web._hub import Console

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "WebServer", "ViewServer", "serve_in_background"]

DEFAULT_HOST = "127.0.0.1"
"""Where the server listens unless told otherwise: this machine only."""

DEFAULT_PORT = 8765
"""The default port (``--port 0`` picks a free one)."""

_START_TIMEOUT_S = 30.0


def _check_address(host: object, port: object) -> None:
    if not isinstance(host, str) or not host.strip():
        raise InvalidParameterError(
            f"`host` must be an address such as 127.0.0.1; got {host!r}", parameters=("host",),
        )
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidParameterError(
            f"`port` must be a whole number in 0..65535; got {port!r}", parameters=("port",),
        )


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InvalidParameterError(
            f"cannot listen on {host} port {port}: {exc.strerror or exc}; pass `port` 0 for a "
            "free port, or `host` with an address of this machine",
            parameters=("port", "host"),
        ) from None
    sock.set_inheritable(True)
    return sock


class WebServer:
    """The evalband web application, served by uvicorn on a socket bound at construction.

    Args:
        store: the store (SQLite file) the viewer reads; ``None`` with a console only.
        host: the address to listen on; a non-loopback address exposes the server to every
            machine that can reach this one.
        port: the TCP port; ``0`` picks a free one (see :attr:`url`).
        poll_ms: how often a live viewer page asks whether its runs advanced.
        log_requests: write one line per request to stderr.
        viewer: serve the read-only viewer.
        console: a session console to serve (:class:`evalband.web.Console`).
        token: the token every request must carry (``None``: none).

    Raises:
        StoreError: no store at ``store``, or not an evalband store.
        InvalidParameterError: a port outside 0..65535, an empty host, or an address that
            cannot be bound (in use, not this machine's).
    """

    def __init__(
        self,
        store: str | Path | None,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        poll_ms: int = 2000,
        log_requests: bool = False,
        viewer: bool = True,
        console: Console | None = None,
        token: str | None = None,
    ) -> None:
        from evalband.web._app import build_app
        from evalband.web._viewer import Viewer

        _check_address(host, port)
        if isinstance(poll_ms, bool) or not isinstance(poll_ms, int) or poll_ms < 50:
            raise InvalidParameterError(f"poll_ms must be a whole number >= 50; got {poll_ms!r}")
        self.host = host.strip().removeprefix("[").removesuffix("]")
        self.loopback = is_loopback(self.host)
        self.token = token
        self.log_requests = log_requests
        self.viewer = Viewer(store, poll_ms=poll_ms) if viewer and store is not None else None
        self.console = console
        self._socket = _bind(self.host, port)
        self._port = int(self._socket.getsockname()[1])
        self.app = build_app(viewer=self.viewer, console=console, loopback=self.loopback,
                             token=token, port=self.port)
        self._uvicorn: Any = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port listened on (the one picked when ``port=0`` was asked)."""
        return self._port

    @property
    def url(self) -> str:
        """The server's root URL, e.g. ``http://127.0.0.1:8765/`` (no token)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def store_path(self) -> Path | None:
        """The viewer's store."""
        return None if self.viewer is None else self.viewer.store_path

    @property
    def store_label(self) -> str:
        """The store path as pages show it."""
        return "" if self.viewer is None else self.viewer.store_label

    def open_store(self) -> Any:
        """The viewer's store, opened read-only for one request."""
        assert self.viewer is not None
        return self.viewer.open_store()

    # -- running -------------------------------------------------------------------------

    @property
    def serving(self) -> bool:
        """Whether the server's thread is running."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Serve in a daemon thread; return once uvicorn has started."""
        import uvicorn

        if self._thread is not None:
            return
        config = uvicorn.Config(
            self.app, log_config=None, log_level="warning", access_log=self.log_requests,
            server_header=False, lifespan="off", loop="asyncio", ws="auto",
            ws_max_size=1 << 20, timeout_graceful_shutdown=2,
        )
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._uvicorn.run,
                                        kwargs={"sockets": [self._socket]}, daemon=True,
                                        name="evalband-web")
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._uvicorn.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)

    def serve_forever(self) -> None:
        """Serve until Ctrl-C (:class:`KeyboardInterrupt`) or :meth:`shutdown`."""
        self.start()
        assert self._thread is not None
        try:
            while self._thread.is_alive():
                self._thread.join(0.2)
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop serving (open WebSockets are closed) and wait for the server's thread."""
        if self.console is not None:
            self.console.close_subscribers()
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def server_close(self) -> None:
        """Close the listening socket (after :meth:`shutdown`)."""
        with contextlib.suppress(OSError):
            self._socket.close()


class ViewServer(WebServer):
    """``evalband view``: the web server with the read-only viewer over a run store.

    Each request opens the store read-only (SQLite ``mode=ro``), so a concurrently running
    ``evalband run`` is never blocked, and nothing the viewer does can change the store.

    >>> import tempfile, urllib.request
    >>> from evalband.store import open_store
    >>> path = f"{tempfile.mkdtemp()}/s.sqlite"
    >>> open_store(path).close()
    >>> with serve_in_background(path) as server:
    ...     page = urllib.request.urlopen(server.url).read().decode()
    >>> "No runs in this store yet." in page
    True
    """

    def __init__(self, store: str | Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 *, poll_ms: int = 2000, log_requests: bool = False) -> None:
        super().__init__(store, host, port, poll_ms=poll_ms, log_requests=log_requests)


@contextlib.contextmanager
def serve_in_background(
    store: str | Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = 0,
    poll_ms: int = 2000,
) -> Iterator[ViewServer]:
    """Run a :class:`ViewServer` in a daemon thread for the ``with`` block (tests, scripts).

    >>> import tempfile, json, urllib.request
    >>> from evalband.store import open_store
    >>> path = f"{tempfile.mkdtemp()}/s.sqlite"
    >>> open_store(path).close()
    >>> with serve_in_background(path) as server:
    ...     json.load(urllib.request.urlopen(server.url + "api/runs"))
    []
    """
    server = ViewServer(store, host, port, poll_ms=poll_ms)
    server.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
