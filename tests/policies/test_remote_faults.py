"""A hung and a killed policy server under ``evalband run`` (issue 33, items 9 and 10).

The run stops within 3 x the client's timeout of the failures, exits non-zero (75: resumable),
prints how to resume and how to replay the error episodes; nothing already stored is lost,
and the resumed run equals a local one. A run that finishes with error episodes exits 1 and
says how to replay them.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalband.cli import main
from evalband.episode import Outcome
from evalband.store import open_store
from testkit import start_serve

pytest.importorskip("websockets")

ZERO = "evalband.policies._builtin:zero_action"
PANEL = {"name": "r", "env": "evalband/Reach1D-v0", "episodes": 12, "seed": 0,
         "budget": {"steps": 30}}


def _panel(tmp_path: Path, **fields: Any) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**PANEL, **fields}))
    return str(path)


def _records(store: Path, run_id: str) -> list[Any]:
    with open_store(store) as st:
        return st.episode_records(run_id)


def _hanging_server(answers: int) -> tuple[int, list[float]]:
    """A server that answers ``answers`` requests like reach1d:damped, then hangs forever."""
    from websockets.asyncio.server import serve

    import evalband.policies.reach1d as reach
    from evalband.policies._wire import packb, unpackb

    ready, holder, hung_at = threading.Event(), {}, []
    count = [0]

    async def handler(ws: Any) -> None:
        await ws.send(packb({}))
        async for message in ws:
            count[0] += 1
            if count[0] > answers:
                if not hung_at:
                    hung_at.append(time.monotonic())
                await asyncio.sleep(3600)
            obs = unpackb(message)["state"]
            await ws.send(packb({"actions": reach.damped(obs)}))

    async def run() -> None:
        async with serve(handler, "127.0.0.1", 0) as server:
            holder["port"] = next(iter(server.sockets)).getsockname()[1]
            ready.set()
            await asyncio.sleep(3600)

    threading.Thread(target=lambda: asyncio.run(run()), daemon=True).start()
    assert ready.wait(10)
    return holder["port"], hung_at


def test_a_hung_server_stops_the_run_within_three_timeouts(tmp_path: Path, capsys) -> None:
    timeout = 0.6
    port, hung_at = _hanging_server(answers=40)  # a few episodes, then silence
    store = tmp_path / "s.sqlite"
    url = f"ws://127.0.0.1:{port}?timeout={timeout}&retries=1"
    code = main(["run", _panel(tmp_path), "-p", url, "--run-id", "hung", "--store", str(store)])
    stopped = time.monotonic()
    err = capsys.readouterr().err
    assert code == 75
    assert stopped - hung_at[0] <= 3 * timeout + 0.5, stopped - hung_at[0]
    assert "failed 3 episodes in a row" in err and "did not answer in time" in err
    assert "Resume with: evalband run" in err and "--run-id hung" in err
    assert "--retry-errors" in err
    records = _records(store, "hung")
    played = {r.key: r for r in records if r.outcome is not Outcome.ERROR}
    assert played and [r.outcome for r in records].count(Outcome.ERROR) == 3
    assert main(["run", _panel(tmp_path), "-p", "reach1d:damped", "--run-id", "local",
                 "--store", str(store)]) == 0
    local = {r.key: r for r in _records(store, "local")}
    assert all((r.outcome, r.steps) == (local[k].outcome, local[k].steps)  # kept as played
               for k, r in played.items())
    with open_store(store) as st:
        assert st.require_run("hung").status == "interrupted"


@pytest.mark.slow
def test_a_killed_server_stops_the_run_then_it_resumes(tmp_path: Path, capsys) -> None:
    proc, first = start_serve("reach1d:damped", "--port", "0")  # the OS's free port, kept
    port = int(first.rsplit(":", 1)[1])  # for the restart (no port probed free, then taken)
    store = tmp_path / "s.sqlite"
    url = f"ws://127.0.0.1:{port}?timeout=2&retries=1"
    died: list[float] = []

    def kill_after(requests: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=2) as r:
                    if json.loads(r.read())["requests"] >= requests:
                        break
            except OSError:
                pass
            time.sleep(0.005)
        proc.kill()
        proc.wait()
        died.append(time.monotonic())

    killer = threading.Thread(target=kill_after, args=(100,), daemon=True)
    killer.start()
    panel = _panel(tmp_path, episodes=40)
    try:
        code = main(["run", panel, "-p", url, "--run-id", "killed", "--store", str(store)])
        stopped = time.monotonic()
        killer.join()
        err = capsys.readouterr().err
        assert code == 75 and stopped - died[0] <= 3 * 2.0, stopped - died[0]
        assert "Resume with:" in err and "--retry-errors" in err
        before = _records(store, "killed")
        assert 3 <= len(before) < 40
        kept = {r.key: r for r in before if r.outcome is not Outcome.ERROR}
        # the server is back: resume, replaying the error episodes
        proc, _ = start_serve("reach1d:damped", "--port", str(port))
        assert main(["run", panel, "-p", url, "--run-id", "killed", "--retry-errors",
                     "--store", str(store)]) == 0
        assert "resumed killed:" in capsys.readouterr().out
        after = {r.key: r for r in _records(store, "killed")}
        assert len(after) == 40 and all(r.outcome is not Outcome.ERROR for r in after.values())
        assert all(after[k].as_dict() == r.as_dict() for k, r in kept.items())  # none lost
        assert main(["run", panel, "-p", "reach1d:damped", "--run-id", "local",
                     "--store", str(store)]) == 0
        local = {r.key: r for r in _records(store, "local")}
        assert {k: (r.outcome, r.steps) for k, r in after.items()} == {
            k: (r.outcome, r.steps) for k, r in local.items()}
    finally:
        proc.kill()
        proc.wait()


def test_error_episodes_exit_one_and_say_how_to_replay(tmp_path: Path, capsys) -> None:
    panel = _panel(tmp_path, env="testenvs:FaultyCoinEnv", env_kwargs={"error_p": 0.5},
                   budget={"steps": 4}, episodes=6)
    store = str(tmp_path / "s.sqlite")
    assert main(["run", panel, "-p", ZERO, "--run-id", "e", "--store", store]) == 1
    err = capsys.readouterr().err
    assert "error episode(s) kept; replay them with: evalband run" in err
    assert "--run-id e" in err and err.rstrip().endswith("--retry-errors")
    assert main(["run", panel, "-p", ZERO, "--run-id", "e", "--store", store]) == 1
    out, err = capsys.readouterr()
    assert "resumed e: 6/6 already stored, 0 played now" in out and "--retry-errors" in err
