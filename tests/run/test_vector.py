"""The vector backend (sub-envs in an AsyncVectorEnv, the policy batched): serial's records.

Each sub-env plays the condition of the episode its slot holds: its condition seed, its
cell's reset options and constructor arguments; nothing leaks from one episode into the
next (a leak would change outcomes: the coin's fate and the reaching lab's start are both
drawn at reset). Errors in one sub-env end only its episode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalband.errors import InvalidParameterError
from evalband.panel import load_panel
from evalband.policies.manipulation import UniformRandom
from evalband.run import run_panel
from evalband.run._backends import get_backend
from evalband.run._vector import close_vector_envs
from evalband.store import open_store
from testenvs import FAULTY_COIN
from testkit import comparable


def _records(store: Any, run_id: str) -> dict[Any, dict[str, Any]]:
    """Comparable records; sub-envs are not traced, and serial marks its batch simulator's."""
    out = {}
    for record in store.episode_records(run_id):
        data = comparable(record)
        data["extra"] = {k: v for k, v in (data["extra"] or {}).items()
                         if k not in ("trace", "batched")}
        out[record.key] = data
    return out


def _both(tmp_path: Path, panel: Any, policy: Any, workers: int = 3) -> tuple[dict, dict]:
    with open_store(tmp_path / "s.sqlite") as store:
        run_panel(panel, policy, store, run_id="serial", batch=False)  # one at a time
        run_panel(panel, policy, store, run_id="vector", backend="vector", workers=workers)
        return _records(store, "serial"), _records(store, "vector")


def test_vector_equals_serial_across_cells_options_and_constructor_args(tmp_path: Path) -> None:
    # p is a reset option, length a constructor argument (each cell builds its own env)
    panel = load_panel({
        "name": "coin-cells", "env": "evalband/Coin-v0", "episodes": 7, "seed": 11,
        "budget": {"steps": 6},
        "factors": {"p": [0.2, 0.9],
                    "length": {"target": "env_kwargs", "values": [1, 3],
                               "dynamics_only": True}},
    })
    serial, vector = _both(tmp_path, panel, UniformRandom(dim=1))
    assert len(serial) == 28
    assert vector == serial
    outcomes = {v["outcome"] for v in serial.values()}
    assert {"success", "timeout"} <= outcomes  # the cells really differ
    steps = {(v["slices"]["length"], v["steps"]) for v in serial.values()
             if v["outcome"] == "success"}
    assert steps == {("1", 1), ("3", 3)}  # each episode ran in its own cell's env


def test_vector_equals_serial_where_actions_matter(tmp_path: Path) -> None:
    """The reaching lab: the damped controller's actions decide the outcome, step by step."""
    panel = load_panel({**load_panel("reach1d").model_dump(), "episodes": 10})
    serial, vector = _both(tmp_path, panel, "reach1d:damped", workers=4)
    assert serial == vector
    assert len({v["outcome"] for v in serial.values()}) >= 2


def test_a_faulty_sub_env_errors_its_episode_only(tmp_path: Path) -> None:
    panel = load_panel({
        "name": "faulty", "env": FAULTY_COIN, "env_kwargs": {"error_p": 0.3, "length": 3},
        "episodes": 12, "seed": 5, "budget": {"steps": 4},
    })
    serial, vector = _both(tmp_path, panel, UniformRandom(dim=1), workers=2)
    assert serial == vector
    errors = [v for v in serial.values() if v["outcome"] == "error"]
    assert 0 < len(errors) < 12
    assert all("injected simulator fault" in v["error"] for v in errors)


def test_warm_vector_env_is_reused_and_closed(tmp_path: Path) -> None:
    from evalband.run import _vector

    panel = load_panel({"name": "coin", "env": "evalband/Coin-v0", "episodes": 3,
                        "budget": {"steps": 4}})
    with open_store(tmp_path / "s.sqlite") as store:
        run_panel(panel, UniformRandom(dim=1), store, run_id="a", backend="vector", workers=2)
        first = list(_vector._POOLS.values())
        run_panel(panel, UniformRandom(dim=1), store, run_id="b", backend="vector", workers=2)
        assert list(_vector._POOLS.values()) == first and len(first) == 1
    close_vector_envs()
    assert not _vector._POOLS


def test_vector_refuses_a_stateful_policy_without_slots(tmp_path: Path) -> None:
    class Counter:
        def reset(self, context: Any) -> None:
            self.n = 0

        def act(self, obs: Any) -> Any:
            self.n += 1
            return [0.0]

    panel = load_panel({"name": "coin", "env": "evalband/Coin-v0", "episodes": 2,
                        "budget": {"steps": 3}})
    with open_store(tmp_path / "s.sqlite") as store, pytest.raises(InvalidParameterError):
        run_panel(panel, Counter(), store, backend="vector", workers=2)


def test_vector_backend_needs_a_sub_env() -> None:
    with pytest.raises(InvalidParameterError, match="sub-envs"):
        get_backend("vector", 0)
