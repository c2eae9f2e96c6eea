"""The viewer's live comparison (a run still running) is the anytime-valid one."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from evalband.labs.hidden_regression import simulate_hidden_regression
from evalband.store import open_store
from evalband.view import serve_in_background


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=120) as response:
        return str(response.read().decode())


def test_live_comparison_uses_the_sequential_verdict(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with open_store(db) as st:
        base, cand = simulate_hidden_regression(st, episodes=20)
        st.record_comparison([base, cand])
    with serve_in_background(db, poll_ms=100) as srv:
        (row,) = json.loads(_get(srv.url + "api/comparisons"))
        finished = _get(srv.url + row["url"].lstrip("/"))
        with open_store(db) as st:
            st.update_run(cand, status="running")  # episodes still arriving
        live = _get(srv.url + row["url"].lstrip("/"))
    assert "anytime-valid" not in finished and "Holm" in finished
    assert "anytime-valid" in live


def test_partial_run_is_compared_with_the_sequential_verdict(tmp_path: Path) -> None:
    """A run that stopped short of its plan (finished, killed or decided early) is read with the
    anytime-valid verdict too; the same run at its planned size gets the fixed-n one."""
    db = tmp_path / "s.sqlite"
    with open_store(db) as st:
        base, cand = simulate_hidden_regression(st, episodes=20)
        st.record_comparison([base, cand])
        planned = st.require_run(cand).n_planned
    with serve_in_background(db, poll_ms=100) as srv:
        (row,) = json.loads(_get(srv.url + "api/comparisons"))
        whole = _get(srv.url + row["url"].lstrip("/"))
        with open_store(db) as st:
            st.update_run(cand, n_planned=planned + 30, status="finished")
        partial = _get(srv.url + row["url"].lstrip("/"))
    assert "anytime-valid" not in whole
    assert "anytime-valid" in partial
