"""``evalband view``: a small read-only web server over a run store.

Standard library only (:class:`http.server.ThreadingHTTPServer`). Each request opens the
store read-only (SQLite ``mode=ro``), so a concurrently running ``evalband run`` is never
blocked, and nothing the viewer does can change the store. Pages:

==================================  ===========================================================
``/``                               the runs (newest first) and the recorded comparisons
``/run/<run id>``                   the run's report (:func:`evalband.report.render_html`)
``/compare/<comparison id>``        the comparison's report
``/session/<session id>``           a hardware session: its runs, its stored analysis, looks
``/api/runs``                       the run list as JSON
``/api/runs/<run id>/progress``     one run: status, episodes stored and planned, outcomes
``/api/comparisons``                the recorded comparisons as JSON
``/api/sessions``                   the hardware sessions (runs, trials, analysis) as JSON
``/api/state[?runs=ID&runs=ID]``    a token that changes when a page may change (live pages)
==================================  ===========================================================

A page of a run that is still running polls ``/api/state`` and reloads when episodes arrive.
Bound to a loopback address (the default), the server answers only requests whose ``Host``
is a loopback name, which keeps other web sites from reading the store through the browser
(DNS rebinding).
"""

from __future__ import annotations

import collections
import contextlib
import html
import ipaddress
import json
import re
import socket
import socketserver
import sys
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evalband.errors import EvalbandError, InvalidParameterError, RunNotFoundError, StoreError
from evalband.report import html_page
from evalband.store import RunStore
from evalband.view._pages import (
    VIEW_CSP,
    comparison_row,
    decorate_report,
    index_page,
    message_page,
    run_row,
    store_state,
)

__all__ = ["ViewServer", "serve_in_background", "DEFAULT_HOST", "DEFAULT_PORT", "is_loopback"]

DEFAULT_HOST = "127.0.0.1"
"""Where the viewer listens unless told otherwise: this machine only."""

DEFAULT_PORT = 8765
"""The viewer's default port (``--port 0`` picks a free one)."""

