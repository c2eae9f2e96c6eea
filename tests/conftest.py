"""Shared fixtures: a temporary store and tiny panels on the coin-flip stand-in robot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalband.panel import Panel, load_panel
from evalband.store import RunStore, open_store

TIMING_FIELDS = ("latency_ms_p50", "latency_ms_p95", "latency_ms_max", "env_ms", "wall_s",
                 "started_at", "run_id")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with open_store(tmp_path / "runs" / "evalband.sqlite") as s:
        yield s


def coin_panel(**overrides: Any) -> Panel:
    data: dict[str, Any] = {
        "name": "coin",
        "env": "evalband/Coin-v0",
        "env_kwargs": {"length": 2},
        "episodes": 20,
        "seed": 3,
        "budget": {"steps": 5},
        "factors": {"p": [0.2, 0.8]},
    }
    data.update(overrides)
    return load_panel(data)


def comparable(record: Any) -> dict[str, Any]:
    """A record without the fields that measure time (they differ run to run)."""
    data = record.as_dict()
    for name in TIMING_FIELDS:
        data.pop(name, None)
    return data


def raising(obs: Any) -> Any:
    """A policy that crashes on every call."""
    raise RuntimeError("policy exploded")
