"""The worker object: a run closes every env it built, also when it fails.

Oracle: the env class itself, instrumented: every Coin env that is constructed must have had
its ``close()`` called by the time ``run_panel`` returns or raises (whatever held it).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import pytest

from evalband.envs._coin import CoinEnv
from evalband.errors import EvalbandError
from evalband.panel import EpisodeSpec
from evalband.run import run_panel
from evalband.run._execute import RunTask, execute_chunk
from evalband.run._worker import Worker, process_worker
from testkit import coin_panel

POLICY = "evalband.policies._builtin:zero_action"


@pytest.fixture
def coins(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[int]]:
    """A serial number for every Coin env built, and those of every one closed, from now on.

    Serial numbers, not ``id()``: a closed env's id can be reused by the next one built.
    """
    seen: dict[str, set[int]] = {"built": set(), "closed": set()}
    serials = itertools.count()
    real_init, real_close = CoinEnv.__init__, CoinEnv.close

    @functools.wraps(real_init)  # the runner reads the constructor's signature
    def init(self: CoinEnv, *args: Any, **kwargs: Any) -> None:
        self._test_serial = next(serials)  # type: ignore[attr-defined]
        seen["built"].add(self._test_serial)  # type: ignore[attr-defined]
        real_init(self, *args, **kwargs)

    def close(self: CoinEnv) -> None:
        seen["closed"].add(self._test_serial)  # type: ignore[attr-defined]
        real_close(self)

    monkeypatch.setattr(CoinEnv, "__init__", init)
    monkeypatch.setattr(CoinEnv, "close", close)
    return seen


def _cells_panel(episodes: int = 4) -> Any:
    # two constructor arguments (cell envs of their own) crossed with two reset options
    return coin_panel(episodes=episodes, factors={
        "p": [0.2, 0.8],
        "length": {"target": "env_kwargs", "values": [1, 3], "dynamics_only": True}})


@pytest.mark.parametrize("batch_size", [None, 3])
def test_a_run_closes_every_env_it_built(store, coins, batch_size: int | None) -> None:
    run_panel(_cells_panel(), POLICY, store, run_id="r", batch=False, batch_size=batch_size)
    assert len(store.episode_records("r")) == 16
    # the task's env, one per length; with lockstep the slots' copies too
    assert len(coins["built"]) >= (7 if batch_size else 3)
    assert coins["built"] <= coins["closed"]


def test_a_run_that_raises_mid_way_closes_its_envs(store, coins) -> None:
    def stop(*_: Any) -> None:
        raise RuntimeError("stopped by the test")

    with pytest.raises(RuntimeError, match="stopped by the test"):
        run_panel(_cells_panel(), POLICY, store, run_id="x", batch=False, on_episode=stop)
    assert coins["built"] and coins["built"] <= coins["closed"]


def test_a_run_refused_by_the_store_closes_the_env_it_checked(store, coins) -> None:
    run_panel(coin_panel(episodes=2), POLICY, store, run_id="same", batch=False)
    coins["built"].clear()
    with pytest.raises(EvalbandError):  # another panel under a stored run's id
        run_panel(coin_panel(episodes=3), POLICY, store, run_id="same", batch=False)
    assert coins["built"] and coins["built"] <= coins["closed"]


def test_a_worker_reuses_its_envs_until_closed_then_builds_again(coins) -> None:
    panel = _cells_panel(episodes=2)
    task = RunTask(run_id="w", policy=POLICY, panel_fingerprint=panel.fingerprint,
                   env=panel.env, env_kwargs=dict(panel.env_kwargs), budget_steps=5,
                   batch=False)
    specs: list[EpisodeSpec] = panel.episode_specs()
    with Worker() as worker:
        first = [r.outcome for r in execute_chunk(task, specs, worker)]
        built = len(coins["built"])
        again = [r.outcome for r in execute_chunk(task, specs, worker)]
        assert again == first and len(coins["built"]) == built  # nothing built twice
        assert worker.close() == [] and coins["built"] <= coins["closed"]
        assert [r.outcome for r in execute_chunk(task, specs, worker)] == first
        assert len(coins["built"]) == 2 * built  # closed envs are built again
    assert coins["built"] <= coins["closed"]  # the with block closed the second set


def test_a_process_has_one_worker() -> None:
    assert process_worker() is process_worker()
