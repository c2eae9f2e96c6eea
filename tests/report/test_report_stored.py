"""Reports render the stored comparison result: the same bytes as a fresh computation."""

from __future__ import annotations

import json

import pytest

from evalband._api import load_run
from evalband.analysis import compare_many
from evalband.report._data import collect
from evalband.report._document import comparison_documents
from evalband.report._html import report_html
from evalband.report._markdown import report_markdown
from evalband.store import RunStore


@pytest.mark.slow
@pytest.mark.parametrize("lab", ["reach", "hidden"])
def test_stored_and_fresh_results_render_the_same_bytes(labs, lab: str) -> None:
    runs = list(getattr(labs, lab))
    with RunStore(labs.store, read_only=True) as st:
        fresh = compare_many(load_run(runs[0], st), [load_run(runs[1], st)])
        stored = collect(runs, st, command="pytest")
        given = collect(runs, st, command="pytest", comparisons=fresh)
    assert stored.comparisons_from == "stored" and given.comparisons_from == "given"
    # every number of the stored result equals the fresh computation's --json
    assert json.dumps(comparison_documents(stored.comparisons), allow_nan=True) == json.dumps(
        comparison_documents(fresh), allow_nan=True)
    assert report_markdown(stored) == report_markdown(given)
    assert report_html(stored) == report_html(given)


def test_a_run_that_gained_episodes_makes_the_stored_result_stale(labs, tmp_path) -> None:
    import shutil

    from evalband.store._manifest import _example

    path = tmp_path / "copy.sqlite"
    shutil.copy(labs.store, path)
    runs = list(labs.hidden)
    with RunStore(path) as st:
        assert st.find_comparison_result(runs) is not None
        first = st.episode_records(runs[1])[0]
        st.create_run(_example().replace(run_id="other"))  # another run does not matter
        assert st.find_comparison_result(runs) is not None
        st.conn.execute("UPDATE episodes SET attempts = attempts + 1 WHERE run_id = ? AND "
                        "cell = ? AND episode = ?", (runs[1], first.cell, first.episode))
        assert st.find_comparison_result(runs) is None  # an episode was played again
        data = collect(runs, st)
    assert data.comparisons_from == "computed"


@pytest.mark.slow
def test_compare_with_report_computes_once(labs, tmp_path, monkeypatch) -> None:
    import shutil

    import evalband.analysis
    from evalband.cli import main

    path = tmp_path / "copy.sqlite"
    shutil.copy(labs.store, path)
    calls = []
    real = evalband.analysis.compare_many

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(evalband.analysis, "compare_many", counted)
    page = tmp_path / "r.html"
    code = main(["compare", *labs.hidden, "--store", str(path), "--report", str(page), "--json"])
    assert code == 4 and calls == [1]  # the report renders what compare computed
    assert "hidden regression" in page.read_text().lower()
