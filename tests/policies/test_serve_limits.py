"""``serve`` and the ``ws://`` client bound what they take: frames, queued requests; a bad
client is closed without stalling another; a malformed request gets an error frame
(issue 33, item 24)."""

from __future__ import annotations

import struct
import time
from typing import Any

import numpy as np
import pytest

from evalband.episode import Outcome
from evalband.panel import load_panel
from evalband.policies import PolicyServer
from evalband.policies.remote import RemotePolicy
from evalband.run import run_panel

websockets = pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402

from evalband.policies._wire import packb  # noqa: E402


@pytest.fixture
def server() -> Any:
    served = PolicyServer(lambda obs: -np.asarray(obs), name="neg", port=0,
                          max_frame_bytes=1024**2)
    port = served.start_in_thread()
    yield served, f"ws://127.0.0.1:{port}"
    served.stop()


def test_an_announced_huge_frame_closes_that_client_and_no_other_waits(server: Any) -> None:
    _, url = server
    good = RemotePolicy.from_url(url + "?timeout=5&retries=0")
    good.setup()
    with connect(url, max_size=None) as bad:
        bad.recv(timeout=5)  # the metadata
        # a binary frame announcing 1 GiB (masked, as a client's must be), and 16 bytes of it
        bad.socket.sendall(b"\x82\xff" + struct.pack("!Q", 1 << 30) + b"mask" + b"x" * 16)
        started = time.monotonic()
        assert good.act(np.ones(2)).tolist() == [-1.0, -1.0]
        answered = time.monotonic() - started
        with pytest.raises(websockets.exceptions.ConnectionClosed) as info:
            bad.recv(timeout=5)
    assert answered < 1.0
    assert info.value.rcvd is not None and info.value.rcvd.code == 1009  # message too big
    good.close()


def _slow(obs: Any) -> Any:
    time.sleep(0.05)  # on the inference thread: requests queue meanwhile
    return -np.asarray(obs)


def test_a_flood_of_requests_is_refused_with_an_error_frame() -> None:
    slow = PolicyServer(_slow, name="slow", port=0)
    url = f"ws://127.0.0.1:{slow.start_in_thread()}"
    with connect(url, max_size=None) as flood:
        flood.recv(timeout=5)
        for _ in range(200):  # never waits for an answer
            flood.send(packb({"state": np.ones(2)}))
        replies = []
        with pytest.raises(websockets.exceptions.ConnectionClosed):
            while True:
                replies.append(flood.recv(timeout=5))
    slow.stop()
    text = [r for r in replies if isinstance(r, str)]
    assert text and "too many requests queued" in text[-1]
    assert len(replies) < 200


def test_a_malformed_request_gets_an_error_frame(server: Any) -> None:
    _, url = server
    with connect(url, max_size=None) as client:
        client.recv(timeout=5)
        client.send(b"\xc1 not msgpack")
        reply = client.recv(timeout=5)
    assert isinstance(reply, str) and reply.strip()


def test_the_client_refuses_an_answer_over_its_limit(store: Any) -> None:
    big = PolicyServer(lambda obs: np.zeros((2, 300_000)), name="big", port=0)
    port = big.start_in_thread()
    try:
        url = f"ws://127.0.0.1:{port}?timeout=5&retries=0&max_frame_mb=1"
        panel = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 1,
                            "budget": {"steps": 2}})
        run_panel(panel, url, store, run_id="big")
    finally:
        big.stop()
    (record,) = store.episode_records("big")
    assert record.outcome is Outcome.ERROR and "too big" in (record.error or "")
