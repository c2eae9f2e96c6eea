"""The hostile-input sweep of issue 33, as a suite: one case per item.

Every case feeds evalband something wrong (a file, a server, a store, a flag) through the
command line in this process and holds it to four rules: no traceback, no hang (each case
runs under a wall-clock alarm), no silent acceptance (a refusal is exit 2 with ONE line
saying what was expected; a warning is a ``warning:`` line), and the store unchanged by a
refusal (its file bytes, its ``-wal`` and its media folder). Slow or whole-process cases
(a real segfault, ``kill -9`` of a driver or of a session, a hung server) have their own
tests, named in the case that stands for them here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from evalband.cli import main
from evalband.store import open_store
from evalband.store._media import media_dir

CASE_SECONDS = 30.0
"""The most one case may take: past it the case fails as a hang."""

ZERO = "evalband.policies._builtin:zero_action"


# -- the rules ------------------------------------------------------------------------------


class Hung(Exception):  # noqa: N818 - the case's verdict
    """A case ran past :data:`CASE_SECONDS`."""


@contextlib.contextmanager
def bounded(seconds: float = CASE_SECONDS) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hung(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def snapshot(store: Path) -> dict[str, str]:
    """The store's bytes: the file, its log and its media, by content."""
    files = [store, store.with_name(store.name + "-wal")]
    if media_dir(store).is_dir():
        files += sorted(media_dir(store).iterdir())
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files
            if f.is_file() and f.stat().st_size}  # a reader's empty -wal holds nothing


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with bounded():
        code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err[-3000:]
    return code, out, err


