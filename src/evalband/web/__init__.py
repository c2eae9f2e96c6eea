"""The one web server: the read-only viewer (``evalband view``) and a session's console.

One ASGI application (Starlette, served by uvicorn) behind one guard (Host check, token,
same origin): :class:`ViewServer` serves a run store read-only; a console server
(``evalband session run ID --robot ... --console``) serves a robot session's operator page,
its live camera and the ghost overlay, driving the session's
:class:`~evalband.session.SessionMachine` through a :class:`Console`.

>>> from evalband.web._guard import is_loopback
>>> from evalband.web._server import DEFAULT_HOST
>>> DEFAULT_HOST, is_loopback(DEFAULT_HOST)
('127.0.0.1', True)
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "new_token": "evalband.web._guard",
    "Console": "evalband.web._hub",
    "WebServer": "evalband.web._server",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
