"""The console's routes: its page, its JSON API and its WebSocket.

==========================  =====================================================================
``GET /``                   the operator's page (static: everything on it comes from the state)
``GET /console.js|.css``    its script and style sheet (static files of this package)
``GET /api/state``          the session's snapshot (revision, machine state, session, reference)
``POST /api/act``           an event: ``{"action", "rev", "score"?, "text"?, "scene"?, "region"?}``;
                            200 with the state after it, 409 (refused: a stale revision, the
                            wrong phase) or 400 with the present state and one line why
``GET /api/reference/<s>``  scene ``s``'s captured reference frame (PNG)
``WS /ws``                  server -> page: state snapshots (JSON text) and camera frames
                            (binary, :func:`~evalband.web._frames.frame_message`); page ->
                            server: ``{"type": "drawn", "seq"}`` after drawing a frame,
                            ``{"type": "camera", "on"}``
==========================  =====================================================================

Every route sits behind :class:`~evalband.web._guard.Guard` (token, Host, same origin).
Nothing here names a policy: the page is static and the state is the console's snapshot
(blind codes only while blinded).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute
    from starlette.websockets import WebSocket

    from evalband.web._hub import Console

__all__ = ["CONSOLE_CSP", "console_routes"]

CONSOLE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: "
               "data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
               "frame-ancestors 'none'")
"""The console page's Content-Security-Policy: its own script, style, images and sockets."""

_STATIC = Path(__file__).resolve().parent / "console"
_FILES = {"/": ("index.html", "text/html; charset=utf-8"),
          "/console.js": ("console.js", "text/javascript; charset=utf-8"),
          "/console.css": ("console.css", "text/css; charset=utf-8")}
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Content-Security-Policy": CONSOLE_CSP}
_MAX_BODY = 64 * 1024


class _Socket:
    """A page's WebSocket as a console subscriber (thread-safe pushes into its event loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.wants_frames = True
        self.state: dict[str, Any] | None = None
        self.frame: bytes | None = None
        self.in_flight = 0
        self.closed = False
        self.wake = asyncio.Event()

    def _later(self, fn: Any, *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed
            self.loop.call_soon_threadsafe(fn, *args)

    def push_state(self, snapshot: dict[str, Any]) -> None:
        self._later(self._set_state, snapshot)

    def push_frame(self, data: bytes) -> None:
        self._later(self._set_frame, data)

    def close(self) -> None:
        self._later(self._set_closed)

    def _set_state(self, snapshot: dict[str, Any]) -> None:
        if self.state is None or snapshot.get("rev", 0) >= self.state.get("rev", 0):
            self.state = snapshot
        self.wake.set()

    def _set_frame(self, data: bytes) -> None:
        self.frame = data  # a newer frame replaces one not yet sent
        self.wake.set()

    def _set_closed(self) -> None:
        self.closed = True
        self.wake.set()


def console_routes(console: Console) -> list[BaseRoute]:
    """The console's Starlette routes over ``console``."""
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Route, WebSocketRoute

    def static(request: Request) -> Response:
        name, kind = _FILES[request.url.path]
        data = (_STATIC / name).read_bytes()
        return Response(b"" if request.method == "HEAD" else data, media_type=None,
                        headers={**_HEADERS, "Content-Type": kind,
                                 "Content-Length": str(len(data))})

    async def state(request: Request) -> Response:
        return JSONResponse(console.snapshot, headers=_HEADERS)

    async def act(request: Request) -> Response:
        body = await request.body()
        if len(body) > _MAX_BODY:
            return _error(413, "the request is too large")
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return _error(400, "the body must be JSON: {\"action\": ..., \"rev\": ...}")
        if not isinstance(data, dict) or not isinstance(data.get("action"), str):
            return _error(400, "the body must be a JSON object with an \"action\"")
        rev = data.get("rev")
        if rev is not None and (isinstance(rev, bool) or not isinstance(rev, int)):
            return _error(400, f"\"rev\" must be a whole number; got {rev!r}")
        args = {k: data[k] for k in ("score", "text", "scene", "region") if k in data}
        answer = await asyncio.wrap_future(console.act(data["action"], rev=rev, **args))
        answer.pop("exception", None)
        return JSONResponse(answer, status_code=int(answer["status"]), headers=_HEADERS)

    async def reference(request: Request) -> Response:
        try:
            scene = int(request.path_params["scene"])
        except ValueError:
            return _error(404, "no such scene")
        path = console.reference_file(scene)
        if path is None or not path.is_file():
            return _error(404, f"scene {scene} has no captured reference frame yet")
        return FileResponse(path, media_type="image/png",
                            headers={"Cache-Control": "private, max-age=3600",
                                     "X-Content-Type-Options": "nosniff"})

    async def socket(websocket: WebSocket) -> None:
        await websocket.accept()
        sub = _Socket(asyncio.get_running_loop())
        sub.state = console.subscribe(sub)
        sub.wake.set()
        receiver = asyncio.create_task(_receive(websocket, sub, console))
        try:
            await _send(websocket, sub)
        finally:
            console.unsubscribe(sub)
            receiver.cancel()
            with contextlib.suppress(Exception):
                await websocket.close()

    return [
        Route("/", static, methods=["GET", "HEAD"]),
        Route("/console.js", static, methods=["GET", "HEAD"]),
        Route("/console.css", static, methods=["GET", "HEAD"]),
        Route("/api/state", state, methods=["GET"]),
        Route("/api/act", act, methods=["POST"]),
        Route("/api/reference/{scene}", reference, methods=["GET"]),
        WebSocketRoute("/ws", socket),
    ]


async def _send(websocket: WebSocket, sub: _Socket) -> None:
    """Send the latest state and frames as they come (at most two frames in flight)."""
    sent_rev = -1
    while not sub.closed:
        await sub.wake.wait()
        sub.wake.clear()
        if sub.closed:
            return
        state = sub.state
        if state is not None and state.get("rev", 0) != sent_rev:
            await websocket.send_text(json.dumps(state))
            sent_rev = state.get("rev", 0)
        if sub.frame is not None and sub.wants_frames and sub.in_flight < 2:
            data, sub.frame = sub.frame, None
            sub.in_flight += 1
            await websocket.send_bytes(data)


async def _receive(websocket: WebSocket, sub: _Socket, console: Console) -> None:
    """The page's acknowledgements and camera switch; a closed socket ends the sender."""
    from starlette.websockets import WebSocketDisconnect

    try:
        while True:
            text = await websocket.receive_text()
            try:
                message = json.loads(text)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("type") == "drawn":
                sub.in_flight = max(0, sub.in_flight - 1)
                with contextlib.suppress(TypeError, ValueError):
                    console.frame_drawn(int(message.get("seq", -1)))
                sub.wake.set()
            elif message.get("type") == "camera":
                sub.wants_frames = bool(message.get("on"))
                sub.in_flight = 0
                sub.wake.set()
    except (WebSocketDisconnect, RuntimeError, asyncio.CancelledError):
        pass
    finally:
        sub.closed = True
        sub.wake.set()


def _error(status: int, message: str) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse({"ok": False, "status": status, "error": message}, status_code=status,
                        headers=_HEADERS)
