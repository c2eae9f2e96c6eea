"""A trial command ends with the session that started it, even a ``kill -9``-ed one: its
whole process group (issue 33, item 28)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import evalband

SRC = Path(evalband.__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process groups, /proc")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_the_session_ends_its_trial_command(tmp_path: Path, sig: int) -> None:
    pidfile = tmp_path / "pid"
    # the trial command starts a grandchild (a robot driver, a logger) and waits for it
    command = f"sleep 300 & echo $! > {pidfile}; wait"
    code = ("import sys; from evalband.session._tui import run_trial_command; "
            "run_trial_command(sys.argv[1])")
    session = subprocess.Popen([sys.executable, "-c", code, command],
                               env={**os.environ, "PYTHONPATH": str(SRC)})
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline and session.poll() is None
        time.sleep(0.05)
    grandchild = int(pidfile.read_text())
    assert _alive(grandchild)
    os.kill(session.pid, sig)
    session.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the trial command outlived its session"
