"""A segfault in the serial driver names its episode; a resume stores it as an error and goes
on instead of dying on it again (issue 33, item 22). Real processes, a real SIGSEGV."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_crash_isolation import CRASHY, POLICY, _cli, _env, _panel

from evalband.store import open_store

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform != "linux", reason="a real SIGSEGV")]


def test_a_segfault_in_the_serial_driver_is_stored_on_resume(tmp_path: Path) -> None:
    (tmp_path / "crashy_env.py").write_text(CRASHY)
    panel = _panel(tmp_path, "crashy", "crashy_env:CrashEnv", 12, "{length: 2}")
    db = tmp_path / "s.sqlite"
    args = _cli(tmp_path, "run", str(panel), "-p", POLICY, "--store", str(db), "--run-id", "c")
    codes = []
    for _ in range(6):  # each crash costs one process; each resume gets past one crash
        done = subprocess.run(args, env=_env(tmp_path), capture_output=True, text=True,
                              timeout=120, check=False)
        codes.append(done.returncode)
        if done.returncode != -11:
            break
    with open_store(db, read_only=True) as st:
        records = st.episode_records("c")
    crashed = [r for r in records if r.condition_seed % 7 == 0]
    assert crashed and codes[: len(crashed)] == [-11] * len(crashed)  # SIGSEGV, then resumed
    assert codes[len(crashed)] == 1  # the last resume finished; the errors withhold a verdict
    assert len(records) == 12
    for r in records:
        if r.condition_seed % 7 == 0:
            assert r.outcome.value == "error" and "Segmentation fault" in (r.error or "")
        else:
            assert r.outcome.value != "error", r.error
    assert "crashed the last run's process" in done.stderr
