"""The viewer renders a comparison's stored result; it computes only what was not stored."""

from __future__ import annotations

import contextlib
import io
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import evalband.analysis
import evalband.analysis._sequential
from evalband.cli import main
from evalband.run import run_panel
from evalband.store import open_store
from evalband.view import serve_in_background
from testkit import coin_panel

POLICY = "evalband.policies._builtin:zero_action"


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=120) as response:
        return response.status, response.read().decode()


def no_computing(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the viewer computed a comparison that is stored")


@pytest.mark.slow
def test_a_stored_result_is_rendered_and_a_recipe_is_computed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.sqlite"
    with open_store(path) as st:
        for run_id in ("a", "b"):
            run_panel(coin_panel(episodes=4), POLICY, st, run_id=run_id)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["compare", "a", "b", "--store", str(path), "--json"]) in (0, 3, 4, 5)
    with open_store(path) as st:
        (stored,) = st.comparisons()
        assert stored["has_result"] and stored["current"]
        recipe = st.record_comparison(["a", "b"], {"confidence": 0.9})  # no result stored
    with monkeypatch.context() as patch:
        for module in (evalband.analysis, evalband.analysis._sequential):
            for name in ("compare_many", "compare_sequential"):
                if hasattr(module, name):
                    patch.setattr(module, name, no_computing)
        with serve_in_background(path) as server:
            status, page = get(server.url + f"compare/{stored['comparison_id']}")
    assert status == 200 and "<svg" in page
    assert "computed from the stored episodes" not in page
    with serve_in_background(path) as server:
        status, page = get(server.url + f"compare/{recipe}")
    assert status == 200 and "computed from the stored episodes" in page
