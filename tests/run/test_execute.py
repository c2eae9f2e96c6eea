"""The per-episode helpers of the one-at-a-time path: the start time, facts asked once per env."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from evalband.run import _execute, _worker, run_panel
from testkit import coin_panel


def test_now_is_the_iso_text_datetime_gives_to_the_millisecond(monkeypatch) -> None:
    # across second boundaries, and each millisecond floored as isoformat floors it
    for ns in (0, 999_999_999, 1_000_000_000, 1_764_633_600_123_999_999, 1_764_633_601_000_500_000,
               1_764_633_601_999_000_000):
        monkeypatch.setattr(_execute.time, "time_ns", lambda ns=ns: ns)
        seconds, rest = divmod(ns, 1_000_000_000)
        expected = datetime.fromtimestamp(seconds, UTC).replace(
            microsecond=rest // 1000).isoformat(timespec="milliseconds")
        assert _execute._now() == expected


def test_now_reads_the_clock() -> None:
    # bracketed by two reads of the clock (no margin a stalled test could outlast); the
    # stamp is floored to the millisecond
    before = datetime.now(UTC)
    before = before.replace(microsecond=before.microsecond // 1000 * 1000)
    text = _execute._now()
    after = datetime.now(UTC)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", text)
    assert before <= datetime.fromisoformat(text) <= after


def test_the_trace_hook_and_control_period_are_asked_once_per_env(store, monkeypatch) -> None:
    asked: list[object] = []
    real = _worker.traceable
    monkeypatch.setattr(_worker, "traceable", lambda env: asked.append(env) or real(env))
    run_panel(coin_panel(episodes=12), "evalband.policies._builtin:zero_action", store,
              run_id="r", batch=False)
    assert len(store.episode_records("r")) == 24  # two cells (reset options), one env
    assert len(asked) == 1  # the env's facts asked once, not once an episode


@pytest.mark.parametrize("batch_size", [None, 3])
def test_a_traceable_env_is_still_traced(store, batch_size: int | None) -> None:
    from evalband.panel import load_panel

    panel = load_panel("reach1d").model_copy(update={"episodes": 3})
    run_panel(panel, "reach1d:damped", store, run_id="t", batch=False, batch_size=batch_size)
    assert all("trace" in r.extra for r in store.episode_records("t"))


def test_lockstep_asks_the_facts_of_one_env_not_of_every_slot(store, monkeypatch) -> None:
    # the facts cache holds what it is asked of until the run ends: a cell's slot envs,
    # closed when the next cell starts, must not be kept alive by it
    asked: set[int] = set()
    real = _worker.Worker.env_facts

    def counting(self, env, task):
        asked.add(id(env))
        return real(self, env, task)

    monkeypatch.setattr(_worker.Worker, "env_facts", counting)
    run_panel(coin_panel(episodes=8), "evalband.policies._builtin:zero_action", store,
              run_id="l", batch=False, batch_size=4)
    assert len(store.episode_records("l")) == 16
    assert len(asked) == 1
