"""The viewer lists hardware sessions and renders their stored analysis (never computes one)."""

from __future__ import annotations

import contextlib
import io
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import evalband.session
import evalband.session._analyze
from evalband.cli import main
from evalband.session import SessionStore, plan_session, simulate_session
from evalband.view import serve_in_background


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _store(path: Path, sid: str, *, blind: bool = False, upto: int | None = None) -> None:
    plan = plan_session(["A", "B/2"], scenes=4, attempts=2, seed=3, session_id=sid, blind=blind)
    trials = simulate_session(plan, success_prob={"A": 0.8, "B/2": 0.3}, seed=4)
    with SessionStore(path) as ss:
        if sid not in ss.session_ids():
            ss.create(plan)
        for row in trials.itertuples():
            if upto is not None and row.trial_index >= upto:
                break
            ss.record(sid, int(row.trial_index), score=int(row.score))


def no_computing(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the viewer computed a session analysis")


def test_sessions_are_listed_with_their_runs_and_stored_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.sqlite"
    _store(path, "done")
    _store(path, "later", upto=5)
    _store(path, "blinded", blind=True, upto=3)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["session", "analyze", "done", "--store", str(path), "--json"]) == 0
        assert main(["session", "analyze", "blinded", "--unblind", "--store", str(path),
                     "--json"]) == 0
    for module in (evalband.session, evalband.session._analyze):
        monkeypatch.setattr(module, "analyze_session", no_computing)
    with serve_in_background(path) as server:
        status, index = get(server.url)
        _, api = get(server.url + "api/sessions")
        _, done = get(server.url + "session/done")
        _, later = get(server.url + "session/later")
        _, blinded = get(server.url + "session/blinded")
        missing, _ = get(server.url + "session/nope")
        _, run_page = get(server.url + "run/done%3AB_2")
        _, episodes = get(server.url + "run/done%3AB_2/episodes")
    assert status == 200 and 'id="sessions"' in index
    assert index.index('href="/session/done"') > 0 and 'href="/run/done%3AB_2"' in index
    rows = {r["session_id"]: r for r in json.loads(api)}
    assert {k: rows[k]["analysis"]["status"] for k in rows} == {
        "done": "current", "later": "none", "blinded": "current"}
    assert rows["later"]["scored"] == 5 and rows["done"]["pending"] == 0
    assert [p["run_id"] for p in rows["done"]["policies"]] == ["done:A", "done:B_2"]
    assert "stored analysis computed" in done and "1. Flip floor" in done and "<svg" in done
    assert "not analyzed yet" in later and "Flip floor" not in later
    assert "no per-policy result" in blinded and "Flip floor" not in blinded
    coded = [p["run_id"] for p in rows["blinded"]["policies"]]  # runs named by blind code
    codes = [p["code"] for p in rows["blinded"]["policies"]]
    assert coded == [f"blinded:{c}" for c in codes] and codes == sorted(codes)
    assert "B/2" not in blinded and "B_2" not in blinded and "blinded:B" not in index
    assert missing == 404
    assert "B/2" in run_page and "scene=1" in episodes  # a session run is a run


def test_an_analysis_whose_trials_changed_says_so(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _store(path, "g")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["session", "analyze", "g", "--store", str(path), "--json"]) == 0
    with SessionStore(path) as ss:
        ss.undo_last("g")
    with serve_in_background(path) as server:
        _, page = get(server.url + "session/g")
    assert "trials changed since" in page and "1. Flip floor" in page
