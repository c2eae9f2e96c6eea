"""Column-wise reads and SQLite-counted summaries equal the record-by-record ones."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalband._api import load_run
from evalband.episode import EPISODE_FIELDS, EpisodeRecord
from evalband.errors import InvalidInputError
from evalband.labs.hidden_regression import simulate_hidden_regression
from evalband.report._data import slice_summaries, stored_slice_summaries
from evalband.store import RunStore, _columns, open_store
from evalband.store._columns import OUTCOME_CODES
from evalband.store._manifest import _example

OUTCOMES = ("success", "failure", "timeout", "error")


def _records(n: int, run_id: str = "r1") -> list[EpisodeRecord]:
    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        outcome = OUTCOMES[int(rng.integers(4))]
        cell = f"mass={'light' if i % 3 else 'heavy'},arm={'a' if i % 2 else 'b'}"
        success = outcome == "success"
        out.append(EpisodeRecord(
            run_id, "p", _example().panel_fingerprint, cell, i, i % 2,
            2**70 + i if i == 7 else 1000 + i, outcome, success or outcome == "failure",
            outcome == "timeout", int(rng.integers(1, 50)),
            slices=dict(p.split("=") for p in cell.split(",")),
            sim_time_s=float(rng.random()),
            time_to_success_s=(float(rng.random()) if success and i % 5 else None),
            score=None if i % 4 == 0 else int(rng.integers(3)),
            assisted=bool(i % 7 == 0), interventions=i % 3,
            error=f"ValueError: bad {i % 2}\ntrace" if outcome == "error" else None,
            extra={"i": i}))
    return out


@pytest.fixture(params=["one query", "blocks"])
def store(tmp_path: Path, request: pytest.FixtureRequest,
          monkeypatch: pytest.MonkeyPatch) -> Any:
    """The run store, read in one query (a small run) or block by block (a large one)."""
    if request.param == "blocks":
        monkeypatch.setattr(_columns, "_ONE_QUERY", 0)
        monkeypatch.setattr(_columns, "_BLOCK", 64)
    with open_store(tmp_path / "s.sqlite") as st:
        st.create_run(_example())
        st.add_episodes(_records(300))
        yield st


def test_every_column_matches_the_records(store: RunStore) -> None:
    records = store.episode_records("r1")
    cols = store.episode_columns("r1", list(EPISODE_FIELDS))
    assert all(len(a) == 300 for a in cols.values())
    for name in ("cell", "episode", "repeat", "steps", "interventions", "terminated",
                 "truncated", "assisted", "error", "policy"):
        assert cols[name].tolist() == [getattr(r, name) for r in records], name
    assert cols["condition_seed"].tolist() == [r.condition_seed for r in records]
    assert [OUTCOME_CODES[c] for c in cols["outcome"]] == [r.outcome.value for r in records]
    assert cols["score"].tolist() == [-1 if r.score is None else r.score for r in records]
    for name in ("sim_time_s", "time_to_success_s"):
        expected = [math.nan if getattr(r, name) is None else getattr(r, name) for r in records]
        np.testing.assert_array_equal(cols[name], np.array(expected))
    cells = cols["cell"]
    assert len({id(c) for c in cells}) == len(set(cells))  # equal strings are one object


def test_default_columns_and_int64_seeds(store: RunStore, tmp_path: Path) -> None:
    cols = store.episode_columns("r1")
    assert cols["condition_seed"].dtype == object  # one seed is past int64
    with open_store(tmp_path / "t.sqlite") as other:
        other.create_run(_example())
        other.add_episodes(r for r in _records(20) if r.episode != 7)
        assert other.episode_columns("r1")["condition_seed"].dtype == np.int64
    with pytest.raises(InvalidInputError, match="'nope'"):
        store.episode_columns("r1", ["nope"])


def _same(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=1e-12, abs=1e-12)
    else:
        assert a == b


@pytest.mark.parametrize("errors_as_failures", [False, True])
def test_sqlite_counted_summaries_equal_record_summaries(store: RunStore,
                                                         errors_as_failures: bool) -> None:
    store.update_run("r1", errors_as_failures=errors_as_failures)
    store.update_run("r1", panel_yaml=_slices_panel())
    counted = stored_slice_summaries(store, "r1")
    loaded = slice_summaries(load_run("r1", store))
    assert [(s.kind, s.name) for s in counted] == [(s.kind, s.name) for s in loaded]
    assert len(counted) > 3 and counted[-1].summary.error_causes
    for a, b in zip(counted, loaded, strict=True):
        _same(a.summary.as_dict(), b.summary.as_dict())


def _slices_panel() -> str:
    return ("name: demo\nenv: evalband/Coin-v0\nepisodes: 1\nseed: 0\nbudget: {steps: 1}\n"
            "factors: {mass: [light, heavy], arm: [a, b]}\n")


def test_the_hidden_regression_lab_counts_the_same(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.sqlite") as st:
        base, cand = simulate_hidden_regression(st, episodes=30, seed=4)
        for rid in (base, cand):
            counted = stored_slice_summaries(st, rid)
            loaded = slice_summaries(load_run(rid, st))
            for a, b in zip(counted, loaded, strict=True):
                _same(a.summary.as_dict(), b.summary.as_dict())


def test_tallies_from_the_columns_equal_sqlites_counts(store: RunStore) -> None:
    """A report counts from the columns it read what ``evalband show`` counts with SQLite."""
    from evalband.store._columns import cell_tallies, column_tallies

    cols = store.episode_columns("r1", ["cell", "outcome", "assisted", "time_to_success_s"])
    assert column_tallies(store, "r1", cols) == cell_tallies(store, "r1")


def test_a_condition_is_read_as_a_column_and_spares_a_read(store: RunStore) -> None:
    """``where <condition>``: whether each episode meets it; none met, nothing is read."""
    cond = "\"outcome\" = 'error'"
    cols = store.episode_columns("r1", ["outcome"], conditions=[cond, "0"])
    assert cols[f"where {cond}"].tolist() == [OUTCOME_CODES[c] == "error" for c in cols["outcome"]]
    assert not cols["where 0"].any()
    run = load_run("r1", store, conditions=["0"])
    read: list[str] = []
    run.records._read_where = lambda c: read.append(c) or []  # type: ignore[union-attr]
    assert run.records.where("0") == [] and read == []  # type: ignore[union-attr]


def test_where_reads_only_the_episodes_a_condition_selects(store: RunStore) -> None:
    """In key order, equal to the records that meet it; a flag read with the columns agrees."""
    records = store.episode_records("r1")
    condition = "\"outcome\" = 'error' OR \"interventions\" = 2"
    picked = [r for r in records if r.outcome.value == "error" or r.interventions == 2]
    got = store.episode_columns("r1", ["extra"], where=condition)["extra"]
    assert 0 < len(got) < len(records)
    assert [json.loads(t) for t in got] == [r.extra for r in picked]
    flag = store.episode_columns("r1", ["episode"], conditions=[condition])
    assert flag[f"where {condition}"].tolist() == [r in picked for r in records]
    assert store.episode_columns("r1", ["cell"], where="0")["cell"].tolist() == []
    with pytest.raises(InvalidInputError, match="unknown episode column"):
        store.episode_columns("r1", ["nope"], where="1")
