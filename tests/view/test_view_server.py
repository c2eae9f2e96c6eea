"""The read-only viewer over HTTP (no browser): pages, JSON, 404s, live state, read-only."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import selectors
import signal
import subprocess
import sys
import types
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evalband.report
from evalband.episode import EpisodeRecord
from evalband.errors import InvalidParameterError, StoreError
from evalband.run import run_panel
from evalband.store import RunStore, open_store
from evalband.store._manifest import _example
from evalband.view import ViewServer, serve_in_background
from evalband.view._server import _host_of
from evalband.web._guard import is_loopback
from testkit import coin_panel

POLICY = "evalband.policies._builtin:zero_action"
OPTIONS_SEEN: list[tuple[float, bool]] = []


def get(url: str, *, headers: dict[str, str] | None = None,
        method: str = "GET") -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def get_json(url: str) -> Any:
    status, headers, body = get(url)
    assert headers["Content-Type"].startswith("application/json"), (status, body)
    return json.loads(body)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view") / "runs.sqlite"
    with open_store(path) as st:
        run_panel(coin_panel(episodes=6), POLICY, st, run_id="base")
        run_panel(coin_panel(episodes=6), POLICY, st, run_id="cand2")
        # a '/' in an id: refused since run ids are checked, but a store written before may
        # hold one, and the viewer must still escape it in its URLs
        with st.transaction() as conn:
            conn.execute("PRAGMA defer_foreign_keys = ON")
            conn.execute("UPDATE runs SET run_id = 'cand/2' WHERE run_id = 'cand2'")
            conn.execute("UPDATE episodes SET run_id = 'cand/2' WHERE run_id = 'cand2'")
        st.record_comparison(["base", "cand/2"])
    return path


@pytest.fixture
def fake_render(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Replace the report's gathering and rendering with cheap ones that record their calls."""
    calls: list[list[str]] = []

    def collect(sources: list[str], store: Any = None, *, confidence: float = 0.95,
                allow_panel_mismatch: bool = False, sequential: bool = False,
                effect: float | None = None, max_pairs: int | None = None,
                media_link: Any = None) -> Any:
        assert media_link is not None  # the viewer links clips from /media/
        calls.append(list(sources))
        OPTIONS_SEEN.append((confidence, allow_panel_mismatch))
        assert isinstance(store, RunStore) and store.read_only
        return types.SimpleNamespace(sources=list(sources), comparisons_from="computed")

    def render(data: Any) -> str:
        return ("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
                "content=\"default-src 'none'\"></head><body><h1>report of "
                f"{', '.join(data.sources)}</h1></body></html>")

    monkeypatch.setattr(evalband.report, "collect", collect)  # where the viewer looks them up
    monkeypatch.setattr("evalband.report._html.report_html", render)
    return calls


@pytest.fixture
def server(store_path: Path) -> Iterator[ViewServer]:
    with serve_in_background(store_path, poll_ms=100) as srv:
        yield srv


# -- pages ---------------------------------------------------------------------------------


def test_run_list_shows_every_run_and_comparison(store_path: Path, server: ViewServer) -> None:
    status, headers, page = get(server.url)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    with open_store(store_path) as st:
        runs = st.list_runs()
        comparison = st.comparisons()[0]
        for m in runs:
            successes = st.outcome_counts(m.run_id)["success"]
            assert f'href="/run/{m.run_id.replace("/", "%2F")}"' in page
            assert f">{st.count_episodes(m.run_id)}/{m.n_planned}<" in page
            assert f'data-sort="{successes}"' in page
    assert f'href="/compare/{comparison["comparison_id"]}"' in page
    assert "connect-src 'self'" in headers["Content-Security-Policy"]
    assert 'id="evalband-live"' in page  # the list follows the store


def test_api_runs_agrees_with_the_store(store_path: Path, server: ViewServer) -> None:
    rows = get_json(server.url + "api/runs")
    with open_store(store_path) as st:
        manifests = st.list_runs()
        assert [r["run_id"] for r in rows] == [m.run_id for m in manifests]
        for row, m in zip(rows, manifests, strict=True):
            counts = st.outcome_counts(m.run_id)
            assert row["outcomes"] == counts
            assert row["episodes"] == sum(counts.values()) == 12
            assert (row["n_planned"], row["status"], row["policy"]) == (m.n_planned, m.status,
                                                                         m.policy)
    progress = get_json(server.url + "api/runs/cand%2F2/progress")
    assert progress == rows[0]


def test_api_comparisons(server: ViewServer) -> None:
    (row,) = get_json(server.url + "api/comparisons")
    assert row["run_ids"] == ["base", "cand/2"]
    assert row["policies"] == [POLICY, POLICY]
    assert row["status"] == "finished"


