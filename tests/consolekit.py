"""Helpers for the console's tests: a blinded sim-arm session served by the console in-process.

The session machine runs on sim-arm under a virtual clock (a trial takes about a second), the
console drives it in its worker thread, and the one web server serves the console on a free
loopback port, with a token unless told otherwise.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalband.session import SessionMachine, SessionStore, plan_session, resolve_robot
from evalband.session._clock import VirtualClock
from evalband.session._instrument_spec import load_instrument
from evalband.web import Console, WebServer, new_token

NAMES = ("GN_s1000", "PT_fullLR")
SPECS = {"GN_s1000": "sim-arm:grasp", "PT_fullLR": "sim-arm:weak"}
SECRETS = (*NAMES, *SPECS.values())
"""What must never reach a blinded page: the policies' names and specs."""


def plan(store: Path, session_id: str, *, scenes: int = 3, attempts: int = 2, seed: int = 7,
         blind: bool = True, **changes: Any) -> None:
    """Store a 2-policy session with the sim-arm instrument (``changes``: its fields)."""
    inst = load_instrument("sim-arm").as_dict()
    inst.update({"record": False, **changes})  # no clips: the console does not need them
    with SessionStore(store) as ss:
        ss.create(plan_session(list(NAMES), scenes, attempts, seed, blind=blind,
                               session_id=session_id, specs=dict(SPECS), instrument=inst))


@dataclass
class Running:
    """A console being served."""

    server: WebServer
    console: Console
    clock: VirtualClock
    robot: Any
    token: str | None
    store: SessionStore

    @property
    def url(self) -> str:
        """The page's URL with the token."""
        return self.server.url + ("" if self.token is None else f"?token={self.token}")

    @property
    def origin(self) -> str:
        return self.server.url.rstrip("/")

    def request(self, method: str, path: str, body: Any = None, *, token: bool = True,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """A raw HTTP request to the console (same origin, with the token unless told)."""
        conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=60)
        sent = {"Origin": self.origin, **(headers or {})}
        if token and self.token is not None:
            sent["X-Evalband-Token"] = self.token
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            sent["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def state(self) -> dict[str, Any]:
        status, _, body = self.request("GET", "/api/state")
        assert status == 200, body
        return json.loads(body)  # type: ignore[no-any-return]

    def act(self, action: str, rev: int | None = None, **args: Any) -> tuple[int, dict[str, Any]]:
        """Send an event on the present revision (or ``rev``); (status, answer)."""
        if rev is None:
            rev = self.state()["rev"]
        status, _, body = self.request("POST", "/api/act", {"action": action, "rev": rev, **args})
        return status, json.loads(body)

    def ws_url(self, token: bool = True) -> str:
        query = "" if not token or self.token is None else "?" + urllib.parse.urlencode(
            {"token": self.token})
        return f"ws://{self.server.host}:{self.server.port}/ws{query}"


@contextmanager
def serving(store: Path, session_id: str, *, token: bool = True, seed: int = 0,
            fps: float = 15.0, host: str = "127.0.0.1",
            operator: str = "human") -> Iterator[Running]:
    """Serve the session's console (sim-arm, virtual clock) for the ``with`` block."""
    clock = VirtualClock()
    robot = resolve_robot("sim-arm", clock=clock.now, seed=seed)
    with SessionStore(store) as ss:
        machine = SessionMachine(ss, session_id, robot, robot_spec="sim-arm", clock=clock,
                                 operator=operator)
        console = Console(machine, fps=fps, unattended=operator == "suggested")
        secret = new_token() if token else None
        server = WebServer(None, host, 0, viewer=False, console=console, token=secret)
        try:
            console.start()
            server.start()
            yield Running(server, console, clock, robot, secret, ss)
        finally:
            server.shutdown()
            server.server_close()
            console.close()