def refused(capsys: pytest.CaptureFixture[str], store: Path | None, *args: str,
            says: str = "") -> str:
    """Exit 2, one line on stderr naming the problem, the store as it was."""
    before = snapshot(store) if store is not None and store.exists() else None
    code, _, err = cli(capsys, *args, *(["--store", str(store)] if store else []))
    assert code == 2, (code, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert says in err, err
    if before is not None:
        assert store is not None and snapshot(store) == before
    return err


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A store holding one finished run (``base``) of the coin panel."""
    path = tmp_path / "s.sqlite"
    panel = write(tmp_path / "coin.yaml", COIN)
    assert main(["run", str(panel), "-p", ZERO, "--run-id", "base", "--store", str(path)]) == 0
    capsys.readouterr()
    return path


COIN = {"name": "coin", "env": "evalband/Coin-v0", "episodes": 6, "seed": 1,
        "budget": {"steps": 4}, "env_kwargs": {"length": 2}}


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


# -- test envs and policies (resolved by import path: tests/ is on sys.path) ----------------


class _Data:
    time = 0.0


class ClockEnv:
    """A MuJoCo-like env: 0.01 s a step on its clock, rendered at 10 fps."""

    frame_skip = 1
    model = type("M", (), {"opt": type("O", (), {"timestep": 0.01})()})()
    metadata = {"render_fps": 10}

    def __init__(self, **kwargs: Any) -> None:
        import gymnasium

        self.data = _Data()
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,))

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        self.data.time = 0.0
        return np.zeros(1), {}

    def step(self, action: Any) -> Any:
        self.data.time += 0.01
        return np.zeros(1), 0.0, False, False, {"is_success": False}

    def close(self) -> None:
        pass


def hang(obs: Any) -> Any:
    time.sleep(3600)


# -- 1-4: environments and time ---------------------------------------------------------------


def test_01_a_control_period_the_clock_contradicts(tmp_path: Path, capsys) -> None:
    panel = write(tmp_path / "p.yaml", {"name": "p", "env": "test_hostile_inputs:ClockEnv",
                                        "episodes": 1, "budget": {"steps": 5},
                                        "control_dt": 0.1})
    code, out, _ = cli(capsys, "check-env", panel)
    assert code == 1 and "problem [time]" in out and "control_dt: 0.01" in out


def test_02_a_success_rule_that_can_never_hold(tmp_path: Path, store: Path, capsys) -> None:
    panel = write(tmp_path / "p.yaml", {**COIN, "env": "testenvs:NoKeyCoinEnv"})
    code, _, err = cli(capsys, "run", panel, "-p", "random", "--store", store)
    assert code == 0 and err.startswith("warning: ") and "never appears" in err


def test_03_an_env_that_does_not_reproduce(tmp_path: Path, store: Path, capsys) -> None:
    panel = write(tmp_path / "p.yaml", {**COIN, "env": "testenvs:UnseededCoinEnv"})
    code, _, err = cli(capsys, "run", panel, "-p", "random", "--store", store)
    assert code == 0 and "does not reproduce" in err


def test_04_check_env_with_every_kind_of_policy(tmp_path: Path, capsys) -> None:
    panel = write(tmp_path / "p.yaml", COIN)
    for policy in ("testenvs:FaultyCoinEnv", "random", "ws://127.0.0.1:1?retries=0"):
        code, out, _ = cli(capsys, "check-env", panel, "-p", policy)
        assert code in (0, 1) and out.strip().splitlines()[-1] in (
            "ok: no problems found", "1 problem(s)")  # a class that is no policy: one line


# -- 5-8: recording -------------------------------------------------------------------------


def test_05_record_an_env_without_frames(store: Path, capsys) -> None:
    refused(capsys, store, "run", "reach1d", "-p", "reach1d:damped", "--record", "all",
            says="render_mode")


def test_06_record_without_pyav(tmp_path: Path, store: Path, capsys,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "av", None)
    panel = write(tmp_path / "pt.yaml", {"name": "pt", "env": "evalband/PushT-v0",
                                         "episodes": 2, "budget": {"steps": 3}})
    refused(capsys, store, "run", panel, "-p", "pusht:expert", "--record", "all",
            says="PyAV")


def test_07_a_frame_size_that_is_none(store: Path, capsys) -> None:
    refused(capsys, store, "run", "reach1d", "-p", "reach1d:damped", "--record", "all",
            "--record-size", "99999x-1", says="--record-size")


def test_08_empty_and_undecodable_clips(tmp_path: Path, store: Path, capsys) -> None:
    folder = tmp_path / "eval"
    (folder / "videos").mkdir(parents=True)
    (folder / "videos" / "e0.mp4").write_bytes(b"")
    (folder / "videos" / "e1.mp4").write_bytes(b"\x00\x00\x00\x18ftypisom" + b"\x00" * 40)
    info = folder / "eval_info.json"
    write(info, json.dumps({"per_episode": [{"episode_ix": i, "success": True, "seed": i,
                                             "sum_reward": 1.0} for i in range(2)],
                            "video_paths": ["videos/e0.mp4", "videos/e1.mp4"]}))
    code, out, _ = cli(capsys, "import", info, "--run-id", "clips", "--store", store)
    assert code == 0 and out.count("not imported") == 2  # said, not silent
    assert not media_dir(store).exists() or not any(media_dir(store).iterdir())


# -- 9-11: remote policies ------------------------------------------------------------------


def test_09_a_dead_policy_server_stops_the_run(tmp_path: Path, store: Path, capsys) -> None:
    # a hung and a killed `serve`: tests/policies/test_remote_faults.py
    panel = write(tmp_path / "p.yaml", COIN)
    started = time.monotonic()
    code, _, err = cli(capsys, "run", panel, "-p", "ws://127.0.0.1:1?timeout=1&retries=1",
                       "--run-id", "dead", "--store", store)
    assert code == 75 and time.monotonic() - started < 3 * 1.0 + 5
    assert "Resume with:" in err and "--retry-errors" in err


def test_10_error_episodes_are_no_clean_exit(tmp_path: Path, store: Path, capsys) -> None:
    panel = write(tmp_path / "p.yaml", {**COIN, "env": "testenvs:FaultyCoinEnv",
                                        "env_kwargs": {"length": 2, "error_p": 1.0}})
    code, _, err = cli(capsys, "run", panel, "-p", ZERO, "--store", store)
    assert code == 1 and "replay them with" in err


def test_11_serve_a_module_the_standard_library_hides(tmp_path: Path, capsys,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    write(tmp_path / "chunk.py", "def act(obs):\n    return obs\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import chunk  # noqa: F401
    refused(capsys, None, "serve", "chunk:act", "--port", "0", says="rename")


# -- 12-16: imports, everyday, reports --------------------------------------------------------


def test_12_seeds_without_episodes_pair_by_seed(tmp_path: Path, store: Path, capsys) -> None:
    path = write(tmp_path / "seeds.csv", "seed,success\n13,0\n11,1\n12,0\n11,1\n")
    code, out, _ = cli(capsys, "import", path, "--store", store)
    assert code == 0 and "pair by condition seed" in out and "seed read as" in out


def test_13_overrides_out_of_range(store: Path, capsys) -> None:
    refused(capsys, store, "run", "reach1d", "-p", "reach1d:damped", "--episodes", "0")
    refused(capsys, store, "run", "reach1d", "-p", "reach1d:damped", "--seed", "-3")


def test_14_a_resume_says_what_was_stored(tmp_path: Path, store: Path, capsys) -> None:
    panel = write(tmp_path / "coin.yaml", COIN)
    code, out, _ = cli(capsys, "run", panel, "-p", ZERO, "--run-id", "base", "--store", store)
    assert code == 0 and "resumed base: 6/6 already stored, 0 played now" in out


def test_15_names_that_are_markup(tmp_path: Path, store: Path, capsys) -> None:
    evil = "<script>alert(1)</script>|*x*"
    path = write(tmp_path / "evil.csv", "episode,success,slice.arm\n" + "".join(
        f"{i},{i % 2},\"{evil}\"\n" for i in range(4)))
    assert cli(capsys, "import", path, "--run-id", "evil", "--store", store)[0] == 0
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    code, _, _ = cli(capsys, "report", "evil", "--md", md, "--html", page, "--store", store)
    assert code == 0
    assert "<script>alert" not in page.read_text() and "<script>alert" not in md.read_text()
    assert "\\|\\*x\\*" in md.read_text()  # the table keeps its columns


def test_16_the_declared_alpha(tmp_path: Path, store: Path, capsys) -> None:
    panel = write(tmp_path / "coin.yaml", COIN)
    cli(capsys, "run", panel, "-p", "random", "--run-id", "cand", "--store", store)
    code, out, _ = cli(capsys, "compare", "base", "cand", "--json", "--store", store)
    assert json.loads(out)["procedure"]["alpha"] == 0.05


# -- 17-29: security and reliability ----------------------------------------------------------


def test_17_an_import_naming_etc_passwd(tmp_path: Path, store: Path, capsys) -> None:
    info = write(tmp_path / "eval" / "eval_info.json", "") if False else None
    folder = tmp_path / "eval"
    folder.mkdir()
    info = write(folder / "eval_info.json", json.dumps({
        "per_episode": [{"episode_ix": 0, "success": True, "seed": 1, "sum_reward": 1.0}],
        "video_paths": ["/etc/passwd"]}))
    refused(capsys, store, "import", info, says="outside the imported directory")
    os.symlink("/etc/passwd", folder / "link.mp4")
    write(info, json.dumps({
        "per_episode": [{"episode_ix": 0, "success": True, "seed": 1, "sum_reward": 1.0}],
        "video_paths": ["link.mp4"]}))
    refused(capsys, store, "import", info, says="outside the imported directory")


def test_18_an_unreaped_dead_driver_is_dead() -> None:
    # the real kill -9 of a process run: tests/run/test_orphans.py
    import subprocess

    from evalband.run._pool import driver_gone

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 60  # a guard only: a loaded machine starts Python slowly
    while not driver_gone(child.pid):  # exited, never waited for: a zombie
        assert time.monotonic() < deadline, "a child that exits was not seen gone in 60 s"
        time.sleep(0.01)
    child.wait()


def _bundle(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "bundle"
    assert cli(capsys, "export", "base", "--out", out, "--store", store)[0] == 0
    return out


def _tamper(bundle: Path, column: str, value: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = bundle / "episodes.parquet"
    table = pq.read_table(path)
    index = table.column_names.index(column)
    table = table.set_column(index, column, pa.array([value] * table.num_rows))
    pq.write_table(table, path)
    doc = json.loads((bundle / "manifest.json").read_text())  # consistent, not authentic
    doc["files"]["episodes.parquet"] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                                        "bytes": path.stat().st_size}
    (bundle / "manifest.json").write_text(json.dumps(doc))


@pytest.mark.parametrize(("column", "value"), [
    ("extra", "[1, 2]"), ("slices", "7"), ("slices", "{not json"), ("cell", None),
    ("terminated", None), ("condition_seed", None), ("policy", None), ("extra", "{bad"),
])
def test_19_a_bundle_with_malformed_fields(tmp_path: Path, store: Path, capsys,
                                          column: str, value: Any) -> None:
    bundle = _bundle(tmp_path, store, capsys)
    _tamper(bundle, column, value)
    other = tmp_path / "other.sqlite"
    refused(capsys, other, "import", bundle, says="invalid episode")
    with open_store(other) as st:
        assert st.list_runs() == []


def test_20_episode_numbers_past_the_panel_limit(tmp_path: Path, store: Path, capsys) -> None:
    path = write(tmp_path / "big.csv", "episode,success\n0,1\n10000000,0\n")
    refused(capsys, store, "import", path, says="below 10,000,000")


def test_21_a_hung_episode(tmp_path: Path, store: Path, capsys) -> None:
    panel = write(tmp_path / "p.yaml", {**COIN, "episodes": 2})
    code, _, _ = cli(capsys, "run", panel, "-p", "test_hostile_inputs:hang",
                     "--episode-timeout", "0.2", "--run-id", "hung", "--store", store)
    assert code == 1
    with open_store(store) as st:
        assert all((r.error or "").startswith("EpisodeTimeout")
                   for r in st.episode_records("hung"))


def test_22_a_crash_the_last_process_left_a_marker_of(tmp_path: Path, store: Path,
                                                       capsys) -> None:
    # a real SIGSEGV in the driver: tests/run/test_serial_crash.py
    from evalband.run._flight import flight_path

    panel = write(tmp_path / "p.yaml", {**COIN, "episodes": 3})
    marker = flight_path(store, "crashed")
    cli(capsys, "run", panel, "-p", ZERO, "--run-id", "crashed", "--episodes", "1",
        "--store", store)
    code, _, _ = cli(capsys, "run", panel, "-p", ZERO, "--run-id", "crashed", "--store", store)
    assert code == 2  # another panel size: its fingerprint differs; refused, as ever
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_bytes(json.dumps(["", 0, 0]).encode().ljust(255) + b"\n"
                       + b"Fatal Python error: Segmentation fault\n")
    with open_store(store) as st:
        with st.transaction() as conn:
            conn.execute("DELETE FROM episodes WHERE run_id = 'crashed'")
    code, _, err = cli(capsys, "run", panel, "-p", ZERO, "--run-id", "crashed", "--episodes",
                       "1", "--store", store)
    assert code == 1 and "crashed the last run's process" in err
    with open_store(store) as st:
        (record,) = st.episode_records("crashed")
    assert record.outcome.value == "error" and "Segmentation fault" in (record.error or "")


@pytest.mark.parametrize("case", ["dev-zero", "fifo", "workers", "budget", "columns", "rows",
                                  "parquet"])
def test_23_sizes_past_their_limits(tmp_path: Path, store: Path, capsys, case: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import evalband._util.limits as limits

    if case == "dev-zero":
        refused(capsys, store, "import", "/dev/zero", says="a regular file")
    elif case == "fifo":
        os.mkfifo(tmp_path / "f.csv")
        refused(capsys, store, "import", tmp_path / "f.csv", says="FIFO")
    elif case == "workers":
        refused(capsys, store, "run", "reach1d", "-p", "reach1d:damped", "--backend",
                "process", "--workers", "1000000", says="--workers")
    elif case == "budget":
        panel = write(tmp_path / "p.yaml", {**COIN, "budget": {"steps": 10**12}})
        refused(capsys, store, "run", panel, "-p", ZERO, says="budget.steps")
    elif case == "columns":
        wide = ",".join(f"c{i}" for i in range(10_001)) + ",success\n"
        refused(capsys, store, "import", write(tmp_path / "w.csv", wide), says="columns")
    elif case == "rows":
        monkeypatch.setattr(limits, "MAX_IMPORT_ROWS", 5)
        rows = write(tmp_path / "r.csv", "success\n" + "1\n" * 20)
        refused(capsys, store, "import", rows, says="lines")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        monkeypatch.setattr(limits, "MAX_IMPORT_BYTES", 100_000)  # a 4 GiB bomb, scaled
        pq.write_table(pa.table({"success": [1] * 2000, "note": ["x" * 100] * 2000}),
                       tmp_path / "b.parquet", compression="zstd")
        assert (tmp_path / "b.parquet").stat().st_size < 100_000  # small on disk
        refused(capsys, store, "import", tmp_path / "b.parquet", says="uncompressed")


def test_24_a_frame_over_the_servers_limit() -> None:
    # the full set (flood, malformed, client side): tests/policies/test_serve_limits.py
    import struct

    from websockets.sync.client import connect

    from evalband.policies import PolicyServer

    server = PolicyServer(lambda obs: obs, name="echo", port=0, max_frame_bytes=4096)
    port = server.start_in_thread()
    try:
        with bounded(), connect(f"ws://127.0.0.1:{port}", max_size=None) as ws:
            ws.recv(timeout=5)
            ws.socket.sendall(b"\x82\xff" + struct.pack("!Q", 1 << 40) + b"mask")
            with pytest.raises(Exception) as info:
                ws.recv(timeout=5)
    finally:
        server.stop()
    assert "1009" in str(info.value)


@pytest.mark.parametrize("command", [["show", "base"], ["report", "base", "--html", "x.html"],
                                     ["compare", "base", "base"], ["export", "base", "--out",
                                                                   "b"], ["noise", "base"],
                                     ["runs"], ["run", "reach1d", "-p", "reach1d:damped"]])
def test_25_a_damaged_store(tmp_path: Path, store: Path, capsys, command: list[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = bytearray(store.read_bytes())
    rng = np.random.default_rng(7)
    for at in rng.integers(4096, len(data), 300):  # past the header: the file still opens
        data[int(at)] ^= 0xFF
    store.write_bytes(bytes(data))
    refused(capsys, store, *command, says="is damaged")


def test_26_a_quote_left_open(tmp_path: Path, store: Path, capsys) -> None:
    path = write(tmp_path / "q.csv", 'success,note\n1,a\n0,"b\n1,c\n0,d\n')
    refused(capsys, store, "import", path, says="line 3")


@pytest.mark.parametrize("case", ["html-dir", "port-in-use", "bad-host", "ws-port", "utf8",
                                  "nested", "migration"])
def test_27_ordinary_mistakes(tmp_path: Path, store: Path, capsys, case: str,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    if case == "html-dir":
        refused(capsys, store, "report", "base", "--html", tmp_path, says="Is a directory")
    elif case in ("port-in-use", "bad-host"):
        import socket

        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            host = "127.0.0.1" if case == "port-in-use" else "no-such-host.invalid"
            refused(capsys, None, "serve", "reach1d:damped", "--port", port, "--host", host,
                    says="cannot listen")
    elif case == "ws-port":
        refused(capsys, store, "run", "reach1d", "-p", "ws://127.0.0.1:99999", says="ws://")
    elif case == "utf8":
        path = tmp_path / "p.yaml"
        path.write_bytes(b"\xff\xfename: p\n")
        refused(capsys, store, "run", path, "-p", ZERO, says="UTF-8")
    elif case == "nested":
        deep = write(tmp_path / "d.jsonl", '{"success": 1, "x": ' + "[" * 50_000
                     + "]" * 50_000 + "}\n")
        refused(capsys, store, "import", deep, says="nested too deeply")
    else:
        import evalband.store._schema as schema

        old = tmp_path / "old.sqlite"
        old.write_bytes((Path(__file__).parent / "store/fixtures/store-v1.sqlite").read_bytes())

        def broken(conn: sqlite3.Connection) -> None:
            raise ValueError("a step that cannot read this file")

        monkeypatch.setitem(schema.MIGRATIONS, 1, broken)
        refused(capsys, old, "run", "reach1d", "-p", "reach1d:damped", says="cannot migrate")


def test_28_a_killed_session_takes_its_trial_command() -> None:
    # kill -9 and SIGTERM of a real session process: tests/session/test_trial_command_group.py
    from evalband.session._tui import run_trial_command

    with bounded():
        result = run_trial_command("echo hostile; exit 3")
    assert (result.exit_code, result.output_tail) == (3, "hostile")


@pytest.mark.parametrize("case", ["integrity", "shm", "episodes-true", "range"])
def test_29_small_ones(tmp_path: Path, store: Path, capsys, case: str,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    if case == "integrity":
        with open_store(store) as st:
            said = str(st._integrity("r", sqlite3.IntegrityError(
                "NOT NULL constraint failed: runs.policy")))
        assert "already exists" not in said and "NOT NULL" in said
    elif case == "shm":
        shm = store.with_name(store.name + "-shm")
        shm.touch()
        shm.chmod(0o444)  # another user's, read-only (as this user is not its owner)
        monkeypatch.setattr(os, "geteuid", lambda: shm.stat().st_uid + 1)
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, m, *a, **k: False if Path(p) == shm
                            else real(p, m, *a, **k))
        refused(capsys, store, "run", "reach1d", "-p", "reach1d:damped", says="-shm")
    elif case == "episodes-true":
        panel = write(tmp_path / "p.yaml", {**COIN, "episodes": True})
        refused(capsys, store, "run", panel, "-p", ZERO, says="true/false")
    else:
        import urllib.error
        import urllib.request

        from evalband.view import serve_in_background

        panel = {"name": "pt", "env": "evalband/PushT-v0", "episodes": 1,
                 "budget": {"steps": 2}}
        cli(capsys, "run", write(tmp_path / "pt.yaml", panel), "-p", "pusht:expert",
            "--record", "all", "--run-id", "filmed", "--store", store)
        clip = next(media_dir(store).iterdir()).name
        with serve_in_background(store, poll_ms=100) as server, bounded():
            request = urllib.request.Request(f"{server.url}/media/{clip}",
                                             headers={"Range": "bytes=" + "9" * 5000 + "-"})
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 416