_CACHE_PAGES = 16
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``127.0.0.0/8``, ``::1``, ``localhost``).

    >>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    name = host.strip().lower().removeprefix("[").removesuffix("]")
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_of(header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:80`` -> ``::1``)."""
    header = header.strip()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class ViewServer(ThreadingHTTPServer):
    """The viewer: a threading HTTP server that serves a run store's reports, read-only.

    Args:
        store: the run store (SQLite file); it must exist and be an evalband store.
        host: the address to listen on; a non-loopback address exposes the store to every
            machine that can reach this one.
        port: the TCP port; ``0`` picks a free one (see :attr:`url`).
        poll_ms: how often a live page asks whether its runs advanced.
        log_requests: write one line per request to stderr.

    Raises:
        StoreError: no store at ``store``, or not an evalband store.
        InvalidParameterError: a port outside 0..65535, an empty host, or an address that
            cannot be bound (in use, not this machine's).

    >>> import tempfile, urllib.request
    >>> from evalband.store import open_store
    >>> path = f"{tempfile.mkdtemp()}/s.sqlite"
    >>> open_store(path).close()
    >>> with serve_in_background(path) as server:
    ...     page = urllib.request.urlopen(server.url).read().decode()
    >>> "No runs in this store yet." in page
    True
    """

    daemon_threads = True

    def __init__(
        self,
        store: str | Path,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        poll_ms: int = 2000,
        log_requests: bool = False,
    ) -> None:
        if not isinstance(host, str) or not host.strip():
            raise InvalidParameterError(
                f"`host` must be an address such as 127.0.0.1; got {host!r}", parameters=("host",),
            )
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise InvalidParameterError(
                f"`port` must be a whole number in 0..65535; got {port!r}",
                parameters=("port",),
            )
        if isinstance(poll_ms, bool) or not isinstance(poll_ms, int) or poll_ms < 50:
            raise InvalidParameterError(f"poll_ms must be a whole number >= 50; got {poll_ms!r}")
        self.store_path = Path(store)
        RunStore(self.store_path, read_only=True).close()  # refuse a missing or foreign file
        self.host = host.strip().removeprefix("[").removesuffix("]")
        self.loopback = is_loopback(self.host)
        self.poll_ms = poll_ms
        self.log_requests = log_requests
        self.address_family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        self._render_lock = threading.Lock()
        self._cache: collections.OrderedDict[tuple[str, ...], tuple[str, str]] = (
            collections.OrderedDict())
        self._cache_lock = threading.Lock()
        try:
            super().__init__((self.host, port), _Handler)
        except OSError as exc:
            raise InvalidParameterError(
                f"cannot listen on {self.host} port {port}: {exc.strerror or exc}; pass "
                "`port` 0 for a free port, or `host` with an address of this machine",
                parameters=("port", "host"),
            ) from None

    def server_bind(self) -> None:
        """Bind without the reverse-DNS lookup :class:`http.server.HTTPServer` does."""
        socketserver.TCPServer.server_bind(self)
        self.server_name = self.host
        self.server_port = int(self.server_address[1])

    @property
    def port(self) -> int:
        """The port listened on (the one picked when ``port=0`` was asked)."""
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The run list's URL, e.g. ``http://127.0.0.1:8765/``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def store_label(self) -> str:
        """The store path as pages show it."""
        return str(self.store_path)

    def open_store(self) -> RunStore:
        """The store, opened read-only for one request."""
        return RunStore(self.store_path, read_only=True)

    def rendered(
        self,
        run_ids: Sequence[str],
        state: str,
        store: RunStore,
        options: dict[str, Any] | None = None,
    ) -> tuple[str, list[str], str]:
        """A report for ``run_ids``, re-rendered only when their ``state`` changed.

        ``options`` are a recorded comparison's (e.g. ``confidence``): the stored result of
        those runs under those options is rendered while it is current (see
        :func:`evalband.report._data.collect`); otherwise it is computed from the stored
        episodes. Nothing runs a policy or builds an env.

        Returns:
            The page, the names of recorded options this evalband does not know, and where
            the comparisons came from (``"stored"`` or ``"computed"``).
        """
        from evalband.analysis import comparison_settings
        from evalband.report import collect, report_html

        settings, ignored = comparison_settings(options or {})
        key = (*run_ids, "\x00", state, json.dumps(settings, sort_keys=True))
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached[0], ignored, cached[1]
        with self._render_lock:  # matplotlib's style context is process-global
            from evalband.view._episodes import media_url

            # clips linked from /media/, not embedded as multi-MB data: URIs
            data = collect(list(run_ids), store, media_link=media_url, **settings)
            page = report_html(data)
        with self._cache_lock:
            self._cache[key] = (page, data.comparisons_from)
            while len(self._cache) > _CACHE_PAGES:
                self._cache.popitem(last=False)
        return page, ignored, data.comparisons_from


_RANGE = re.compile(r"^bytes=(\d{0,18})-(\d{0,18})$")
"""A single byte range; positions of at most 18 digits (a file of up to 10**18 bytes): longer
ones are no range (416), never a number too large to read."""


class _NotFound(Exception):
    """A path or id the viewer does not know: a 404 page."""


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "evalband-view"

    def version_string(self) -> str:
        """The ``Server`` header: the viewer's name, no Python version."""
        return self.server_version

    # -- plumbing ----------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        """One line per request on stderr when asked (quiet by default)."""
        if self.server.log_requests:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    def _send(self, status: int, body: str, content_type: str, *, head: bool) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        if content_type == "text/html":
            self.send_header("Content-Security-Policy", f"{VIEW_CSP}; frame-ancestors 'none'")
        self.end_headers()
        if not head:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

    def _html(self, status: int, page: str, *, head: bool) -> None:
        self._send(status, page, "text/html", head=head)

    def _json(self, status: int, data: Any, *, head: bool) -> None:
        self._send(status, json.dumps(data, indent=1, default=str) + "\n", "application/json",
                   head=head)

    def _refuse(self, status: HTTPStatus, message: str, *, api: bool, head: bool) -> None:
        if api:
            self._json(status, {"error": message}, head=head)
        else:
            page = message_page(f"{status.value} {status.phrase}", message,
                                self.server.store_label)
            self._html(status, page, head=head)

    def _host_allowed(self) -> bool:
        if not self.server.loopback:
            return True
        header = self.headers.get("Host")
        return header is None or is_loopback(_host_of(header))

    def do_GET(self) -> None:
        """Serve a page or a JSON answer."""
        self._handle(head=False)

    def do_HEAD(self) -> None:
        """As GET, without the body."""
        self._handle(head=True)

    def _read_only(self) -> None:
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _read_only

    # -- routing -----------------------------------------------------------------------

    def _handle(self, *, head: bool) -> None:
        split = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in split.path.split("/")[1:]]
        if parts and parts[-1] == "":
            parts.pop()
        api = bool(parts) and parts[0] == "api"
        if not self._host_allowed():
            self._refuse(HTTPStatus.FORBIDDEN, "the viewer answers requests for this machine "
                         "only (Host must be 127.0.0.1 or localhost)", api=api, head=head)
            return
        if len(parts) == 2 and parts[0] == "media":
            self._media(parts[1], head=head)
            return
        if parts == ["favicon.ico"]:
            self.send_response(HTTPStatus.NO_CONTENT)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            with self.server.open_store() as store:
                if api:
                    self._json(HTTPStatus.OK, self._api(parts[1:], split.query, store), head=head)
                else:
                    self._html(HTTPStatus.OK, self._page(parts, store), head=head)
        except (_NotFound, RunNotFoundError) as exc:
            self._refuse(HTTPStatus.NOT_FOUND, str(exc), api=api, head=head)
        except StoreError as exc:
            self._refuse(HTTPStatus.SERVICE_UNAVAILABLE, f"the run store cannot be read: {exc}",
                         api=api, head=head)
        except EvalbandError as exc:
            self._refuse(HTTPStatus.UNPROCESSABLE_ENTITY, f"cannot render this report: {exc}",
                         api=api, head=head)
        except Exception as exc:  # a bug: say so in one line, keep serving
            sys.stderr.write(f"evalband view: {self.path}: {type(exc).__name__}: {exc}\n")
            self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR,
                         f"internal error ({type(exc).__name__}: {exc})", api=api, head=head)

    def _media(self, name: str, *, head: bool) -> None:
        """A stored clip, with its content type and HTTP range requests (RFC 9110 §14)."""
        from evalband.store import content_type_of, media_dir
        from evalband.view._episodes import MEDIA_NAME

        path = media_dir(self.server.store_path) / name
        if not MEDIA_NAME.match(name) or not path.is_file():
            self._refuse(HTTPStatus.NOT_FOUND, f"no stored media {name!r}", api=True, head=head)
            return
        size = path.stat().st_size
        start, end = 0, size - 1
        status = HTTPStatus.OK
        wanted = self.headers.get("Range")
        if wanted:
            match = _RANGE.match(wanted.strip())
            first = match.group(1) if match else None
            last = match.group(2) if match else None
            if match and first:
                start = int(first)
                end = min(int(last), size - 1) if last else size - 1
            elif match and last:  # the last N bytes
                start, end = max(0, size - int(last)), size - 1
            if not match or start > end or start >= size:
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = HTTPStatus.PARTIAL_CONTENT
        self.send_response(status)
        self.send_header("Content-Type", content_type_of(name))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        if status is HTTPStatus.PARTIAL_CONTENT:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Cache-Control", "private, max-age=31536000, immutable")  # by content
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if head:
            return
        with path.open("rb") as fh, contextlib.suppress(BrokenPipeError, ConnectionResetError):
            fh.seek(start)
            left = end - start + 1
            while left > 0:
                chunk = fh.read(min(left, 1 << 16))
                if not chunk:
                    break
                self.wfile.write(chunk)
                left -= len(chunk)

    def _page(self, parts: list[str], store: RunStore) -> str:
        if not parts:
            return self._index(store)
        if len(parts) == 2 and parts[0] == "run":
            store.require_run(parts[1])
            return self._report([parts[1]], store)
        if len(parts) == 3 and parts[0] == "run" and parts[2] == "episodes":
            from evalband.view._episodes import episodes_page

            store.require_run(parts[1])
            return decorate_report(
                episodes_page(parts[1], store.episode_records(parts[1]), csp=VIEW_CSP),
                self.server.store_label, run_ids=[], state="", running=False,
                poll_ms=self.server.poll_ms)
        if len(parts) == 2 and parts[0] == "compare":
            comparison = store.get_comparison(parts[1])
            if comparison is None:
                raise _NotFound(f"no comparison {parts[1]!r} is recorded in this store; the run "
                                "list shows the recorded ones")
            for run_id in comparison["run_ids"]:
                store.require_run(run_id)
            return self._report(comparison["run_ids"], store, comparison["options"])
        if len(parts) == 2 and parts[0] == "session":
            from evalband.errors import SessionNotFoundError
            from evalband.view._pages import _nav
            from evalband.view._sessions import session_page

            try:
                return session_page(store, parts[1], _nav(self.server.store_label), VIEW_CSP)
            except SessionNotFoundError as exc:
                raise _NotFound(str(exc)) from None
        raise _NotFound(f"the viewer has no page {'/' + '/'.join(parts)!r}")

    def _index(self, store: RunStore) -> str:
        state, _ = store_state(store)
        runs = [run_row(store, m) for m in store.list_runs()]
        by_id = {r["run_id"]: r for r in runs}
        comparisons = [comparison_row(c, by_id) for c in store.comparisons()]
        from evalband.view._sessions import session_rows, sessions_table

        sessions = session_rows(store)
        return index_page(self.server.store_label, runs, comparisons, state=state,
                          poll_ms=self.server.poll_ms,
                          sessions=sessions_table(sessions) if sessions else "")

    def _report(
        self, run_ids: list[str], store: RunStore, options: dict[str, Any] | None = None
    ) -> str:
        from evalband.analysis import incomplete

        state, running = store_state(store, run_ids)
        partial = any(m is not None and incomplete(store.count_episodes(r), m.n_planned, m.status)
                      for r in run_ids for m in [store.get_run(r)])
        if (running or partial) and len(run_ids) > 1:
            # read live or off a partial run: the anytime-valid verdict (valid at every look)
            options = {**(options or {}), "sequential": True}
        ignored: list[str] = []
        notes: list[str] = []
        empty = [r for r in run_ids if store.count_episodes(r) == 0]
        if empty:
            names = html.escape(", ".join(run_ids))
            page = html_page(
                f"evalband: {', '.join(run_ids)}",
                f"<header><h1>{names}</h1></header><p>No episodes stored yet for "
                f"{html.escape(', '.join(empty))}; the report appears with the first one.</p>",
            )
        else:
            page, ignored, source = self.server.rendered(run_ids, state, store, options)
            if options is not None and source == "computed" and not (running or partial):
                notes.append("computed from the stored episodes (this comparison was recorded "
                             "without its result, or its runs changed since)")
        if ignored and options:
            recorded = ", ".join(f"{k} {options[k]}" for k in ignored)
            notes.append(f"recorded with {recorded}; this report uses the defaults")
        note = "; ".join(notes)
        return decorate_report(page, self.server.store_label, run_ids=run_ids, state=state,
                               running=running, poll_ms=self.server.poll_ms, note=note)

    def _api(self, parts: list[str], query: str, store: RunStore) -> Any:
        if parts == ["runs"]:
            return [run_row(store, m) for m in store.list_runs()]
        if len(parts) == 3 and parts[0] == "runs" and parts[2] == "progress":
            return run_row(store, store.require_run(parts[1]))
        if parts == ["comparisons"]:
            by_id = {m.run_id: run_row(store, m) for m in store.list_runs()}
            return [comparison_row(c, by_id) for c in store.comparisons()]
        if parts == ["sessions"]:
            from evalband.view._sessions import session_rows

            return session_rows(store)
        if parts == ["state"]:
            run_ids = urllib.parse.parse_qs(query).get("runs")
            state, running = store_state(store, run_ids)
            return {"state": state, "running": running}
        raise _NotFound(f"the viewer has no API endpoint {'/api/' + '/'.join(parts)!r}")


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
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
        name="evalband-view",
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
