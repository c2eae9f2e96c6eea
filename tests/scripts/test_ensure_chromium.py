"""scripts/ensure-chromium, which `make test` runs first: it installs Debian's chromium with
apt-get as root (or via sudo), and otherwise fails with one line saying what to do.

The script runs for real (bash) with a PATH holding stand-ins for ``id``, ``apt-get`` and
``sudo`` so no test touches the machine's packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure-chromium"
MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"
CI_RUN = Path(__file__).resolve().parents[2] / ".ci" / "run"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def _bin_dir(tmp_path: Path, uid: int) -> Path:
    """A PATH directory with the coreutils the script uses and a fake ``id``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("mktemp", "rm", "tail", "cat", "chmod", "touch"):
        found = shutil.which(name)
        assert found is not None
        (bin_dir / name).symlink_to(found)
    _tool(bin_dir, "id", f"echo {uid}")
    return bin_dir


def _run(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": str(bin_dir)}
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run([bash, str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_present_chromium_is_left_alone(tmp_path: Path) -> None:
    bin_dir = _bin_dir(tmp_path, uid=1000)
    _tool(bin_dir, "chromium", "exit 0")
    _tool(bin_dir, "apt-get", f"touch {tmp_path}/apt-ran")
    done = _run(bin_dir)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "apt-ran").exists()


def test_root_installs_with_apt_get(tmp_path: Path) -> None:
    bin_dir = _bin_dir(tmp_path, uid=0)
    # apt-get 'installs' chromium by creating the command; it records its arguments
    _tool(bin_dir, "apt-get", f'echo "$@" >> {tmp_path}/apt-args\n'
          f'case "$*" in *install*) printf "#!/bin/sh\\n" > {bin_dir}/chromium; '
          f"chmod 755 {bin_dir}/chromium;; esac")
    done = _run(bin_dir)
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "apt-args").read_text().splitlines()
    assert any("update" in a for a in args)
    assert any("install -y chromium" in a for a in args)
    assert os.access(bin_dir / "chromium", os.X_OK)


def test_non_root_without_sudo_fails_with_one_line(tmp_path: Path) -> None:
    bin_dir = _bin_dir(tmp_path, uid=1000)
    _tool(bin_dir, "apt-get", f"touch {tmp_path}/apt-ran")
    done = _run(bin_dir)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "not root" in lines[0] and "apt-get install -y chromium" in lines[0]
    assert not (tmp_path / "apt-ran").exists()


def test_non_root_uses_passwordless_sudo(tmp_path: Path) -> None:
    bin_dir = _bin_dir(tmp_path, uid=1000)
    _tool(bin_dir, "sudo", f'echo "$@" >> {tmp_path}/sudo-args\n[ "$1" = "-n" ] && shift\n'
          '[ "$1" = "true" ] && exit 0\nexec "$@"')
    _tool(bin_dir, "apt-get", f'case "$*" in *install*) printf "#!/bin/sh\\n" > '
          f"{bin_dir}/chromium; chmod 755 {bin_dir}/chromium;; esac")
    done = _run(bin_dir)
    assert done.returncode == 0, done.stderr
    assert "apt-get" in (tmp_path / "sudo-args").read_text()


def test_failed_apt_get_fails_clearly(tmp_path: Path) -> None:
    bin_dir = _bin_dir(tmp_path, uid=0)
    _tool(bin_dir, "apt-get", 'echo "E: Unable to locate package chromium" >&2; exit 100')
    done = _run(bin_dir)
    assert done.returncode == 1
    assert "Unable to locate package chromium" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("ensure-chromium: Chromium is needed")


def test_make_test_runs_it_and_ci_only_calls_make_test() -> None:
    make = MAKEFILE.read_text()
    test_recipe = make.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "venvs" in test_recipe  # make test builds what the tests need, Chromium among it
    venvs = make.split("\nvenvs:", 1)[1].split("\n", 1)[0]
    assert "chromium" in venvs.split()
    chromium_recipe = make.split("\nchromium:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/ensure-chromium" in chromium_recipe
    ci = [line for line in CI_RUN.read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert ci[-1] == "make test"
    assert not any("apt-get" in line for line in ci)
