"""The one web server: the read-only viewer (``evalband view``) and a session's console.

One ASGI application (Starlette, served by uvicorn) behind one guard (Host check, token,
same origin): :class:`ViewServer` serves a run store read-only; a console server
(``evalband session run ID --robot ... --console``) serves a robot session's operator page,
its live camera and the ghost overlay, driving the session's
:class:`~evalband.session.SessionMachine` through a :class:`Console`.

>>> from evalband.web import DEFAULT_HOST, is_loopback
>>> DEFAULT_HOST, is_loopback(DEFAULT_HOST)
('127.0.0.1', True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes

if TYPE_CHECKING:
    from evalband.web._app import build_app
    from evalband.web._frames import alignment, check_region, read_frame_message
    from evalband.web._guard import TOKEN_HEADER, cookie_name, host_of, is_loopback, new_token
    from evalband.web._hub import ACTIONS, Console
    from evalband.web._server import (
        DEFAULT_HOST,
        DEFAULT_PORT,
        ViewServer,
        WebServer,
        serve_in_background,
    )

__all__ = [
    "ACTIONS",
    "Console",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "TOKEN_HEADER",
    "ViewServer",
    "WebServer",
    "alignment",
    "build_app",
    "check_region",
    "cookie_name",
    "host_of",
    "is_loopback",
    "new_token",
    "read_frame_message",
    "serve_in_background",
]

__getattr__ = lazy_attributes(__name__, {
    "build_app": "evalband.web._app",
    "alignment": "evalband.web._frames",
    "check_region": "evalband.web._frames",
    "read_frame_message": "evalband.web._frames",
    "TOKEN_HEADER": "evalband.web._guard",
    "cookie_name": "evalband.web._guard",
    "host_of": "evalband.web._guard",
    "is_loopback": "evalband.web._guard",
    "new_token": "evalband.web._guard",
    "ACTIONS": "evalband.web._hub",
    "Console": "evalband.web._hub",
    "DEFAULT_HOST": "evalband.web._server",
    "DEFAULT_PORT": "evalband.web._server",
    "ViewServer": "evalband.web._server",
    "WebServer": "evalband.web._server",
    "serve_in_background": "evalband.web._server",
})
