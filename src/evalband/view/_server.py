"""The viewer's server moved to :mod:`evalband.web` (one web application); kept for imports."""

from evalband.web import DEFAULT_HOST, DEFAULT_PORT, ViewServer, is_loopback, serve_in_background
from evalband.web import host_of as _host_of

__all__ = ["ViewServer", "serve_in_background", "is_loopback", "DEFAULT_HOST", "DEFAULT_PORT",
           "_host_of"]
