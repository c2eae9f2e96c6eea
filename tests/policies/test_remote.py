"""Remote policies: evalband's ws:// client and ``evalband serve`` against openpi's protocol.

Oracles, all independent of evalband's own wire code:
* the real ``openpi-client`` package: its ``msgpack_numpy`` frames, its ``BasePolicy`` served
  by a server written here after openpi's ``websocket_policy_server.py`` (metadata frame on
  connect, one msgpack-numpy frame per request and answer, ``server_timing``), and its
  ``WebsocketClientPolicy`` talking to ``evalband serve``;
* the same policy run locally (records equal field by field but for timing and ``extra``);
* the request count a correct replanning client must make: ``ceil(steps / K)`` per episode
  (a chunk leaking into the next episode, or no reset, changes it).
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from evalband.episode import Outcome
from evalband.errors import RunStoppedError
from evalband.panel import load_panel
from evalband.policies import EpisodeContext
from evalband.run import run_panel
from testkit import comparable, start_serve

openpi_client = pytest.importorskip("openpi_client")
websockets = pytest.importorskip("websockets")
from openpi_client import base_policy, msgpack_numpy  # noqa: E402
from openpi_client.websocket_client_policy import WebsocketClientPolicy  # noqa: E402

from evalband.policies._wire import packb, unpackb  # noqa: E402

HORIZON = 4


def _chunk(state: Any) -> np.ndarray:
    """HORIZON actions planned from one state: damped control, fading along the chunk."""
    x, v = float(state[0]), float(state[1])
    base = float(np.clip(-2.0 * x - 1.5 * v, -1.0, 1.0))
    return np.array([[base * (1.0 - 0.2 * k)] for k in range(HORIZON)])


class OpenpiChunkPolicy(base_policy.BasePolicy):  # type: ignore[misc]
    """An openpi policy: observation map in, ``{"actions": (H, A)}`` out; counts requests."""

    def __init__(self) -> None:
        self.requests = 0
        self.prompts: set[str] = set()

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        if "prompt" in obs:
            self.prompts.add(str(obs["prompt"]))
        return {"actions": _chunk(obs["state"])}


class LocalChunker:
    """The oracle: the same chunks, executed ``replan`` steps, per slot, reset per episode."""

    def __init__(self, replan: int) -> None:
        self.replan, self.queues = replan, {}  # type: dict[int, list[Any]]

    def reset(self, context: EpisodeContext) -> None:
        self.queues[context.slot] = []

    def act_batch(self, obs_batch: Any, slots: Any) -> Any:
        out = []
        for row, slot in zip(obs_batch, slots, strict=True):
            if not self.queues[slot]:
                self.queues[slot] = list(_chunk(row)[: self.replan])
            out.append(self.queues[slot].pop(0))
        return np.stack(out)


def _serve_openpi(policy: base_policy.BasePolicy) -> tuple[int, Any]:
    """A server after openpi's ``WebsocketPolicyServer`` (openpi-client's frames), in a thread."""
    from websockets.asyncio.server import serve

    async def handler(ws: Any) -> None:
        packer = msgpack_numpy.Packer()
        await ws.send(packer.pack({"server": "openpi-style"}))
        while True:
            try:
                obs = msgpack_numpy.unpackb(await ws.recv())
            except websockets.ConnectionClosed:
                return
            action = policy.infer(obs)
            action["server_timing"] = {"infer_ms": 0.5}
            await ws.send(packer.pack(action))

    ready, holder = threading.Event(), {}

    async def main() -> None:
        async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
            holder["port"] = next(iter(server.sockets)).getsockname()[1]
            holder["loop"], holder["stop"] = asyncio.get_running_loop(), asyncio.Event()
            ready.set()
            await holder["stop"].wait()

    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
    assert ready.wait(10)
    return holder["port"], lambda: holder["loop"].call_soon_threadsafe(holder["stop"].set)


def _panel(episodes: int = 12) -> Any:
    data = load_panel("reach1d").model_dump()
    data.update(episodes=episodes, factors={"goal": {"here": {"instruction": "reach zero"}}})
    return load_panel(data)


def _records(store: Any, run_id: str) -> list[dict[str, Any]]:
    drop = ("policy", "extra", "attempts")
    return [{k: v for k, v in comparable(r).items() if k not in drop}
            for r in store.episode_records(run_id)]


@pytest.fixture
def served() -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc, url = start_serve("reach1d:damped", "--port", "0", "--max-batch", "8")
    yield proc, url
    proc.kill()
    proc.wait()


# -- frames ----------------------------------------------------------------------------------


def test_frames_interoperate_with_openpi_client_both_ways() -> None:
    data = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "s": np.int16(-3), "t": "x",
            "nested": {"b": np.array([True, False])}}
    for there, back in ((packb, msgpack_numpy.unpackb), (msgpack_numpy.packb, unpackb)):
        out = back(there(data))
        assert out["a"].dtype == np.float32 and out["a"].tolist() == data["a"].tolist()
        assert out["s"].dtype == np.int16 and int(out["s"]) == -3 and out["t"] == "x"
        assert out["nested"]["b"].tolist() == [True, False]
    with pytest.raises(ValueError, match="dtype"):
        packb({"bad": np.array([object()])})


# -- evalband's client against an openpi server ------------------------------------------------


@pytest.mark.parametrize("replan", [1, 3])
def test_client_against_openpi_server_replans_and_resets(store, replan: int) -> None:
    policy = OpenpiChunkPolicy()
    port, stop = _serve_openpi(policy)
    try:
        panel = _panel()
        url = f"ws://127.0.0.1:{port}?replan={replan}"
        run_panel(panel, url, store, run_id="remote")
        run_panel(panel, LocalChunker(replan), store, run_id="local")
        local = _records(store, "local")
        assert _records(store, "remote") == local
        assert {r["outcome"] for r in local} != {"error"}
        assert policy.requests == sum(math.ceil(r["steps"] / replan) for r in local)
        assert policy.prompts == {"reach zero"}
        remote = store.episode_records("remote")
        assert remote[0].extra["server_infer_ms_p50"] == 0.5  # the server's own timing
        requests = policy.requests
        run_panel(panel, url, store, run_id="remote8", batch_size=8)  # 8 connections
        assert _records(store, "remote8") == local
        assert policy.requests - requests == requests
    finally:
        stop()


# -- openpi's client against evalband serve -------------------------------------------------


@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used:DeprecationWarning")
def test_openpi_client_against_evalband_serve(served) -> None:
    from evalband.policies.reach1d import damped

    proc, url = served
    host_port = url.removeprefix("ws://")
    with urllib.request.urlopen(f"http://{host_port}/healthz", timeout=5) as response:
        assert response.status == 200 and response.read() == b"OK\n"
    client = WebsocketClientPolicy(host="127.0.0.1", port=int(host_port.rsplit(":", 1)[1]))
    assert client.get_server_metadata()["policy"] == "reach1d:damped"
    obs = np.array([-0.4, 0.25])
    answer = client.infer({"state": obs})
    assert answer["actions"].tolist() == damped(obs).tolist()
    assert answer["server_timing"]["infer_ms"] >= 0
    with pytest.raises(RuntimeError, match="Error in inference server"):
        client.infer({"state": np.zeros(7)})  # the policy raises: a text frame, as openpi


def test_evalband_client_batches_through_evalband_serve(store, served) -> None:
    _, url = served
    panel = _panel(episodes=24)
    run_panel(panel, "reach1d:damped", store, run_id="local")
    run_panel(panel, url, store, run_id="remote", batch_size=8)
    assert _records(store, "remote") == _records(store, "local")
    with urllib.request.urlopen(f"http://{url.removeprefix('ws://')}/stats") as response:
        stats = json.loads(response.read())
    assert stats["mean_batch"] > 1.5  # requests of several clients combined


# -- a dead or hung server ------------------------------------------------------------------------


@pytest.mark.slow
def test_killed_server_gives_error_episodes_then_resume_completes(store) -> None:
    proc, url = start_serve("reach1d:damped", "--port", "0")  # the OS's free port, kept
    port = int(url.rsplit(":", 1)[1])  # for the restart (no port probed free, then taken)
    panel = _panel(episodes=16)
    policy = f"{url}?retries=1&connect_timeout=2"
    import threading

    def kill_mid_run() -> None:  # by the server's own request count (commits are grouped)
        stats_url = f"http://{url.removeprefix('ws://')}/stats"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(stats_url, timeout=2) as response:
                    if json.loads(response.read())["requests"] >= 120:
                        break
            except OSError:
                pass
            time.sleep(0.005)
        proc.kill()
        proc.wait()

    killer = threading.Thread(target=kill_mid_run, daemon=True)
    killer.start()
    try:
        with pytest.raises(RunStoppedError):  # three episodes in a row failed: stopped
            run_panel(panel, policy, store, run_id="r")
        killer.join()
        records = store.episode_records("r")
        errors = [r for r in records if r.outcome is Outcome.ERROR]
        assert store.get_run("r").status == "interrupted" and len(records) < 16
        assert len(errors) == 3 and all(r.outcome is Outcome.ERROR for r in records[-3:])
        assert all("policy server" in (r.error or "") for r in errors)
        proc, url = start_serve("reach1d:damped", "--port", str(port))
        run_panel(panel, policy, store, run_id="r", retry_errors=True)
        run_panel(panel, "reach1d:damped", store, run_id="local")
        assert _records(store, "r") == _records(store, "local")
        attempts = {(r.cell, r.episode): r.attempts for r in store.episode_records("r")}
        assert sorted(attempts[(r.cell, r.episode)] for r in errors) == [2] * len(errors)
    finally:
        proc.kill()
        proc.wait()


def test_hung_server_times_out_into_error_episodes(store) -> None:
    """A server that accepts and sends metadata but never answers: errors, not a hang."""
    from websockets.asyncio.server import serve

    ready, holder = threading.Event(), {}

    async def silent(ws: Any) -> None:
        await ws.send(packb({}))
        await asyncio.sleep(3600)

    async def main() -> None:
        async with serve(silent, "127.0.0.1", 0) as server:
            holder["port"] = next(iter(server.sockets)).getsockname()[1]
            ready.set()
            await asyncio.sleep(3600)

    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
    assert ready.wait(10)
    url = f"ws://127.0.0.1:{holder['port']}?timeout=0.2&retries=0"
    run_panel(_panel(episodes=2), url, store, run_id="hung")
    records = store.episode_records("hung")
    assert [r.outcome for r in records] == [Outcome.ERROR, Outcome.ERROR]
    assert all("did not answer in time" in (r.error or "") for r in records)


# -- evalband serve: per-client episode state, refusals ---------------------------------------


def test_served_stateful_policy_keeps_each_clients_episode_apart(store) -> None:
    """A per-slot chunking policy behind the server: the extension's resets keep clients apart."""
    from test_policy_contract import SharedChunker, SlotChunker, _panel

    from evalband.policies._server import PolicyServer

    server = PolicyServer(SlotChunker(), name="chunker", port=0, max_batch=8)
    port = server.start_in_thread()
    try:
        panel = _panel()
        run_panel(panel, SharedChunker(), store, run_id="local")
        run_panel(panel, f"ws://127.0.0.1:{port}?replan=1", store, run_id="served",
                  batch_size=6)
        assert _records(store, "served") == _records(store, "local")
        assert server.stats["requests"] / server.stats["batches"] > 1.5
    finally:
        server.stop()


def test_serve_refuses_a_policy_that_would_mix_clients() -> None:
    from test_policy_contract import SharedChunker

    from evalband.errors import InvalidParameterError
    from evalband.policies._server import PolicyServer

    with pytest.raises(InvalidParameterError, match="serving several clients"):
        PolicyServer(SharedChunker(), name="shared", port=0)


def test_bad_server_urls_are_refused_in_one_line() -> None:
    from evalband.cli import main
    from evalband.errors import InvalidParameterError
    from evalband.policies import resolve_policy

    for url in ("ws://host-without-port", "ws://h:1?replan=0", "ws://h:1?speed=3"):
        with pytest.raises(InvalidParameterError):
            resolve_policy(url)
    assert main(["run", "reach1d", "--policy", "ws://h:1?bogus=1"]) == 2
