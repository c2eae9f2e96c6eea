"""``evalband view``: a small read-only local web server over a run store.

It lists the store's runs and recorded comparisons and serves their reports
(:func:`evalband.report.render_html`); a running run's page updates as episodes arrive. The
server is the one web application of :mod:`evalband.web` (which also serves a robot
session's console); this module keeps the viewer's names where its users import them.

>>> from evalband.web._guard import is_loopback
>>> from evalband.web._server import DEFAULT_HOST
>>> DEFAULT_HOST, is_loopback(DEFAULT_HOST)
('127.0.0.1', True)
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "ViewServer": "evalband.web._server",
    "serve_in_background": "evalband.web._server",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
