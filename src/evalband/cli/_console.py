"""``session run ID --robot ... --console``: the session's operator screen as a web page.

The terminal prints the console's URL (with its per-session token) and a QR code of it for
a phone, then shows what happens as the page drives the session: each trial, each message,
each saved score (the same session machine, through :class:`evalband.web.Console`); a line
typed in it drives the session too (:func:`terminal_key`). ``q`` then Enter, or Ctrl-C,
stops: a moving trial is aborted (the robot made safe), every
confirmed trial is already in the store, and running the command again resumes.
"""

from __future__ import annotations

import contextlib
import io
import select
import socket
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Any

from evalband.errors import InvalidInputError

if TYPE_CHECKING:
    from evalband.session import SessionMachine

__all__ = ["KEYS", "check_console_address", "lan_address", "serve_console", "terminal_key"]


def check_console_address(host: str, no_token: bool) -> None:
    """Refuse ``--no-token`` on any address but loopback (one line, before anything starts).

    >>> check_console_address("127.0.0.1", True)
    >>> check_console_address("0.0.0.0", True)
    Traceback (most recent call last):
    ...
    evalband.errors.InvalidInputError: --no-token is accepted on a loopback address only \
(127.0.0.1, localhost); with --host 0.0.0.0 anyone on the network could drive the robot: drop \
--no-token (the console then prints a URL that carries its token)
    """
    from evalband.web._guard import is_loopback

    if no_token and not is_loopback(host):
        raise InvalidInputError(
            f"--no-token is accepted on a loopback address only (127.0.0.1, localhost); with "
            f"--host {host} anyone on the network could drive the robot: drop --no-token (the "
            "console then prints a URL that carries its token)")


def lan_address() -> str | None:
    """This machine's address on its network (what a phone reaches), or ``None``.

    A UDP socket "connected" to a private address picks the outgoing interface; no packet
    is sent.
    """
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.254.254.254", 1))
        address = str(s.getsockname()[0])
        return None if address.startswith("127.") or address == "0.0.0.0" else address
    return None


class _Mirror:
    """The terminal as a console subscriber: a line per trial, message and saved score."""

    wants_frames = False

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.trial: Any = object()
        self.message: str | None = None
        self.warnings = 0
        self.finished = False
        self.rev: int | None = None

    def say(self, text: str) -> None:
        with self.lock:
            self.out.write(text + "\n")
            self.out.flush()

    def push_state(self, snapshot: dict[str, Any]) -> None:
        self.rev = snapshot.get("rev")
        state = snapshot["state"]
        info = snapshot.get("session") or {}
        for text in state["warnings"][self.warnings:]:
            self.say(f"WARNING {text}")
        self.warnings = len(state["warnings"])
        if state["phase"] == "finished":
            if not self.finished:
                counts = state["counts"]
                self.say(f"session {info.get('session_id')} complete: "
                         f"{counts['scored'] + counts['skipped']} of {counts['total']} trials "
                         f"recorded ({counts['scored']} scored, {counts['skipped']} skipped)")
                self.say(f"next: evalband session analyze {info.get('session_id')}")
            self.finished = True
            return
        self.finished = False
        if state["trial"] != self.trial:
            self.trial = state["trial"]
            self.say(f"── trial {state['trial'] + 1} of {info.get('n_trials')} · scene "
                     f"{state['scene']} of {info.get('scenes')} · attempt {state['attempt']} "
                     f"of {info.get('attempts')} · policy {state['label']} ──")
        if state["message"] != self.message:
            self.message = state["message"]
            if self.message and self.message != "ready":
                self.say(f"  {self.message}")

    def push_frame(self, data: bytes) -> None:
        """Terminals show no frames."""

    def close(self) -> None:
        """Nothing to close."""


def _qr(url: str, out: IO[str]) -> None:
    try:
        import segno
    except ImportError:  # pragma: no cover - segno comes with the web extra
        return
    text = io.StringIO()
    segno.make(url, error="m").terminal(out=text, compact=True, border=2)
    out.write(text.getvalue())


