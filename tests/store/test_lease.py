"""A writer lease on a run: a second writer is refused in one line while the first lives,
and takes over cleanly when it is dead (real processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.store import open_store
from evalband.store._lease import RunLease, RunLockedError

HOLDER = textwrap.dedent(
    """
    import sys, time
    from evalband.store import open_store
    from evalband.store._lease import RunLease
    with open_store(sys.argv[1]) as st:
        st.update_run("r", status="running")
        RunLease(st, "r").acquire()   # held until this process dies
        print("held", flush=True)
        sys.stdin.read()
    """
)


def _holder(db: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.sqlite"
    assert main(["run", "reach1d", "-p", "reach1d:damped", "--run-id", "r", "--store",
                 str(path), "--json"]) == 0
    with open_store(path) as st:  # as a killed run leaves it: half done
        st.conn.execute("DELETE FROM episodes WHERE run_id = 'r' AND episode >= 20")
        st.update_run("r", status="interrupted")
    return path


def test_a_second_writer_is_refused_while_the_first_lives(db: Path, capsys) -> None:
    holder = _holder(db)
    try:
        code = main(["run", "reach1d", "-p", "reach1d:damped", "--run-id", "r", "--store",
                     str(db)])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert f"is being written by pid {holder.pid} on this host" in err
        with open_store(db) as st:  # the refused writer changed nothing
            assert st.require_run("r").status == "running"
            assert st.count_episodes("r") == 20
    finally:
        holder.kill()
        holder.wait()


def test_a_dead_holder_is_taken_over(db: Path, capsys) -> None:
    holder = _holder(db)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    code = main(["run", "reach1d", "-p", "reach1d:damped", "--run-id", "r", "--store",
                 str(db), "--json"])
    assert code == 0, capsys.readouterr().err
    with open_store(db) as st:
        assert st.require_run("r").status == "finished"
        assert st.count_episodes("r") == 64
        assert st.conn.execute("SELECT COUNT(*) FROM run_leases").fetchone()[0] == 0


def test_a_reused_pid_is_not_a_live_holder(db: Path) -> None:
    with open_store(db) as st:
        # a holder recorded as pid 1 with another start time: pid 1 lives, but it is a
        # different process from the one that took the lease
        RunLease(st, "r", pid=1).acquire()
        st.conn.execute("UPDATE run_leases SET pid_start = 'not-pid-1'")
        RunLease(st, "r").acquire()  # taken over
        assert st.conn.execute("SELECT pid FROM run_leases").fetchone()[0] == os.getpid()


def test_a_holder_on_another_host_lives_while_its_heartbeat_is_fresh(db: Path) -> None:
    with open_store(db) as st:
        far = RunLease(st, "r", pid=12345)
        far.host = "elsewhere"
        far.acquire()
        with pytest.raises(RunLockedError, match="pid 12345 on host elsewhere"):
            RunLease(st, "r").acquire()
        st.conn.execute("UPDATE run_leases SET heartbeat = 0")  # silent for hours
        RunLease(st, "r").acquire()
        assert st.conn.execute("SELECT pid FROM run_leases").fetchone()[0] == os.getpid()


def test_two_recorders_on_one_run(tmp_path: Path) -> None:
    from evalband.panel import load_panel
    from evalband.run import Recorder

    panel = load_panel("reach1d")
    with open_store(tmp_path / "s.sqlite") as st:
        with Recorder(st, panel, "arm", run_id="arm-1") as rec:
            rec.log(episode=0, outcome="success", steps=3)
            with pytest.raises(RunLockedError):  # another live process (pid 1) would be refused
                other = RunLease(st, "arm-1", pid=1)
                other.acquire()
        with Recorder(st, panel, "arm", run_id="arm-1") as again:  # released: resumes
            again.log(episode=1, outcome="failure", steps=3)
        assert st.count_episodes("arm-1") == 2
