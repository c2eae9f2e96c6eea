"""A store this user cannot write is still read; writing it is a one-line error.

Run as a non-root user: root ignores file permissions, so under root the commands run in a
forked child that drops to uid/gid 65534 (nobody) after everything they import is loaded
(this machine's interpreter lives where nobody may not read). Under another user they run
as that user.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from evalband.cli import main

NOBODY = 65534

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX permissions, Linux")


def _as_user(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` as a non-root user: (exit code, stdout, stderr)."""
    if os.geteuid() != 0:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(argv)
        return code, out.getvalue(), err.getvalue()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root for good, run, report through the pipe
        code = 99
        out, err = io.StringIO(), io.StringIO()
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with redirect_stdout(out), redirect_stderr(err):
                code = main(argv)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            err.write(f"child raised {type(exc).__name__}: {exc}\n")
        finally:
            payload = json.dumps([code, out.getvalue(), err.getvalue()]).encode()
            os.write(write_fd, payload)
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    code, out, err = json.loads(b"".join(chunks))
    return int(code), str(out), str(err)


@pytest.fixture(scope="module")
def shared_dir() -> Iterator[Path]:
    """A folder outside root's private tmp, readable by everyone."""
    path = Path(tempfile.mkdtemp(prefix="evalband-ro-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stores(shared_dir: Path) -> dict[str, Path]:
    """Two copies of one store: read-only file in a read-only folder; read-only file only."""
    src = shared_dir / "src.sqlite"
    for rid in ("a", "b"):
        assert main(["run", "reach1d", "-p", "reach1d:damped", "--run-id", rid, "--store",
                     str(src), "--json"]) == 0
    # load, as root, everything the commands below import
    for argv in (["show", "a"], ["runs"], ["compare", "a", "b"], ["show", "nope"],
                 ["report", "a", "--html", str(shared_dir / "warm.html")], ["noise", "a"]):
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            main([*argv, "--store", str(src)])
    locked = shared_dir / "locked"
    locked.mkdir()
    shutil.copy(src, locked / "s.sqlite")
    (locked / "s.sqlite").chmod(0o444)
    locked.chmod(0o555)
    open_dir = shared_dir / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    shutil.copy(src, open_dir / "s.sqlite")
    (open_dir / "s.sqlite").chmod(0o444)
    return {"locked": locked / "s.sqlite", "file": open_dir / "s.sqlite"}


@pytest.mark.parametrize("which", ["locked", "file"])
def test_read_commands_read_a_store_they_cannot_write(stores: dict[str, Path],
                                                      which: str) -> None:
    store = str(stores[which])
    before = stores[which].read_bytes()
    code, out, err = _as_user(["show", "a", "--store", store, "--json"])
    assert code == 0, err
    assert json.loads(out)["summary"]["n_attempted"] == 64
    code, out, err = _as_user(["runs", "--store", store, "--json"])
    assert code == 0 and {r["run_id"] for r in json.loads(out)} == {"a", "b"}, err
    code, _, err = _as_user(["compare", "a", "b", "--store", store, "--json"])
    assert code in (0, 3, 4, 5), err  # compared (just not listed for the viewer)
    assert stores[which].read_bytes() == before


@pytest.mark.parametrize("which", ["locked", "file"])
def test_run_into_a_read_only_store_is_one_line(stores: dict[str, Path], which: str) -> None:
    code, out, err = _as_user(["run", "reach1d", "-p", "reach1d:damped", "--run-id", "c",
                               "--store", str(stores[which])])
    assert code == 2, (out, err)
    assert err.startswith("error: cannot write the run store") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_a_mistyped_store_is_named_not_created(shared_dir: Path) -> None:
    missing = shared_dir / "typo.sqlite"
    for argv in (["show", "a"], ["runs"], ["compare", "a", "b"], ["noise", "a"]):
        code, _, err = _as_user([*argv, "--store", str(missing)])
        assert code == 2 and "no run store at" in err and err.count("\n") == 1, (argv, err)
    assert not missing.exists()


def test_a_side_file_that_vanishes_while_checked_is_not_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another connection closing deletes its ``-wal`` between our two looks at it (seen in CI
    as one of six concurrent writers refused): a vanished log is not a locked one."""
    from evalband.store import open_store

    path = tmp_path / "s.sqlite"
    with open_store(path):
        pass
    wal = path.with_name(path.name + "-wal")
    wal.write_bytes(b"")
    real_access = os.access

    def access_after_the_other_writer_closed(p: object, mode: int) -> bool:
        if Path(str(p)) == wal and wal.exists():
            wal.unlink()  # the other connection closes right now
        return real_access(p, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access_after_the_other_writer_closed)
    with open_store(path) as st:  # refused before: "its s.sqlite-wal file is read-only"
        assert st.path == path


def test_a_side_file_that_appears_while_checked_is_not_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other race (seen in CI on ``-shm``): the file is absent when first looked at and
    another connection creates it before the second look."""
    from evalband.store import open_store

    path = tmp_path / "s.sqlite"
    with open_store(path):
        pass
    shm = path.with_name(path.name + "-shm")
    shm.unlink(missing_ok=True)
    real_access = os.access

    def access_then_the_other_writer_opens(p: object, mode: int) -> bool:
        answer = real_access(p, mode)  # type: ignore[arg-type]
        if Path(str(p)) == shm and not shm.exists():
            shm.write_bytes(b"")  # the other connection opens the store right now
        return answer

    monkeypatch.setattr(os, "access", access_then_the_other_writer_opens)
    with open_store(path) as st:  # refused before: "its s.sqlite-shm file is read-only"
        assert st.path == path
