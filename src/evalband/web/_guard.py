"""Who may talk to the web server: the Host check, the per-session token, the same-origin rule.

One ASGI middleware (:class:`Guard`) stands in front of every route and WebSocket of the
application (:func:`evalband.web.build_app`):

* **Host** (DNS rebinding): a server bound to a loopback address answers only requests whose
  ``Host`` names a loopback address, so another web site cannot read it through the browser;
* **token** (as Jupyter's): when the server has one, every request and WebSocket must carry
  it, as ``?token=...`` in the URL, an ``X-Evalband-Token`` header or the cookie a page
  opened with the token received; without it the answer is 401, with a wrong one 403, and a
  WebSocket is closed before it opens (403);
* **same origin**: a request that changes state (any method but GET and HEAD) and every
  WebSocket must come from a page of this server (``Origin`` equal to ``http://<Host>``);
  a browser always sends ``Origin`` there, so a page of another site cannot drive the session.

Tokens are compared in constant time (:func:`secrets.compare_digest`).
"""

from __future__ import annotations

import http.cookies
import ipaddress
import json
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["Guard", "is_loopback", "host_of", "new_token", "TOKEN_HEADER", "cookie_name"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_HEADER = "x-evalband-token"
"""The request header that may carry the token (scripts, tests)."""

_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")
_SAFE_METHODS = ("GET", "HEAD")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``127.0.0.0/8``, ``::1``, ``localhost``).

    >>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    name = host.strip().lower().removeprefix("[").removesuffix("]")
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_of(header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:80`` -> ``::1``).

    >>> host_of("localhost:8765"), host_of("[::1]:80"), host_of("10.0.0.5")
    ('localhost', '::1', '10.0.0.5')
    """
    header = header.strip()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def new_token() -> str:
    """A fresh random token (32 bytes of :mod:`secrets`, URL-safe: 43 characters).

    >>> len(new_token()), new_token() != new_token()
    (43, True)
    """
    return secrets.token_urlsafe(32)


def cookie_name(port: int) -> str:
    """The cookie that carries a server's token (cookies ignore ports: one name per port).

    >>> cookie_name(8765)
    'evalband-token-8765'
    """
    return f"evalband-token-{int(port)}"


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


class Guard:
    """The ASGI middleware of the module docstring.

    Args:
        app: the application behind it.
        loopback: whether the server is bound to a loopback address (then ``Host`` must
            name one).
        token: the token every request must carry; ``None``: no token (the read-only viewer,
            or ``--no-token`` on loopback).
        port: the port served (names the token's cookie).
    """

    def __init__(self, app: ASGIApp, *, loopback: bool, token: str | None,
                 port: int) -> None:
        self.app = app
        self.loopback = loopback
        self.token = token
        self.port = port

    def _token_given(self, scope: Scope, headers: dict[str, str]) -> tuple[str | None, bool]:
        """The token a request carries and whether it came in the URL (then set a cookie)."""
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if query.get("token"):
            return query["token"][-1], True
        if headers.get(TOKEN_HEADER):
            return headers[TOKEN_HEADER], False
        jar: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except http.cookies.CookieError:
            return None, False
        morsel = jar.get(cookie_name(self.port))
        return (morsel.value if morsel is not None else None), False

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """``(status, reason)`` when the request is refused, else ``None``."""
        host = headers.get("host")
        if self.loopback and host is not None and not is_loopback(host_of(host)):
            return 403, ("this server answers requests for this machine only (Host must be "
                         "127.0.0.1 or localhost)")
        if self.token is not None:
            given, _ = self._token_given(scope, headers)
            if not given:
                return 401, ("this page needs its token: open the URL with ?token=... that the "
                             "terminal printed")
            if not secrets.compare_digest(given.encode(), self.token.encode()):
                return 403, "wrong token: open the URL with ?token=... that the terminal printed"
        method = scope.get("method", "GET")
        if scope["type"] == "websocket" or method not in _SAFE_METHODS:
            origin = headers.get("origin")
            if origin is None or host is None or origin.rstrip("/") != f"http://{host}":
                if scope["type"] == "websocket" or self.token is not None or origin is not None:
                    return 403, ("a request that changes the session must come from this "
                                 "server's own page (same origin)")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse, or pass the request on (setting the token cookie when it came in the URL)."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            send = _canonical(send)
        headers = _headers(scope)
        refused = self._refusal(scope, headers)
        if refused is not None:
            status, reason = refused
            if scope["type"] == "websocket":
                await receive()  # the websocket.connect message
                await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
                return
            await _plain(send, status, reason, scope.get("method") == "HEAD", headers)
            return
        given, in_url = self._token_given(scope, headers) if self.token else (None, False)
        if not in_url or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cookie = (f"{cookie_name(self.port)}={given}; Path=/; HttpOnly; SameSite=Strict")

        async def with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      (b"set-cookie", cookie.encode("latin-1"))]
            await send(message)

        await self.app(scope, receive, with_cookie)


def _canonical(send: Send) -> Send:
    """``send`` with response header names in their canonical case (``Content-Type``).

    HTTP/1.1 clients that compare names literally expect it; Starlette writes them lower case.
    """

    async def canonical(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [(_title(k), v) for k, v in message.get("headers", [])]
        await send(message)

    return canonical


def _title(name: bytes) -> bytes:
    """``b"content-type"`` -> ``b"Content-Type"``.

    >>> _title(b"x-content-type-options"), _title(b"set-cookie")
    (b'X-Content-Type-Options', b'Set-Cookie')
    """
    return b"-".join(part[:1].upper() + part[1:] for part in bytes(name).split(b"-"))


async def _plain(send: Send, status: int, reason: str, head: bool,
                 headers: dict[str, str]) -> None:
    """A refusal: JSON for API callers, a short HTML page for browsers."""
    import html

    wants_html = "text/html" in headers.get("accept", "")
    if wants_html:
        body = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{status}</title>"
                f"</head><body><h1>{status}</h1><p>{html.escape(reason)}</p></body></html>")
        kind = b"text/html; charset=utf-8"
    else:
        body = json.dumps({"error": reason}) + "\n"
        kind = b"application/json; charset=utf-8"
    data = body.encode("utf-8")
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", kind), (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff")]})
    await send({"type": "http.response.body", "body": b"" if head else data})
