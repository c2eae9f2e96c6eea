"""Kill a real run with SIGKILL half way, resume it with the same run id: every episode once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from evalband.store import open_store

PANEL = """\
name: slow-coin
env: testenvs:FaultyCoinEnv
env_kwargs: {length: 2, sleep_s: 0.02}
episodes: 30
seed: 5
budget: {steps: 4}
factors: {p: [0.3, 0.7]}
"""


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return int(con.execute("select count(*) from episodes").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalband.cli", *args]


def test_sigkill_half_way_then_resume(tmp_path: Path) -> None:
    panel = tmp_path / "panel.yaml"
    panel.write_text(PANEL)
    db = tmp_path / "store.sqlite"
    args = _cli("run", str(panel), "--policy", "evalband.policies._builtin:zero_action",
                "--store", str(db), "--run-id", "killme", "--json")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # tests/: testenvs
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 60
    while _count(db) < 15 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _count(db)
    assert 0 < killed_at < 60
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    with open_store(db) as store:
        keys = [r.key for r in store.episode_records("killme")]
        assert len(keys) == 60 == len(set(keys))
        assert store.get_run("killme").status == "finished"
