"""``serve module:attr`` imports from the current directory, as ``run`` does, and a file named
like a standard-library module is never silently replaced by it (issue 33, item 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import evalband
from evalband.errors import PolicyNotFoundError
from evalband.policies import resolve_policy

SRC = Path(evalband.__file__).resolve().parents[1]  # this evalband, in the child processes too


def test_serve_imports_a_policy_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "my_lab_policy.py").write_text("def act(obs):\n    return -obs\n")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    # -P: no current directory on sys.path, as the `evalband` executable starts
    proc = subprocess.Popen([sys.executable, "-P", "-m", "evalband.cli", "serve",
                             "my_lab_policy:act",
                             "--port", "0", "--json"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("{"), proc.stderr.read() if proc.stderr else line
        assert json.loads(line)["url"].startswith("ws://127.0.0.1:")
    finally:
        proc.kill()
        proc.communicate()


def test_a_local_file_named_like_the_standard_library_is_never_silently_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "chunk.py").write_text("def act(obs):\n    return obs\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import chunk  # noqa: F401  (the standard library's, imported before the policy)
    with pytest.raises(PolicyNotFoundError) as info:
        resolve_policy("chunk:act")
    assert "rename" in str(info.value) and str(tmp_path / "chunk.py") in str(info.value)


def test_a_fresh_process_takes_the_local_file_first(tmp_path: Path) -> None:
    (tmp_path / "chunk.py").write_text("def act(obs):\n    return 'local'\n")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    code = "from evalband.policies import resolve_policy; print(resolve_policy('chunk:act')(0))"
    out = subprocess.run([sys.executable, "-P", "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "local", out.stderr[-2000:]
