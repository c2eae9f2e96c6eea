"""One self-contained HTML document: inline CSS, a tiny inline script, nothing fetched.

The document is ``templates/page.html.j2``; its CSS and script are ``templates/page.css`` and
``templates/sort.js`` (package data).
"""

from __future__ import annotations

import html

__all__ = ["html_page", "DEFAULT_CSP"]

DEFAULT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; media-src data:; base-uri 'none'; form-action 'none'"
)
"""The page's Content-Security-Policy: the browser itself refuses any network request
(embedded clips are ``data:`` URIs)."""


def html_page(
    title: str,
    body_html: str,
    *,
    head_html: str = "",
    csp: str | None = DEFAULT_CSP,
) -> str:
    """A complete HTML document around ``body_html``; it fetches nothing.

    The page carries its CSS (``templates/page.css``) and a small script (``sort.js``)
    that makes every ``<table class="sortable">`` sortable by clicking (or pressing Enter
    on) a column header: numbers compare as numbers (a cell's ``data-sort`` attribute, else
    its text's leading number, so ``45.0% [38.1, 52.1]`` sorts as 45.0), text compares
    naturally, and the header gets ``aria-sort``. A Content-Security-Policy ``<meta>``
    (:data:`DEFAULT_CSP`) makes the browser refuse any network request.

    Args:
        title: the document title (escaped here).
        body_html: trusted markup for ``<body>`` (escape user text before building it).
        head_html: extra trusted markup for ``<head>`` (e.g. a refresh ``<meta>``).
        csp: the Content-Security-Policy, or ``None`` for none (a live viewer that
            polls its own server needs ``connect-src 'self'``).

    Returns:
        The document, starting with ``<!DOCTYPE html>``.

    >>> page = html_page("a < b", "<p>hi</p>")
    >>> page.startswith("<!DOCTYPE html>"), "<title>a &lt; b</title>" in page
    (True, True)
    >>> "src=" in page or "@import" in page
    False
    """
    from markupsafe import Markup

    from evalband.report._templates import render, static

    # the CSP keeps its single quotes (html.escape without quote=True), as the browser reads it
    content = html.escape(csp or "", quote=False).replace('"', "&quot;")
    return render("page.html.j2", title=title, csp=Markup(content), css=Markup(static("page.css")),
                  script=Markup(static("sort.js")), head=Markup(head_html), body=Markup(body_html))
