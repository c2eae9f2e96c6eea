"""``evalband view``: a small read-only local web server over a run store.

It lists the store's runs and recorded comparisons and serves their reports
(:func:`evalband.report.render_html`); a running run's page updates as episodes arrive. The
server is the one web application of :mod:`evalband.web` (which also serves a robot
session's console); this module keeps the viewer's names where its users import them.

>>> from evalband.view import DEFAULT_HOST, is_loopback
>>> DEFAULT_HOST, is_loopback(DEFAULT_HOST)
('127.0.0.1', True)
"""

from evalband.web import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ViewServer,
    is_loopback,
    serve_in_background,
)

__all__ = ["ViewServer", "serve_in_background", "is_loopback", "DEFAULT_HOST", "DEFAULT_PORT"]
