"""The one ASGI application: the read-only viewer, or a session's console, behind one guard.

:func:`build_app` makes a Starlette application with the viewer's routes
(:mod:`evalband.web._viewer`) or the console's (:mod:`evalband.web._console_routes`), wrapped
in :class:`~evalband.web._guard.Guard` (Host check, token, same origin). A console serves
the console only: the viewer's run list names every run, and so a blinded session's
policies, which a console page must never show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalband.errors import InvalidParameterError
from evalband.web._guard import Guard

if TYPE_CHECKING:
    from evalband.web._hub import Console
    from evalband.web._viewer import Viewer

__all__ = ["build_app"]

_ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


def build_app(*, viewer: Viewer | None = None, console: Console | None = None,
              loopback: bool = True, token: str | None = None, port: int = 0) -> Any:
    """The ASGI application serving ``viewer`` or ``console`` (exactly one of them).

    Raises:
        InvalidParameterError: both or neither were given.
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute, Route

    if (viewer is None) == (console is None):
        raise InvalidParameterError("the web application serves the viewer or a console: give "
                                    "exactly one", parameters=("viewer", "console"))
    routes: list[BaseRoute]
    if console is not None:
        from evalband.web._console_routes import console_routes

        routes = console_routes(console)
    else:
        from evalband.web._viewer import viewer_response

        assert viewer is not None
        shown = viewer

        def view(request: Request) -> Response:
            return viewer_response(shown, request)

        routes = [Route("/{path:path}", view, methods=_ALL_METHODS)]
    app = Starlette(routes=routes)
    return Guard(app, loopback=loopback, token=token, port=port)
