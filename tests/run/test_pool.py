"""The process backend's warm pool: reused across runs of one session, replaced when broken."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest

from evalband.run import _pool, run_panel
from evalband.store import RunStore
from testkit import coin_panel, comparable

ZERO = "evalband.policies._builtin:zero_action"


@pytest.fixture(autouse=True)
def _no_idle_pools() -> Iterator[None]:
    _pool.close_pools()
    yield
    _pool.close_pools()


def test_second_process_run_reuses_the_first_runs_workers(store: RunStore,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[ProcessPoolExecutor] = []
    original = ProcessPoolExecutor.__init__

    def counting(self: ProcessPoolExecutor, *args: object, **kwargs: object) -> None:
        made.append(self)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ProcessPoolExecutor, "__init__", counting)
    panel = coin_panel(episodes=12)
    run_panel(panel, ZERO, store, run_id="serial")
    for run_id in ("first", "second"):
        run_panel(panel, ZERO, store, run_id=run_id, backend="process", workers=2)
        assert ([comparable(r) for r in store.episode_records(run_id)]
                == [comparable(r) for r in store.episode_records("serial")])
    assert len(made) == 1  # one pool for both runs
    assert list(_pool._IDLE.values()) == made  # parked, warm, for a third


def test_a_broken_pool_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    context = _pool.forkserver_context()
    with _pool.warm_pool(1, context) as pool:
        with pytest.raises(BrokenProcessPool):
            pool.submit(os._exit, 3).result()
    assert not _pool._IDLE  # not parked
    with _pool.warm_pool(1, context) as fresh:
        assert fresh is not pool and fresh.submit(abs, -2).result() == 2


def test_a_changed_import_path_gets_new_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    context = _pool.forkserver_context()
    with _pool.warm_pool(1, context) as first:
        first.submit(abs, 1).result()
    monkeypatch.setattr(sys, "path", [*sys.path, "/nonexistent-evalband-test"])
    with _pool.warm_pool(1, context) as second:
        assert second is not first
        assert "/nonexistent-evalband-test" in second.submit(_sys_path).result()


def _sys_path() -> list[str]:
    return list(sys.path)


def test_prestart_hands_its_pool_to_the_run() -> None:
    _pool.prestart(2, ["evalband.run._execute"])
    (started,) = _pool._IDLE.values()
    with _pool.warm_pool(2, _pool.forkserver_context()) as pool:
        assert pool is started
        pids = {pool.submit(os.getpid).result() for _ in range(4)}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def _imported(name: str) -> bool:
    return name in sys.modules


def test_prestart_again_asks_the_warm_workers_for_the_new_modules() -> None:
    import time

    _pool.prestart(1, ["json"])
    (started,) = _pool._IDLE.values()
    _pool.prestart(1, ["json"])  # nothing new: no second warm-up
    assert _pool._ASKED[started] == {"json"}
    _pool.prestart(1, ["json", "colorsys"])  # the run names more (its env, its policy)
    (same,) = _pool._IDLE.values()
    assert same is started and _pool._ASKED[started] == {"json", "colorsys"}
    deadline = time.monotonic() + 60
    while not started.submit(_imported, "colorsys").result():  # the warm-up is queued
        assert time.monotonic() < deadline
        time.sleep(0.05)
