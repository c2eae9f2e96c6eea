"""The executable's exit (``evalband.cli.entry``): the interpreter's normal exit once a
command returns (non-daemon threads joined, ``atexit`` handlers run, stdout and stderr
flushed), so nothing is lost: the output is whole, the store holds every episode, the exit
status is the command's, no worker outlives it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ENTRY = "import sys; from evalband.cli import entry; sys.argv = ['evalband', *sys.argv[1:]]; "


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)


def test_atexit_handlers_threads_and_buffered_output_survive() -> None:
    code = (
        "import atexit, sys, threading\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        # the thread prints once the command has written its JSON (not after a fixed sleep,
        # which a loaded machine outlasts), so the order below is the exit's, not the clock's
        "printed = threading.Event()\n"
        "write = sys.stdout.write\n"
        "def watch(text):\n"
        "    n = write(text)\n"
        "    if text.rstrip().endswith('}'):\n"
        "        printed.set()\n"
        "    return n\n"
        "sys.stdout.write = watch\n"
        "def late():\n"
        "    printed.wait(60)\n"
        "    print('thread finished')\n"
        "threading.Thread(target=late).start()\n"  # a non-daemon thread: waited for
        + ENTRY + "entry()\n"
    )
    done = _python(code, "ci", "8", "20", "--json")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # the command's JSON, then the thread's line, then the atexit handler's (stdout is a
    # pipe here: block-buffered, so all of it was flushed before the process ended)
    assert lines[-2:] == ["thread finished", "atexit ran"]
    result = json.loads("\n".join(lines[:-2]))
    assert result["k"] == 8 and result["n"] == 20


@pytest.mark.parametrize("args,status", [
    (["ci", "8", "20"], 0),
    (["ci", "30", "20"], 2),  # bad input: one line, exit 2
])
def test_exit_status_is_the_commands(args: list[str], status: int) -> None:
    done = _python(ENTRY + "entry()", *args)
    assert done.returncode == status
    if status == 2:
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1


def test_closed_pipe_exits_quietly() -> None:
    # `evalband ... | head -0`: the reader is gone before the command writes. It stops
    # quietly with status 1 (Python's documented handling of a closed pipe), no traceback.
    # the command starts once its stdin ends, which this test closes after stdout: the order
    # is the pipes', not a head start that a loaded machine can outlast
    code = "import sys; sys.stdin.read(); " + ENTRY + "entry()"
    proc = subprocess.Popen([sys.executable, "-c", code, "ci", "8", "20"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves before the command writes
    proc.stdin.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert err == ""


@pytest.mark.parametrize("backend", ["serial", "process"])
def test_run_stores_every_episode_and_leaves_no_process(tmp_path: Path, backend: str) -> None:
    panel = tmp_path / "coin.yaml"
    panel.write_text("name: coin\nenv: evalband/Coin-v0\nenv_kwargs: {p: 0.5, length: 3}\n"
                     "episodes: 40\nseed: 3\nbudget: {steps: 3}\n")
    store = tmp_path / "s.sqlite"
    args = [sys.executable, "-m", "evalband.cli", "run", str(panel), "-p",
            "evalband.policies._builtin:zero_action", "--json", "--store", str(store),
            "--backend", backend, "--workers", "2"]
    mark = f"exit-test-{os.getpid()}-{backend}-{time.time_ns()}"  # inherited by every child
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, EXIT_TEST_MARK=mark))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert err == ""  # no warning from a resource tracker or a worker
    summary = json.loads(out)
    assert summary["summary"]["n"] == 40
    with sqlite3.connect(store) as db:
        (stored,) = db.execute("SELECT count(*) FROM episodes").fetchone()
    assert stored == 40
    # the workers (and the forkserver) die with the command: none is left a moment later
    # (polled until gone; the deadline only guards against one that never goes, and is wide
    # because a loaded machine schedules a dying forkserver late)
    deadline = time.monotonic() + 30.0
    while (left := _marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], f"still running 30 s after the command exited: {left}"


def _marked(mark: str) -> list[int]:
    """Live processes whose environment holds ``EXIT_TEST_MARK=mark`` (Linux /proc)."""
    found = []
    needle = f"EXIT_TEST_MARK={mark}".encode()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def test_a_broken_pipe_elsewhere_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A BrokenPipeError that is not stdout's (stdout here is no closed pipe) is reported."""
    from evalband import cli
    from evalband.cli import _app

    def broken(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(_app, "run", broken)
    assert cli.main(["ci", "8", "20"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: a pipe closed") and err.count("\n") == 1
