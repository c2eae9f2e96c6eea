"""``evalband view``: a small read-only local web server over a run store.

It lists the store's runs and recorded comparisons and serves their reports
(:func:`evalband.report.render_html`); a running run's page updates as episodes arrive.

>>> from evalband.view import DEFAULT_HOST, is_loopback
>>> DEFAULT_HOST, is_loopback(DEFAULT_HOST)
('127.0.0.1', True)
"""

from evalband.view._server import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ViewServer,
    is_loopback,
    serve_in_background,
)

__all__ = ["ViewServer", "serve_in_background", "is_loopback", "DEFAULT_HOST", "DEFAULT_PORT"]