def test_run_and_comparison_pages_render_the_report(
    server: ViewServer, fake_render: list[list[str]]
) -> None:
    status, _, page = get(server.url + "run/cand%2F2")
    assert status == 200 and "<h1>report of cand/2</h1>" in page
    assert 'href="/"' in page  # the way back to the list
    assert 'id="evalband-live"' not in page  # finished: nothing to follow
    assert "connect-src &#x27;self&#x27;" in page  # the report's own CSP lets it poll
    (comparison,) = get_json(server.url + "api/comparisons")
    status, _, page = get(server.url + comparison["url"].lstrip("/"))
    assert status == 200 and "<h1>report of base, cand/2</h1>" in page
    assert fake_render == [["cand/2"], ["base", "cand/2"]]


def test_a_finished_report_is_rendered_once(server: ViewServer,
                                            fake_render: list[list[str]]) -> None:
    for _ in range(3):
        assert get(server.url + "run/base")[0] == 200
    assert fake_render == [["base"]]


def test_real_report_page(server: ViewServer) -> None:
    status, _, page = get(server.url + "run/base")
    assert status == 200
    assert '<table class="sortable' in page and "<svg" in page
    assert page.count("<body") == 1 and page.index("all runs") < page.index("<svg")


@pytest.mark.parametrize(
    "path", ["run/nope", "compare/cmp-000000000000", "nothing/here", "run/base/extra"]
)
def test_unknown_pages_are_404_pages(server: ViewServer, path: str) -> None:
    status, headers, page = get(server.url + path)
    assert status == 404
    assert headers["Content-Type"].startswith("text/html")
    assert "404 Not Found" in page and 'href="/"' in page


def test_unknown_api_answers_404_json(server: ViewServer) -> None:
    for path in ("api/runs/nope/progress", "api/nothing"):
        status, headers, body = get(server.url + path)
        assert status == 404 and "error" in json.loads(body)


def test_only_get_and_head(server: ViewServer) -> None:
    for method in ("POST", "PUT", "DELETE"):
        status, headers, _ = get(server.url, method=method)
        assert status == 405 and headers["Allow"] == "GET, HEAD"
    status, headers, body = get(server.url + "api/runs", method="HEAD")
    assert status == 200 and body == "" and int(headers["Content-Length"]) > 0


def test_other_host_headers_are_refused(server: ViewServer) -> None:
    assert get(server.url, headers={"Host": "evil.example:80"})[0] == 403
    assert get(server.url, headers={"Host": f"localhost:{server.port}"})[0] == 200
    assert get(server.url, headers={"Host": "[::1]"})[0] == 200


def test_serving_never_writes_the_store(store_path: Path, fake_render: list[list[str]]) -> None:
    before = digest(store_path)
    with serve_in_background(store_path) as srv:
        for path in ("", "api/runs", "api/comparisons", "api/state", "run/base", "run/nope"):
            get(srv.url + path)
    assert digest(store_path) == before


# -- live updates --------------------------------------------------------------------------


def record(run_id: str, episode: int) -> EpisodeRecord:
    return EpisodeRecord(
        run_id=run_id, policy="expert", panel_fingerprint="abc", cell="mass=light",
        slices={"mass": "light"}, episode=episode, repeat=0, condition_seed=episode,
        outcome="success", terminated=True, truncated=False, steps=3)


def test_a_running_run_is_followed_while_the_writer_writes(
    tmp_path: Path, fake_render: list[list[str]]
) -> None:
    path = tmp_path / "live.sqlite"
    with open_store(path) as writer:
        writer.create_run(_example().replace(n_planned=3))  # status running, no episodes
        with serve_in_background(path, poll_ms=100) as srv:
            status, _, page = get(srv.url + "run/r1")
            assert status == 200 and "No episodes stored yet" in page
            assert 'id="evalband-live"' in page and 'data-poll-ms="100"' in page
            state_url = srv.url + "api/state?runs=r1"
            first = get_json(state_url)
            assert first["state"].startswith("r1=running:0:") and first["running"] is True
            writer.add_episode(record("r1", 0))  # the viewer holds no lock: this returns
            second = get_json(state_url)
            assert second["state"] != first["state"] and second["running"]
            assert get_json(srv.url + "api/runs/r1/progress")["episodes"] == 1
            page = get(srv.url + "run/r1")[2]
            assert "report of r1" in page and 'id="evalband-live"' in page
            writer.update_run("r1", status="finished")
            third = get_json(state_url)
            assert not third["running"] and third["state"] != second["state"]
            assert 'id="evalband-live"' not in get(srv.url + "run/r1")[2]
            assert get_json(srv.url + "api/state")["state"] == third["state"]
            # A manifest edit that keeps the status and the episode count re-renders too.
            writer.update_run("r1", extra={"note": "re-scored"})
            fourth = get_json(state_url)
            assert fourth["state"] != third["state"]
            get(srv.url + "run/r1")
            get(srv.url + "run/r1")  # unchanged since: served from the cache
    assert fake_render == [["r1"], ["r1"], ["r1"]]


