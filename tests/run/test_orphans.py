"""``kill -9`` of a process-backend driver that nobody reaps yet: its forkserver and workers
end anyway, so a caller reading its output (``subprocess.run(capture_output=True)``) gets EOF
instead of waiting forever on pipes the orphans hold (issue 33, item 18)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_crash_isolation import (
    POLICY,
    _cli,
    _env,
    _panel,
    _wait_for_episodes,
)

from testenvs import FAULTY_COIN
from testkit import descendants, wait_gone

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform != "linux", reason="Linux process tree")]


def test_an_unreaped_killed_driver_takes_its_workers_and_frees_its_pipes(
        tmp_path: Path) -> None:
    panel = _panel(tmp_path, "slow", FAULTY_COIN, 400, "{length: 3, sleep_s: 0.05}")
    db = tmp_path / "s.sqlite"
    proc = subprocess.Popen(
        _cli(tmp_path, "run", str(panel), "-p", POLICY, "--backend", "process", "--workers",
             "2", "--store", str(db), "--run-id", "k", "--json"),
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_episodes(db, "k", proc)
        helpers = descendants(proc.pid)
        assert len(helpers) >= 2, helpers  # the forkserver and its workers
        os.kill(proc.pid, signal.SIGKILL)  # and not reaped: the driver stays a zombie
        # waited on until gone (pidfds); the 30 s only guards against one that never goes:
        # the workers poll for their driver, which a loaded machine schedules late
        left = wait_gone(helpers, timeout=30)
        assert not left, f"still alive beside the unreaped driver: {sorted(left)}"
        assert proc.stdout is not None
        proc.stdout.read()  # EOF: no orphan holds the pipe (a deadlock before)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
