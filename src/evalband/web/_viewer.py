"""The read-only viewer (``evalband view``) as routes of the one web application.

Pages:

==================================  ===========================================================
``/``                               the runs (newest first) and the recorded comparisons
``/run/<run id>``                   the run's report (:func:`evalband.report.render_html`)
``/run/<run id>/episodes``          every episode of the run, with its clips
``/run/<run id>/steps/<sha256>``    an episode's step data as traces, aligned with its clip
``/compare/<comparison id>``        the comparison's report
``/session/<session id>``           a hardware session: its runs, its stored analysis, looks
``/media/<name>``                   a stored clip (HTTP range requests)
``/api/runs``                       the run list as JSON
``/api/runs/<run id>/progress``     one run: status, episodes stored and planned, outcomes
``/api/comparisons``                the recorded comparisons as JSON
``/api/sessions``                   the hardware sessions (runs, trials, analysis) as JSON
``/api/state[?runs=ID&runs=ID]``    a token that changes when a page may change (live pages)
==================================  ===========================================================

Each request opens the store read-only (SQLite ``mode=ro``): a concurrently running
``evalband run`` is never blocked and nothing the viewer does can change the store. A page
of a run that is still running polls ``/api/state`` and reloads when episodes arrive. Only
GET and HEAD are answered (405 otherwise). Pages are rendered in Starlette's thread pool.
"""

from __future__ import annotations

