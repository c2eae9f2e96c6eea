"""``evalband view``: serve the store's runs and reports on a read-only local web server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from evalband.cli._common import STORE_OPTION, console, store_path

__all__ = ["ctrl_c_stops", "register", "require_web", "view"]


def view(
    store: Path | None = STORE_OPTION,
    port: int = typer.Option(
        8765, "--port", min=0, max=65535, help="TCP port; 0 picks a free one."
    ),
    host: str | None = typer.Option(
        None, "--host",
        help="Address to listen on. Default 127.0.0.1 (this machine only); anything else "
        "exposes the store to whoever can reach this machine.",
        show_default=False,
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the address as one JSON line instead of text."
    ),
) -> None:
    """Serve the store read-only: run list, run and comparison reports, live while running.

    Stops with Ctrl-C.
    """
    from evalband.view import ViewServer
    from evalband.web._guard import is_loopback
    from evalband.web._server import DEFAULT_HOST

    require_web("evalband view")
    ctrl_c_stops()
    server = ViewServer(store_path(store), DEFAULT_HOST if host is None else host, port)
    try:
        if as_json:
            sys.stdout.write(json.dumps({"url": server.url, "host": server.host,
                                         "port": server.port,
                                         "store": str(store_path(store))}) + "\n")
            sys.stdout.flush()
        else:
            console.print(f"serving {store_path(store)} read-only at {server.url}")
            console.print("Ctrl-C stops")
            sys.stdout.flush()
        if not is_loopback(server.host):
            sys.stderr.write(
                f"warning: listening on {server.host}: anyone who can reach this machine on "
                f"port {server.port} can read the store\n"
            )
        server.serve_forever()
    except KeyboardInterrupt:
        if not as_json:
            console.print("stopped")
    finally:
        server.server_close()


def require_web(command: str) -> None:
    """Refuse in one line when the web extra (Starlette, uvicorn) is not installed."""
    import importlib.util

    from evalband.errors import InvalidInputError

    missing = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        raise InvalidInputError(f"{command} serves a web page and needs {', '.join(missing)}: "
                                "pip install 'evalband[web]'")


def ctrl_c_stops() -> None:
    """Make Ctrl-C stop a server even when this process inherited SIGINT ignored or blocked.

    A parent that ignores or blocks SIGINT (a job runner, a test harness) passes that on to its
    children; Python then leaves it so, and the viewer or a robot session's console could
    only be killed.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def register(app: typer.Typer) -> None:
    """Attach the view command to ``app``."""
    app.command("view")(view)
