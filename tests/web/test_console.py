"""The console over HTTP and WebSocket (no browser): access, one source of truth, the overlay.

A blinded 2-policy sim-arm session (virtual clock) served in-process by the one web server;
what each test checks is what reached the store, the answers' status codes and the frames.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from consolekit import SECRETS, Running, plan, serving
from evalband.envs.sim_arm import block_pixels
from evalband.session import SessionStore
from evalband.web._frames import alignment, read_frame_message

ROUTES = [("GET", "/"), ("GET", "/console.js"), ("GET", "/console.css"), ("GET", "/api/state"),
          ("GET", "/api/reference/1"), ("POST", "/api/act"), ("GET", "/nothing")]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    store = tmp_path_factory.mktemp("console") / "s.sqlite"
    plan(store, "c1")
    with serving(store, "c1") as r:
        yield r


def wait_phase(r: Running, *phases: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snap = r.console.snapshot
        if snap["state"]["phase"] in phases and not snap["busy"]:
            return snap
        time.sleep(0.01)
    raise AssertionError(f"never reached {phases}: {r.console.snapshot['state']}")


def play(r: Running) -> dict[str, Any]:
    """Stage and run the present trial; the snapshot once it waits for its score."""
    assert r.act("next")[0] == 200
    wait_phase(r, "ready")
    assert r.act("next")[0] == 200
    return wait_phase(r, "scoring")


def ws(r: Running, **kwargs: Any) -> ClientConnection:
    return connect(r.ws_url(), origin=r.origin, open_timeout=30,  # type: ignore[arg-type]
                   **kwargs)


# -- access --------------------------------------------------------------------------------


def test_every_route_and_the_websocket_refuse_a_missing_or_wrong_token(running: Running) -> None:
    before = running.store.records("c1")
    for method, path in ROUTES:
        body = {"action": "skip"} if method == "POST" else None
        status, _, answer = running.request(method, path, body, token=False)
        assert status == 401, (method, path, answer)
        status, _, _ = running.request(method, path, body, token=False,
                                       headers={"X-Evalband-Token": "x" * 43})
        assert status == 403, (method, path)
        status, _, _ = running.request(method, path + "?token=wrong", body, token=False)
        assert status == 403, (method, path)
    for url in (running.ws_url(token=False), running.ws_url(token=False) + "?token=wrong"):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, origin=running.origin, open_timeout=30)  # type: ignore[arg-type]
        assert refused.value.response.status_code == 403
    assert running.store.records("c1") == before  # nothing was done


def test_with_the_token_the_page_opens_and_sets_its_cookie(running: Running) -> None:
    status, headers, page = running.request("GET", "/?token=" + str(running.token),
                                            token=False)
    assert status == 200 and b'<script src="/console.js"' in page
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    name, value = cookie.split(";", 1)[0].split("=", 1)
    status, _, _ = running.request("GET", "/api/state", token=False,
                                   headers={"Cookie": f"{name}={value}"})
    assert status == 200


def test_state_changes_need_the_same_origin_and_a_loopback_host(running: Running) -> None:
    before = running.state()
    for origin in ("http://evil.example", ""):
        status, _, _ = running.request("POST", "/api/act",
                                       {"action": "assist", "rev": before["rev"]},
                                       headers={"Origin": origin})
        assert status == 403, origin
    with pytest.raises(InvalidStatus):
        connect(running.ws_url(), origin="http://evil.example",  # type: ignore[arg-type]
                open_timeout=30)
    status, _, _ = running.request("GET", "/api/state", headers={"Host": "evil.example"})
    assert status == 403  # DNS rebinding
    assert running.state() == before  # nothing was toggled


def test_no_token_is_refused_off_loopback_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "c1")
    done = subprocess.run(
        [sys.executable, "-m", "evalband.cli", "session", "run", "c1", "--robot", "sim-arm",
         "--console", "--host", "0.0.0.0", "--no-token", "--store", str(store)],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--no-token" in done.stderr
    assert "loopback" in done.stderr
    with SessionStore(store, read_only=True) as ss:
        assert ss.counts("c1")["pending"] == 6 * 2  # nothing started


# -- one source of truth -------------------------------------------------------------------


def test_two_pages_never_score_one_trial_twice_and_undo_is_one_step(running: Running) -> None:
    snap = play(running)
    trial, rev = snap["state"]["trial"], snap["rev"]
    status, first = running.act("confirm", rev=rev, score=1)  # page A
    assert status == 200 and first["state"]["state"]["trial"] != trial
    status, second = running.act("confirm", rev=rev, score=2)  # page B, on the old revision
    assert status == 409 and "another screen" in second["error"]
    assert second["state"]["rev"] == first["state"]["rev"]  # B is shown the present state
    (record,) = [r for r in running.store.records("c1") if r.trial_index == trial]
    assert record.score == 1 and record.play["operator"] == "human"
    # the confirmed score was durable before the answer: a second connection reads it
    with SessionStore(running.store.path, read_only=True) as other:
        assert [r.score for r in other.records("c1") if r.trial_index == trial] == [1]
    # two undo taps on one revision undo one trial
    rev = running.state()["rev"]
    assert running.act("undo", rev=rev)[0] == 200
    assert running.act("undo", rev=rev)[0] == 409
    state = running.state()["state"]
    assert (state["trial"], state["phase"], state["chosen"]) == (trial, "scoring", 1)
    assert trial not in [r.trial_index for r in running.store.records("c1")]
    assert running.act("confirm", score=1)[0] == 200
    # events in the wrong phase are refused with the machine's one line
    status, answer = running.act("score", score=2)
    assert status == 409 and "scoring" in answer["error"]


def test_the_terminal_drives_the_same_session_on_its_own_revision(running: Running) -> None:
    from evalband.cli._console import terminal_key

    c = running.console
    trial = c.snapshot["state"]["trial"]
    assert terminal_key(c, "\n", c.snapshot["rev"]) is None  # Enter: stage
    wait_phase(running, "ready")
    assert terminal_key(c, "\n", c.snapshot["rev"]) is None  # Enter: start the policy
    wait_phase(running, "scoring")
    stale = c.snapshot["rev"]
    assert terminal_key(c, "0", stale) is None
    assert terminal_key(c, "a", c.snapshot["rev"]) is None
    assert "another screen" in str(terminal_key(c, "\n", stale))  # shown an older state
    assert terminal_key(c, "n slipped at the lift", c.snapshot["rev"]) is None
    assert terminal_key(c, "\n", c.snapshot["rev"]) is None  # Enter: confirm the chosen 0
    (rec,) = [r for r in running.store.records("c1") if r.trial_index == trial]
    assert (rec.score, rec.assisted, rec.note) == (0, True, "slipped at the lift")
    assert terminal_key(c, "q", None) == "quit"
    assert "does nothing" in str(terminal_key(c, "z", None))


def test_abort_stops_a_moving_trial_at_once_and_it_is_replayed(running: Running) -> None:
    assert running.act("next")[0] == 200
    wait_phase(running, "ready")
    with ws(running) as socket:  # a page watching: the answer arrives as the robot starts
        assert running.act("next")[0] == 200
        status, answer = running.act("abort", rev=0)  # no revision check for the stop
        assert status == 200
        snap = wait_phase(running, "aborted")
        assert "aborted by the operator" in snap["state"]["message"]
        phases = []
        while "aborted" not in phases:  # the page was told, over its socket
            message = socket.recv(timeout=10)
            if isinstance(message, str):
                phases.append(json.loads(message)["state"]["phase"])
    assert set(phases) & {"running", "stress", "returning"} or phases == ["aborted"]
    snap = play(running)  # replayed from the start
    assert running.act("confirm", rev=snap["rev"], score=0)[0] == 200


def test_no_policy_name_reaches_the_page_its_api_or_its_socket(running: Running) -> None:
    seen: list[bytes] = []
    for path in ("/", "/console.js", "/console.css", "/api/state"):
        seen.append(running.request("GET", path)[2])
    with ws(running) as socket:
        for _ in range(6):
            message = socket.recv(timeout=10)
            if isinstance(message, bytes):
                socket.send(json.dumps({"type": "drawn",
                                        "seq": read_frame_message(message)[0]["seq"]}))
            seen.append(message if isinstance(message, bytes) else message.encode())
    status, answer = running.act("score", score=9)  # an error message too
    seen.append(json.dumps(answer).encode())
    everything = b"\n".join(seen)
    for secret in SECRETS:
        assert secret.encode() not in everything, secret
    assert running.state()["state"]["label"].startswith("P-")  # codes


def test_a_rehearsal_plays_and_accepts_every_suggestion_while_pages_watch(
        tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "r1", scenes=1, attempts=1, stress=None)
    with serving(store, "r1", operator="suggested") as r:
        snap = wait_phase(r, "finished")
        assert snap["session"]["operator"] == "suggested"
        records = r.store.records("r1")
    assert len(records) == 2 and all(rec.play["operator"] == "suggested" for rec in records)
    assert all(rec.score == rec.play["suggestion"] for rec in records)


def test_a_blinded_policy_name_in_any_text_is_replaced_by_its_code(running: Running) -> None:
    plan_ = running.console.plan
    codes = {name: plan_.label(name) for name in plan_.policies}
    text = {"message": "GN_s1000 failed; sim-arm:weak too", "list": ["PT_fullLR"], "n": 3}
    assert running.console._scrub(text) == {
        "message": f"{codes['GN_s1000']} failed; {codes['PT_fullLR']} too",
        "list": [codes["PT_fullLR"]], "n": 3}


# -- the camera and the ghost overlay ------------------------------------------------------


def next_frame(socket: ClientConnection, after: int) -> dict[str, Any]:
    """The header of the first frame newer than ``after`` (acknowledging each frame)."""
    while True:
        message = socket.recv(timeout=30)
        if isinstance(message, str):
            continue
        header, jpeg = read_frame_message(message)
        socket.send(json.dumps({"type": "drawn", "seq": header["seq"]}))
        assert jpeg[:2] == b"\xff\xd8"
        if header["seq"] > after:
            return header


def test_the_alignment_number_falls_as_the_block_is_moved_onto_its_reference(
        tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "o1", scenes=1, attempts=2)
    with serving(store, "o1") as r:
        snap = play(r)  # the scene's seeding rollout: its start state captured
        assert snap["state"]["captured"] and snap["reference"]
        assert r.act("confirm", score=2)[0] == 200
        assert r.act("next")[0] == 200  # the next trial: arm at the captured pose
        snap = wait_phase(r, "ready")
        assert snap["state"]["start"] == "replaced"
        status, headers, png = r.request("GET", snap["reference"])
        assert status == 200 and png[:4] == b"\x89PNG"
        # the operator draws a region around the block on the reference, once for the scene
        reference = r.console._reference_array(1)
        assert reference is not None
        rows, cols = np.nonzero(block_pixels(reference))
        h, w = reference.shape[:2]
        region = [max(0.0, (cols.min() - 12) / w), max(0.0, (rows.min() - 25) / h),
                  min(1.0, (cols.max() + 12) / w), min(1.0, (rows.max() + 12) / h)]
        assert r.act("region", scene=1, region=region)[0] == 200
        assert r.state()["region"] == pytest.approx(region)
        with SessionStore(store, read_only=True) as other:  # stored with the scene's capture
            assert other.runs.conn.execute("SELECT capture FROM session_scenes").fetchone()
        with ws(r) as socket:
            next_frame(socket, 0)
            numbers = []
            for step in (16.0, -4.0, -4.0, -4.0, -4.0):  # pushed out, slid back in steps
                # moved while the worker cannot be reading the camera (it reads it holding the
                # machine's lock), and the clock past the camera's 40 ms lag
                with r.console.machine._lock:
                    r.robot.move_block(dx_mm=step)
                    r.clock.advance(0.1)
                # a frame the worker was taking meanwhile may get the next number with the
                # old scene in it; the one after it was read after the move
                numbers.append(next_frame(socket, r.console.frame_seq + 1)["alignment"])
        assert all(a > b for a, b in zip(numbers, numbers[1:], strict=False)), numbers
        assert numbers[-1] < numbers[0] / 3


def test_alignment_is_the_mean_absolute_difference_inside_the_region() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    b = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    total, count = 0, 0
    for y in range(30):  # brute force: every pixel the region (x 0.25-0.5, y 0.1-0.9) touches
        for x in range(40):
            if 10 <= x < 20 and 3 <= y < 27:
                for c in range(3):
                    total += abs(int(a[y, x, c]) - int(b[y, x, c]))
                    count += 1
    assert alignment(a, b, (0.25, 0.1, 0.5, 0.9)) == pytest.approx(total / count)
    assert alignment(a, a) == 0.0
    assert alignment(a, b[:20]) is None  # another camera size: no number


def test_frames_are_bounded_in_rate_and_size(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    plan(store, "f1", scenes=1, attempts=1)
    with serving(store, "f1", fps=10.0) as r:
        r.console.max_width = 64
        with ws(r) as socket:
            # the rate is the console's own: frames counted by their sequence numbers over
            # the times the console took them (each header's "t"), not over the time this
            # test took to receive them (a loaded machine delays a frame's arrival, and a
            # late first arrival would shorten the window while the frames after it kept on)
            first = next_frame(socket, 0)
            last = first
            while last["t"] - first["t"] < 2.0:
                last = next_frame(socket, last["seq"])
                assert last["w"] <= 64
        taken = last["seq"] - first["seq"]
        assert taken / (last["t"] - first["t"]) <= 10.0 * 1.1, (taken, last["t"] - first["t"])


# -- the command ---------------------------------------------------------------------------


def _qr_text(lines: list[str]) -> str | None:
    """Decode a QR code printed with half blocks (OpenCV's detector as the oracle)."""
    import cv2  # gym-pusht (the dev install) brings OpenCV: an independent QR reader
    rows: list[list[int]] = []
    for line in lines:
        top, bottom = [], []
        for ch in line:
            top.append(255 if ch in "█▀" else 0)
            bottom.append(255 if ch in "█▄" else 0)
        rows += [top, bottom]
    width = max(len(r) for r in rows)
    image = np.array([r + [255] * (width - len(r)) for r in rows], dtype=np.uint8)
    image = np.kron(image, np.ones((8, 8), dtype=np.uint8))
    image = np.pad(image, 40, constant_values=255)
    # OpenCV's classic detector misses about 1 code in 30 of these (random tokens); its ArUco
    # based detector read 200 of 200: both are tried
    for detector in (cv2.QRCodeDetectorAruco(), cv2.QRCodeDetector()):
        for candidate in (image, 255 - image):
            text, _, _ = detector.detectAndDecode(candidate)
            if text:
                return str(text)
    return None


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_the_command_prints_its_url_and_qr_code_serves_and_stops_on_ctrl_c(
        tmp_path: Path, inherited: str) -> None:
    """Ctrl-C stops it, also when its parent ignores SIGINT (a job runner, a test worker
    after some test: the child inherits it, and Python then leaves it ignored)."""
    store = tmp_path / "s.sqlite"
    plan(store, "c1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalband.cli", "session", "run", "c1", "--robot", "sim-arm",
         "--clock", "virtual", "--console", "--port", "0", "--store", str(store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        if inherited == "ignored" else None)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        while not any(line.startswith("the page drives") for line in lines):
            line = proc.stdout.readline()
            assert line, f"the command ended: {proc.stderr.read() if proc.stderr else ''}"
            lines.append(line.rstrip("\n"))
        (url,) = [x.split(": ", 1)[1] for x in lines if x.startswith("console: ")]
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        token = url.split("?token=", 1)[1]
        assert len(token) >= 40
        qr = [x for x in lines if x and set(x) <= set("█▀▄ ")]
        assert len(qr) > 10 and _qr_text(qr) == url
        import urllib.request

        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # still running a minute after Ctrl-C: SIGABRT makes faulthandler print every
            # thread's stack, so the failure says where it waits
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"no exit within 60 s of Ctrl-C; its threads:\n{err[-8000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    for secret in SECRETS:
        assert secret not in "\n".join(lines) + out
