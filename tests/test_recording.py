"""``record_comparison``: the one compare-and-record path of ``evalband compare`` and the library.

The same runs compared from the command line and from Python leave the same record in the
store (options, episode counts, the stored result with its peeking notes), and both say the
same peeking notes; a bundle or a read-only store is compared but not recorded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main
from evalband.labs.hidden_regression import simulate_hidden_regression
from evalband.recording import record_comparison
from evalband.store import open_store


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    db = tmp_path_factory.mktemp("rec") / "runs.sqlite"
    with open_store(db) as st:
        base, cand = simulate_hidden_regression(st, episodes=60)
        # an earlier look at fewer episodes: a fixed-n verdict now peeks
        st.record_comparison([base, cand], {"episode_counts": {base: 20, cand: 20}})
    return db, base, cand


def _records(db: Path) -> list[dict[str, Any]]:
    with open_store(db, read_only=True) as st:
        out = []
        for c in st.comparisons():
            stored = st.comparison_result(c["comparison_id"])
            assert stored is not None
            out.append({"run_ids": c["run_ids"], "options": c["options"],
                        "result": stored.result, "counts": stored.episode_counts})
        return out


def test_cli_and_library_record_the_same_comparison(
        lab: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, base, cand = lab
    by_cli, by_api = tmp_path / "cli.sqlite", tmp_path / "api.sqlite"
    shutil.copy(db, by_cli)
    shutil.copy(db, by_api)
    code = main(["compare", base, cand, "--store", str(by_cli), "--json"])
    payload = json.loads(capsys.readouterr().out)
    done = record_comparison(by_api, base, [cand])
    assert done.recorded and code == done.comparisons[0].exit_code
    assert payload["peeking"] == list(done.notes)
    assert "already compared at fewer episodes" in done.notes[0]
    assert list(done.comparisons[0].peeking) == list(done.notes)  # carried by the result
    recorded = _records(by_cli)
    assert len(recorded) == 2 and recorded == _records(by_api)
    newest = recorded[0]
    assert newest["result"][0]["peeking"] == payload["peeking"]
    with open_store(db, read_only=True) as st:
        counts = {r: len(st.episode_records(r)) for r in (base, cand)}
    assert newest["options"]["episode_counts"] == counts and min(counts.values()) > 20
    # an open store works the same and does not record it twice (the store dedupes)
    with open_store(by_api) as st:
        again = record_comparison(st, base, [cand])
    assert again.recorded and len(_records(by_api)) == 2


def test_a_read_only_store_compares_without_recording(lab: tuple[Path, str, str],
                                                       tmp_path: Path) -> None:
    db, base, cand = lab
    copy = tmp_path / "ro.sqlite"
    shutil.copy(db, copy)
    with open_store(copy, read_only=True) as st:
        done = record_comparison(st, base, [cand], notices=["said first"])
    assert not done.recorded and done.notes == ("said first",)
    assert str(done.comparisons[0].verdict) == "regression"
    assert len(_records(copy)) == 1  # only the earlier look


def test_a_scorer_without_its_judged_results_is_refused(lab: tuple[Path, str, str],
                                                        tmp_path: Path) -> None:
    """Recording ``scorer`` with comparisons of the runs' own outcomes would label a verdict
    with a judge that never judged it: refused in one line, nothing recorded."""
    from evalband.errors import InvalidInputError

    db, base, cand = lab
    copy = tmp_path / "s.sqlite"
    shutil.copy(db, copy)
    with pytest.raises(InvalidInputError, match="judged"):
        record_comparison(copy, base, [cand], scorer="human")
    assert len(_records(copy)) == 1  # only the earlier look
