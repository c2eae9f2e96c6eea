"""The episode row builder and reader: plain code, checked column by column (issue 32 item 5)."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalband.episode import EPISODE_FIELDS, EpisodeRecord, Outcome, record_values
from evalband.errors import InvalidInputError
from evalband.store import open_store
from evalband.store._manifest import _example
from evalband.store._sqlite import _episode_column_type, _episode_row


def _expected(name: str, value: Any) -> Any:
    """A value's SQL form from its column's declared type alone: the oracle for the row."""
    column = _episode_column_type(name)
    if name in ("slices", "extra"):
        return json.dumps(value, allow_nan=True)  # the bytes every store so far holds
    if "IN (0, 1)" in column:
        return 1 if value else 0
    if column.startswith("INTEGER"):
        return None if value is None else int(value)
    if column == "REAL":
        return None if value is None else float(value)
    if name == "condition_seed":
        return value if value < 2**63 else str(value)
    if name == "outcome":
        return Outcome(value).value
    return value


def _random_record(rng: random.Random, i: int) -> EpisodeRecord:
    outcome = rng.choice(list(Outcome))
    maybe = lambda v: v if rng.random() < 0.5 else None  # noqa: E731
    return EpisodeRecord(
        run_id="r1", policy="p", panel_fingerprint="f", cell=f"c={i % 3}", episode=i,
        repeat=rng.randint(0, 2), condition_seed=rng.choice([0, 7, 2**63 - 1, 2**64 - 1]),
        outcome=outcome, terminated=outcome is Outcome.SUCCESS or rng.random() < 0.5,
        truncated=outcome is not Outcome.SUCCESS and rng.random() < 0.5,
        steps=rng.randint(0, 500), sim_time_s=maybe(rng.random()),
        time_to_success_s=maybe(1.5) if outcome is Outcome.SUCCESS else None,
        slices={"c": str(i % 3)}, score=maybe(rng.randint(0, 3)), assisted=rng.random() < 0.2,
        interventions=rng.randint(0, 3), latency_ms_p50=maybe(0.5), latency_ms_p95=maybe(2),
        latency_ms_max=maybe(3.25), env_ms=maybe(10), wall_s=maybe(0.01),
        started_at=maybe("2026-12-03T00:00:00.000+00:00"), error=maybe("boom"),
        attempts=rng.randint(1, 3), extra=rng.choice([{}, {"metrics": {"return": -1.0}}]),
    )


def test_each_column_of_a_row_is_its_fields_value_in_the_columns_type() -> None:
    rng = random.Random(3)
    for i in range(300):
        record = _random_record(rng, i)
        row = _episode_row(record)
        assert len(row) == len(EPISODE_FIELDS)
        for name, value, stored in zip(EPISODE_FIELDS, record_values(record), row, strict=True):
            want = _expected(name, value)
            assert stored == want and type(stored) is type(want), (name, value, stored)


def test_records_read_back_equal_those_stored_and_go_through_the_checks(tmp_path: Path) -> None:
    rng = random.Random(4)
    records = [_random_record(rng, i) for i in range(200)]
    path = tmp_path / "s.sqlite"
    with open_store(path) as store:
        store.create_run(_example())
        store.add_episodes(records[:180])
        for record in records[180:]:
            store.add_episode(record)
        back = store.episode_records("r1")
        assert sorted(back, key=lambda r: r.key) == sorted(records, key=lambda r: r.key)
    with sqlite3.connect(path) as conn:  # a row no record could hold: time on a failure
        conn.execute("UPDATE episodes SET outcome = 'failure', time_to_success_s = 2.0 "
                     "WHERE episode = 0")
    with open_store(path) as store, pytest.raises(InvalidInputError, match="time_to_success_s"):
        store.episode_records("r1")