def serve_console(machine: SessionMachine, *, host: str, port: int, no_token: bool,
                  out: IO[str] | None = None) -> dict[str, int]:
    """Serve ``machine``'s console until ``q``/Ctrl-C; the session's counts at the end.

    Raises:
        InvalidInputError: ``--no-token`` with a non-loopback host, a port that cannot be
            bound, or the web extra is missing.
        RobotError: the robot cannot connect (before anything is stored).
    """
    from evalband.cli._view import ctrl_c_stops, require_web
    from evalband.web import Console, WebServer, new_token

    stream = out if out is not None else sys.stdout
    check_console_address(host, no_token)
    require_web("session run --console")
    ctrl_c_stops()  # Ctrl-C must stop the robot's session, whatever the parent passed on
    token = None if no_token else new_token()
    console = Console(machine, unattended=machine.operator == "suggested")
    server = WebServer(None, host, port, viewer=False, console=console, token=token)
    mirror = _Mirror(stream)
    try:
        snapshot = console.start()
        server.start()
        info = snapshot["session"]
        query = "" if token is None else f"?token={token}"
        shown = server.url.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:",
                                                                         "://[::1]:")
        mirror.say(f"session {info['session_id']} on {info['robot']}: {info['policies']} "
                   f"policies x {info['scenes']} scenes x {info['attempts']} attempts = "
                   f"{info['n_trials']} trials, "
                   f"{'blinded (codes, not names)' if info['blind'] else 'not blinded'}")
        if info["resumed"]:
            mirror.say(f"resuming: {info['resumed']} of {info['n_trials']} trials already "
                       "recorded")
        mirror.say(f"console: {shown}{query}")
        phone = shown
        if host in ("0.0.0.0", "::"):
            lan = lan_address()
            if lan is not None:
                phone = f"http://{lan}:{server.port}/"
                mirror.say(f"from a phone on this network: {phone}{query}")
        with mirror.lock:
            _qr(phone + query, stream)
            stream.flush()
        if not server.loopback:
            mirror.say(f"warning: listening on {server.host}: anyone on the network who has the "
                       "token can drive the robot")
        mirror.say("the page drives the session; this terminal follows it and drives it too "
                   "(? then Enter: the keys). q then Enter, or Ctrl-C, stops (every confirmed "
                   "trial is saved)")
        mirror.push_state(console.subscribe(mirror))
        _wait(server, console, mirror)
    except KeyboardInterrupt:
        mirror.say("stopped: no more actions were sent and the robot is disconnected (safe)")
    finally:
        server.shutdown()
        server.server_close()
        console.close()
    counts: dict[str, int] = machine.store.counts(machine.session_id)
    return counts


KEYS = """keys (each then Enter): Enter = the next step (stage / start / confirm), 0-9 score,
c capture, x abort, s skip, u undo, a assisted, n TEXT note, q quit"""


def terminal_key(console: Any, line: str, rev: int | None) -> str | None:
    """Turn one line typed in the terminal into the console's event; what to print.

    The terminal drives the same session as the page, on the revision it last showed (an
    event on an older one is refused, as a page's is). Returns ``"quit"`` for q, else the
    refusal's message (``None`` when the event was done).
    """
    text = line.strip()
    key = text[:1].lower()
    state = console.snapshot.get("state") or {}
    args: dict[str, Any] = {}
    if text.lower() in ("q", "quit"):
        return "quit"
    if key == "":
        action = "confirm" if state.get("phase") == "scoring" else "next"
    elif key.isdigit():
        action, args = "score", {"score": int(key)}
    elif key in ("c", "x", "s", "u", "a"):
        action = {"c": "capture", "x": "abort", "s": "skip", "u": "undo", "a": "assist"}[key]
    elif key == "n":
        action, args = "note", {"text": text[1:].strip()}
    elif key in ("?", "h"):
        return KEYS
    else:
        return f"{text!r} does nothing; {KEYS}"
    answer: dict[str, Any] = console.act(action, rev=rev, **args).result()
    return None if answer["ok"] else str(answer["error"])


def _wait(server: Any, console: Any, mirror: _Mirror) -> None:
    """Until the server stops, Ctrl-C, or ``q`` + Enter on a terminal (which also drives)."""
    tty = sys.stdin is not None and sys.stdin.isatty()
    while server.serving:
        if tty and select.select([sys.stdin], [], [], 0.2)[0]:
            line = sys.stdin.readline()
            said = "quit" if line == "" else terminal_key(console, line, mirror.rev)
            if said == "quit":
                return
            if said:
                mirror.say(said)
        elif not tty:
            time.sleep(0.2)