import collections
import html
import json
import re
import sys
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.errors import EvalbandError, RunNotFoundError, StoreError
from evalband.report import html_page
from evalband.store import RunStore
from evalband.web._view_pages import (
    VIEW_CSP,
    comparison_row,
    decorate_report,
    index_page,
    message_page,
    run_row,
    store_state,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["Viewer", "viewer_response"]

_CACHE_PAGES = 16
_RANGE = re.compile(r"^bytes=(\d{0,18})-(\d{0,18})$")
"""A single byte range; positions of at most 18 digits (a file of up to 10**18 bytes): longer
ones are no range (416), never a number too large to read."""
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer"}


class _NotFound(Exception):
    """A path or id the viewer does not know: a 404 page."""


class Viewer:
    """The viewer's state: the store it reads and its cache of rendered reports.

    Args:
        store: the run store (SQLite file); it must exist and be an evalband store.
        poll_ms: how often a live page asks whether its runs advanced.

    Raises:
        StoreError: no store at ``store``, or not an evalband store.
    """

    def __init__(self, store: str | Path, *, poll_ms: int = 2000) -> None:
        self.store_path = Path(store)
        RunStore(self.store_path, read_only=True).close()  # refuse a missing or foreign file
        self.poll_ms = poll_ms
        self._render_lock = threading.Lock()
        self._cache: collections.OrderedDict[tuple[str, ...], tuple[str, str]] = (
            collections.OrderedDict())
        self._cache_lock = threading.Lock()

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
        those runs under those options is rendered while it is current; otherwise it is
        computed from the stored episodes. Nothing runs a policy or builds an env.

        Returns:
            The page, the names of recorded options this evalband does not know, and where
            the comparisons came from (``"stored"`` or ``"computed"``).
        """
        from evalband.analysis._stored import comparison_settings
        from evalband.report import collect
        from evalband.report._html import report_html

        settings, ignored = comparison_settings(options or {})
        key = (*run_ids, "\x00", state, json.dumps(settings, sort_keys=True))
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached[0], ignored, cached[1]
        with self._render_lock:  # matplotlib's style context is process-global
            from evalband.web._view_episodes import media_url

            # clips linked from /media/, not embedded as multi-MB data: URIs
            data = collect(list(run_ids), store, media_link=media_url, **settings)
            page = report_html(data)
        with self._cache_lock:
            self._cache[key] = (page, data.comparisons_from)
            while len(self._cache) > _CACHE_PAGES:
                self._cache.popitem(last=False)
        return page, ignored, data.comparisons_from

    # -- requests ------------------------------------------------------------------------

    def answer(self, method: str, path: str, query: str,
               headers: dict[str, str]) -> tuple[int, dict[str, str], bytes | Iterator[bytes]]:
        """``(status, headers, body)`` for one request (the body is empty for HEAD)."""
        if method not in ("GET", "HEAD"):
            return HTTPStatus.METHOD_NOT_ALLOWED, {"Allow": "GET, HEAD",
                                                   "Content-Length": "0"}, b""
        head = method == "HEAD"
        parts = [urllib.parse.unquote(p) for p in path.split("/")[1:]]
        if parts and parts[-1] == "":
            parts.pop()
        api = bool(parts) and parts[0] == "api"
        if len(parts) == 2 and parts[0] == "media":
            return self._media(parts[1], headers.get("range"), head=head)
        if parts == ["favicon.ico"]:
            return HTTPStatus.NO_CONTENT, {"Content-Length": "0"}, b""
        try:
            with self.open_store() as store:
                if api:
                    return _json(HTTPStatus.OK, self._api(parts[1:], query, store), head=head)
                return _html(HTTPStatus.OK, self._page(parts, store), head=head)
        except (_NotFound, RunNotFoundError) as exc:
            return self._refuse(HTTPStatus.NOT_FOUND, str(exc), api=api, head=head)
        except StoreError as exc:
            return self._refuse(HTTPStatus.SERVICE_UNAVAILABLE,
                                f"the run store cannot be read: {exc}", api=api, head=head)
        except EvalbandError as exc:
            return self._refuse(HTTPStatus.UNPROCESSABLE_ENTITY,
                                f"cannot render this report: {exc}", api=api, head=head)
        except Exception as exc:  # noqa: BLE001 - a bug: say so in one line, keep serving
            sys.stderr.write(f"evalband view: {path}: {type(exc).__name__}: {exc}\n")
            return self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR,
                                f"internal error ({type(exc).__name__}: {exc})", api=api,
                                head=head)

    def _refuse(self, status: HTTPStatus, message: str, *, api: bool,
                head: bool) -> tuple[int, dict[str, str], bytes]:
        if api:
            return _json(status, {"error": message}, head=head)
        return _html(status, message_page(f"{status.value} {status.phrase}", message,
                                          self.store_label), head=head)

    def _media(self, name: str, wanted: str | None,
               *, head: bool) -> tuple[int, dict[str, str], bytes | Iterator[bytes]]:
        """A stored clip, with its content type and HTTP range requests (RFC 9110 §14)."""
        from evalband.store._media import content_type_of, media_dir
        from evalband.web._view_episodes import MEDIA_NAME

        path = media_dir(self.store_path) / name
        if not MEDIA_NAME.match(name) or not path.is_file():
            return self._refuse(HTTPStatus.NOT_FOUND, f"no stored media {name!r}", api=True,
                                head=head)
        size = path.stat().st_size
        start, end = 0, size - 1
        status = HTTPStatus.OK
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
                return (HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE,
                        {"Content-Range": f"bytes */{size}", "Content-Length": "0"}, b"")
            status = HTTPStatus.PARTIAL_CONTENT
        headers = {"Content-Type": content_type_of(name), "Accept-Ranges": "bytes",
                   "Content-Length": str(end - start + 1),
                   "Cache-Control": "private, max-age=31536000, immutable",  # by content
                   "X-Content-Type-Options": "nosniff"}
        if status is HTTPStatus.PARTIAL_CONTENT:
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        if head:
            return status, headers, b""
        return status, headers, _chunks(path, start, end - start + 1)

    def _page(self, parts: list[str], store: RunStore) -> str:
        if not parts:
            return self._index(store)
        if len(parts) == 2 and parts[0] == "run":
            store.require_run(parts[1])
            return self._report([parts[1]], store)
        if len(parts) == 3 and parts[0] == "run" and parts[2] == "episodes":
            from evalband.web._view_episodes import episodes_page

            store.require_run(parts[1])
            return decorate_report(
                episodes_page(parts[1], store.episode_records(parts[1]), csp=VIEW_CSP),
                self.store_label, run_ids=[], state="", running=False, poll_ms=self.poll_ms)
        if len(parts) == 4 and parts[0] == "run" and parts[2] == "steps":
            return self._steps(parts[1], parts[3], store)
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
            from evalband.web._view_pages import _nav
            from evalband.web._view_sessions import session_page

            try:
                return session_page(store, parts[1], _nav(self.store_label), VIEW_CSP)
            except SessionNotFoundError as exc:
                raise _NotFound(str(exc)) from None
        raise _NotFound(f"the viewer has no page {'/' + '/'.join(parts)!r}")

    def _steps(self, run_id: str, digest: str, store: RunStore) -> str:
        """The timeline of the run's episode whose step data has sha256 ``digest``."""
        from evalband.store import read_steps
        from evalband.store._steps import steps_ref
        from evalband.web._view_episodes import media_url
        from evalband.web._view_steps import steps_page

        store.require_run(run_id)
        for record in store.episode_records(run_id):
            ref = steps_ref(record)
            if ref is None or ref.get("sha256") != digest:
                continue
            data = read_steps(self.store_path, record)
            if data is None:
                raise _NotFound(f"the step data of episode {record.episode} of {run_id} is no "
                                "longer beside the store")
            clips = [(url, int(m.get("frames") or 0)) for m in record.media
                     if m.get("kind", "video") == "video" and (url := media_url(m))]
            page = steps_page(run_id, record, data, clips, csp=VIEW_CSP)
            return decorate_report(page, self.store_label, run_ids=[], state="",
                                   running=False, poll_ms=self.poll_ms)
        raise _NotFound(f"no episode of run {run_id} has step data {digest[:12]!r}")

    def _index(self, store: RunStore) -> str:
        from evalband.web._view_sessions import session_rows, sessions_table

        state, _ = store_state(store)
        runs = [run_row(store, m) for m in store.list_runs()]
        by_id = {r["run_id"]: r for r in runs}
        comparisons = [comparison_row(c, by_id) for c in store.comparisons()]
        sessions = session_rows(store)
        return index_page(self.store_label, runs, comparisons, state=state,
                          poll_ms=self.poll_ms,
                          sessions=sessions_table(sessions) if sessions else "")

    def _report(
        self, run_ids: list[str], store: RunStore, options: dict[str, Any] | None = None
    ) -> str:
        from evalband.analysis._sequential import incomplete

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
            page, ignored, source = self.rendered(run_ids, state, store, options)
            if options is not None and source == "computed" and not (running or partial):
                notes.append("computed from the stored episodes (this comparison was recorded "
                             "without its result, or its runs changed since)")
        if ignored and options:
            recorded = ", ".join(f"{k} {options[k]}" for k in ignored)
            notes.append(f"recorded with {recorded}; this report uses the defaults")
        note = "; ".join(notes)
        return decorate_report(page, self.store_label, run_ids=run_ids, state=state,
                               running=running, poll_ms=self.poll_ms, note=note)

    def _api(self, parts: list[str], query: str, store: RunStore) -> Any:
        if parts == ["runs"]:
            return [run_row(store, m) for m in store.list_runs()]
        if len(parts) == 3 and parts[0] == "runs" and parts[2] == "progress":
            return run_row(store, store.require_run(parts[1]))
        if parts == ["comparisons"]:
            by_id = {m.run_id: run_row(store, m) for m in store.list_runs()}
            return [comparison_row(c, by_id) for c in store.comparisons()]
        if parts == ["sessions"]:
            from evalband.web._view_sessions import session_rows

            return session_rows(store)
        if parts == ["state"]:
            run_ids = urllib.parse.parse_qs(query).get("runs")
            state, running = store_state(store, run_ids)
            return {"state": state, "running": running}
        raise _NotFound(f"the viewer has no API endpoint {'/api/' + '/'.join(parts)!r}")


def _chunks(path: Path, start: int, length: int) -> Iterator[bytes]:
    with path.open("rb") as fh:
        fh.seek(start)
        left = length
        while left > 0:
            chunk = fh.read(min(left, 1 << 16))
            if not chunk:
                break
            yield chunk
            left -= len(chunk)


def _send(status: int, body: str, content_type: str,
          *, head: bool) -> tuple[int, dict[str, str], bytes]:
    data = body.encode("utf-8")
    headers = {"Content-Type": f"{content_type}; charset=utf-8",
               "Content-Length": str(len(data)), **_HEADERS}
    if content_type == "text/html":
        headers["Content-Security-Policy"] = f"{VIEW_CSP}; frame-ancestors 'none'"
    return status, headers, b"" if head else data


def _html(status: int, page: str, *, head: bool) -> tuple[int, dict[str, str], bytes]:
    return _send(status, page, "text/html", head=head)


def _json(status: int, data: Any, *, head: bool) -> tuple[int, dict[str, str], bytes]:
    return _send(status, json.dumps(data, indent=1, default=str) + "\n", "application/json",
                 head=head)


def viewer_response(viewer: Viewer, request: Request) -> Response:
    """The viewer's answer to a Starlette request (runs in the thread pool)."""
    from starlette.responses import Response, StreamingResponse

    raw = request.scope.get("raw_path") or request.url.path.encode()
    path = raw.decode("latin-1").split("?", 1)[0]  # undecoded: an id may hold %2F
    path = "/" + path.lstrip("/")  # as http.server: '//run/x' is '/run/x'
    status, headers, body = viewer.answer(
        request.method, path, request.url.query,
        {k.lower(): v for k, v in request.headers.items()})
    if isinstance(body, bytes):
        response = Response(body, status_code=status, headers=headers)
        if not body and "Content-Length" in headers:  # HEAD, 405, 416: the length as said
            response.headers["content-length"] = headers["Content-Length"]
        return response
    return StreamingResponse(body, status_code=status, headers=headers)
