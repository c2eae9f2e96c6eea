"""Helpers shared by the tests: tiny panels on the coin-flip stand-in robot, record views,
a crashing policy. Import them as ``from testkit import coin_panel`` (tests/ is on the path)."""

from __future__ import annotations

from typing import Any

from evalband.panel import Panel, load_panel

__all__ = ["TIMING_FIELDS", "coin_panel", "comparable", "raising"]

TIMING_FIELDS = ("latency_ms_p50", "latency_ms_p95", "latency_ms_max", "env_ms", "wall_s",
                 "started_at", "run_id")


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