def test_recorded_options_reach_the_renderer_or_are_named(
    tmp_path: Path, fake_render: list[list[str]]
) -> None:
    path = tmp_path / "options.sqlite"
    with open_store(path) as st:
        run_panel(coin_panel(episodes=2), POLICY, st, run_id="a")
        run_panel(coin_panel(episodes=2), POLICY, st, run_id="b")
        cid = st.record_comparison(["a", "b"], {"confidence": 0.8, "allow_panel_mismatch": True})
        newer = st.record_comparison(["a", "b"], {"confidence": 0.9, "future_option": 3})
    OPTIONS_SEEN.clear()
    with serve_in_background(path) as srv:
        status, _, page = get(srv.url + f"compare/{cid}")
        assert status == 200 and OPTIONS_SEEN == [(0.8, True)]  # both reach the renderer
        assert "this report uses the defaults" not in page
        # an option this version's renderer does not take is named on the page
        status, _, page = get(srv.url + f"compare/{newer}")
    assert status == 200 and OPTIONS_SEEN == [(0.8, True), (0.9, False)]
    assert "recorded with future_option 3; this report uses the defaults" in page


@pytest.fixture(scope="module")
def mismatch_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Runs of two different panels, compared with and without --allow-panel-mismatch."""
    path = tmp_path_factory.mktemp("mismatch") / "mismatch.sqlite"
    with open_store(path) as st:
        run_panel(coin_panel(episodes=2), POLICY, st, run_id="a")
        run_panel(coin_panel(episodes=2, seed=99), POLICY, st, run_id="b")
        allowed = st.record_comparison(["a", "b"], {"allow_panel_mismatch": True})
        refused = st.record_comparison(["a", "b"])
    return path, allowed, refused


def test_a_comparison_recorded_with_allow_panel_mismatch_renders(
    mismatch_store: tuple[Path, str, str]
) -> None:
    path, allowed, _ = mismatch_store
    with serve_in_background(path) as srv:
        status, _, page = get(srv.url + f"compare/{allowed}")
    assert status == 200 and "PANEL MISMATCH" in page  # the real renderer, said in red
    assert "this report uses the defaults" not in page


def test_unrenderable_comparison_is_a_422_page(mismatch_store: tuple[Path, str, str]) -> None:
    path, _, refused = mismatch_store
    with serve_in_background(path) as srv:
        status, _, page = get(srv.url + f"compare/{refused}")
    assert status == 422 and "cannot render this report" in page and "panel" in page


# -- the server object and the command -----------------------------------------------------


def test_server_refuses_a_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no run store"):
        ViewServer(tmp_path / "none.sqlite", port=0)
    assert not (tmp_path / "none.sqlite").exists()


@pytest.mark.parametrize("kwargs", [{"port": -1}, {"port": 70000}, {"host": " "},
                                    {"port": 0, "poll_ms": 1}])
def test_server_refuses_bad_parameters(store_path: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameterError):
        ViewServer(store_path, **kwargs)


def test_a_port_in_use_is_a_clear_error(store_path: Path, server: ViewServer) -> None:
    with pytest.raises(InvalidParameterError, match=f"port {server.port}.*`port` 0"):
        ViewServer(store_path, port=server.port)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.0.1", True), ("localhost", True), ("::1", True),
     ("[::1]", True), ("0.0.0.0", False), ("192.168.1.4", False), ("example.com", False)],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(("header", "host"), [("localhost:8765", "localhost"),
                                              ("[::1]:80", "::1"), ("127.0.0.1", "127.0.0.1")])
def test_host_of(header: str, host: str) -> None:
    assert _host_of(header) == host


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The first line the process prints on stdout, or a clear failure after ``timeout`` s."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            pytest.fail(f"`evalband view` printed nothing on stdout within {timeout} s "
                        f"(exit status {proc.poll()})")
    return proc.stdout.readline()


def test_view_command_serves_and_stops_cleanly_on_ctrl_c(store_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalband.cli", "view", "--store", str(store_path), "--port",
         "0", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        info = json.loads(_first_line(proc, timeout=30))
        assert info["host"] == "127.0.0.1" and info["port"] > 0
        assert [r["run_id"] for r in get_json(info["url"] + "api/runs")] == ["cand/2", "base"]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and err == ""
    with pytest.raises((ConnectionError, http.client.HTTPException, urllib.error.URLError)):
        urllib.request.urlopen(info["url"], timeout=5)


def test_view_stops_on_ctrl_c_even_when_started_with_sigint_ignored(store_path: Path) -> None:
    """A parent that ignores SIGINT (a job runner) passes that on; Ctrl-C still stops it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalband.cli", "view", "--store", str(store_path), "--port",
         "0", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        json.loads(_first_line(proc, timeout=30))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err


def test_view_command_missing_store_is_one_line_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "evalband.cli", "view", "--store", str(tmp_path / "x.sqlite")],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: there is no run store at ")
    assert proc.stderr.count("\n") == 1
