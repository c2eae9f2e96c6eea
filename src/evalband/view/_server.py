"""The viewer's server moved to :mod:`evalband.web` (one web application); kept for imports."""

from evalband.web._guard import host_of as _host_of
from evalband.web._guard import is_loopback
from evalband.web._server import DEFAULT_HOST, DEFAULT_PORT, ViewServer, serve_in_background

__all__ = ["ViewServer", "serve_in_background", "is_loopback", "DEFAULT_HOST", "DEFAULT_PORT",
           "_host_of"]
