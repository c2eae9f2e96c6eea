"""The process backend survives what kills processes, with real processes.

Reproduces the report: an env that segfaults killed the driver (exit 139, run left
``running``); ``kill -9`` of the driver left the forkserver and workers alive; Ctrl-C exited
130 without a resume hint and SIGTERM left the run ``running``.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalband.store import open_store
from testenvs import FAULTY_COIN
from testkit import descendants, wait_gone

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform != "linux", reason="Linux process tree")]

CRASHY = '''
import os, signal
from evalband.envs._coin import CoinEnv


class CrashEnv(CoinEnv):
    """A coin env whose every episode with condition seed divisible by 7 segfaults."""

    def reset(self, *, seed=None, options=None):
        if seed is not None and seed % 7 == 0:
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().reset(seed=seed, options=options)
'''
POLICY = "evalband.policies._builtin:zero_action"  # not a built-in name: workers play


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}


def _cli(tmp_path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "evalband.cli", *args]


def _panel(tmp_path: Path, name: str, env: str, episodes: int, kwargs: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nenv: {env}\nenv_kwargs: {kwargs}\nepisodes: {episodes}\n"
                    "seed: 3\nbudget: {steps: 5}\n")
    return path


def _count(db: Path, run_id: str) -> int:
    if not db.exists():
        return 0
    try:
        with open_store(db, read_only=True) as st:
            return st.count_episodes(run_id) if st.get_run(run_id) else 0
    except Exception:  # noqa: BLE001 - the store is being created
        return 0


def _wait_for_episodes(db: Path, run_id: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while _count(db, run_id) < 1:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no episode stored in 120 s"
        time.sleep(0.2)


def test_a_segfaulting_worker_becomes_error_episodes(tmp_path: Path) -> None:
    (tmp_path / "crashy_env.py").write_text(CRASHY)
    panel = _panel(tmp_path, "crashy", "crashy_env:CrashEnv", 12, "{length: 2}")
    db = tmp_path / "s.sqlite"
    done = subprocess.run(
        _cli(tmp_path, "run", str(panel), "-p", POLICY, "--backend", "process", "--workers",
             "2", "--store", str(db), "--run-id", "c", "--json"),
        env=_env(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stderr[-2000:]  # error episodes: the verdict withheld
    summary = json.loads(done.stdout)["summary"]
    with open_store(db, read_only=True) as st:
        records = st.episode_records("c")
        assert st.require_run("c").status == "finished"
    assert len(records) == 12
    crashed = [r for r in records if r.condition_seed % 7 == 0]
    assert crashed, "the panel must hold an episode that segfaults"
    for r in records:
        if r.condition_seed % 7 == 0:
            assert r.outcome.value == "error" and "SIGSEGV" in (r.error or "")
        else:
            assert r.outcome.value != "error", r.error
    assert summary["counts"]["error"] == len(crashed)
    assert "SIGSEGV" in summary["error_causes"][0]["message"]


def test_killing_the_driver_takes_its_workers(tmp_path: Path) -> None:
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
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        left = wait_gone(helpers, timeout=20)
        assert not left, f"still alive after the driver died: {sorted(left)}"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_sigterm_marks_the_run_interrupted_and_prints_the_resume_command(
    tmp_path: Path,
) -> None:
    panel = _panel(tmp_path, "term", FAULTY_COIN, 40, "{length: 3, sleep_s: 0.05}")
    db = tmp_path / "s.sqlite"
    proc = subprocess.Popen(
        _cli(tmp_path, "run", str(panel), "-p", POLICY, "--backend", "process", "--workers",
             "2", "--store", str(db), "--json"),
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path)
    deadline = time.monotonic() + 120
    run_id = None
    while run_id is None:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
        if db.exists():
            try:
                with open_store(db, read_only=True) as st:
                    runs = st.list_runs()
                    if runs and st.count_episodes(runs[0].run_id):
                        run_id = runs[0].run_id
            except Exception:  # noqa: BLE001 - being created
                pass
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    line = err.strip().splitlines()[-1]
    assert f"run {run_id} is marked interrupted" in line and "Resume with: evalband run" in line
    with open_store(db, read_only=True) as st:
        assert st.require_run(run_id).status == "interrupted"
    resume = shlex.split(line.split("Resume with: evalband ", 1)[1])
    assert resume[-2:] == ["--run-id", run_id]
    done = subprocess.run(_cli(tmp_path, *resume), env=_env(tmp_path), capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    with open_store(db, read_only=True) as st:
        assert st.require_run(run_id).status == "finished"
        assert st.count_episodes(run_id) == 40


NO_GUARD = '''
import evalband
store = evalband.open_store({db!r})
panel = evalband.load_panel({{"name": "ng", "env": "evalband/Coin-v0", "episodes": 6,
                             "seed": 0, "budget": {{"steps": 3}}}})
evalband.run_panel(panel, "evalband.policies._builtin:zero_action", store,
                   backend="process", workers=2)
'''


def test_a_script_without_a_main_guard_fails_clearly_and_runs_once(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    script = tmp_path / "script.py"
    script.write_text(NO_GUARD.format(db=str(db)))
    done = subprocess.run([sys.executable, str(script)], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          check=False)
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr.strip().splitlines()[-1]
    with open_store(db, read_only=True) as st:
        assert st.list_runs() == []  # no run per worker, and no empty run left behind


def test_a_pool_that_breaks_between_submits_loses_and_repeats_nothing() -> None:
    """A worker dying between two submits makes ``submit`` itself raise: the chunk goes back."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from evalband.run._backends import ProcessBackend

    calls = {"n": 0}

    class FlakyPool:
        def __enter__(self) -> FlakyPool:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def submit(self, fn: object, task: object, chunk: list[int]) -> Future[list[int]]:
            calls["n"] += 1
            if calls["n"] == 2:
                raise BrokenProcessPool("a child process terminated abruptly")
            future: Future[list[int]] = Future()
            future.set_result([10 * c for c in chunk])
            return future

    chunks = [[1], [2], [3], [4], [5]]
    out = list(ProcessBackend(workers=1)._run_isolated(
        None, chunks, None, FlakyPool))  # type: ignore[arg-type]
    assert sorted(out) == [10, 20, 30, 40, 50]  # each chunk once (order is the pool's)
