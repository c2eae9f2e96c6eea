from __future__ import annotations

import pytest

from evalband.episode import Outcome
from evalband.errors import PanelMismatchError, PolicyNotFoundError, StoreError
from evalband.run import run_panel
from testenvs import FAULTY_COIN
from testkit import coin_panel, comparable

ZERO = "evalband.policies._builtin:zero_action"


def test_every_planned_episode_is_recorded_once(store) -> None:
    panel = coin_panel()
    run_id, summary = run_panel(panel, ZERO, store, run_id="r1")
    records = store.episode_records(run_id)
    assert len(records) == len(panel.episode_specs()) == summary.n_attempted
    assert {r.key for r in records} == {s.key for s in panel.episode_specs()}
    by_cell = summary.per_cell
    # Fates come from the condition seeds: p=0.8 succeeds far more often than p=0.2.
    assert by_cell["p=0.8"]["counts"]["success"] > by_cell["p=0.2"]["counts"]["success"]
    timeouts = [r for r in records if r.outcome is Outcome.TIMEOUT]
    assert timeouts and all(r.truncated and not r.terminated and r.steps == 5 for r in timeouts)
    successes = [r for r in records if r.success]
    assert all(r.terminated and r.time_to_success_s == pytest.approx(0.2) for r in successes)
    assert store.get_run(run_id).status == "finished"


def test_errors_are_recorded_never_failures(store) -> None:
    panel = coin_panel(env=FAULTY_COIN, env_kwargs={"length": 2, "error_p": 0.3})
    run_id, summary = run_panel(panel, ZERO, store, run_id="err")
    errors = [r for r in store.episode_records(run_id) if r.outcome is Outcome.ERROR]
    assert errors and all("injected simulator fault" in (r.error or "") for r in errors)
    assert summary.counts["error"] == len(errors)
    assert summary.verdict_withheld
    assert summary.n == summary.n_attempted - len(errors)
    _, counted = run_panel(panel, ZERO, store, run_id="err2", errors_as_failures=True)
    assert not counted.verdict_withheld and counted.n == counted.n_attempted
    assert store.get_run("err2").errors_as_failures


def test_policy_exception_becomes_error_episode(store) -> None:
    run_id, summary = run_panel(coin_panel(), "testkit:raising", store)
    assert summary.counts["error"] == summary.n_attempted
    assert "RuntimeError" in store.episode_records(run_id)[0].error


def test_serial_and_process_backends_give_identical_records(store) -> None:
    panel = coin_panel(episodes=12)
    run_panel(panel, ZERO, store, run_id="serial")
    run_panel(panel, ZERO, store, run_id="proc", backend="process", workers=2)
    a = [comparable(r) for r in store.episode_records("serial")]
    b = [comparable(r) for r in store.episode_records("proc")]
    assert a == b


def test_resume_skips_finished_episodes(store) -> None:
    panel = coin_panel()
    specs = panel.episode_specs()
    run_panel(coin_panel(episodes=7), ZERO, store, run_id="tmp")  # a different panel
    with pytest.raises(PanelMismatchError):
        run_panel(panel, ZERO, store, run_id="tmp")
    # Simulate a crash: keep only the first 9 records of a full run in a fresh run id.
    run_panel(panel, ZERO, store, run_id="full")
    first = store.episode_records("full")[:9]
    from dataclasses import replace

    from evalband.store._manifest import RunManifest

    manifest = store.get_run("full")
    store.create_run(RunManifest.from_dict({**manifest.as_dict(), "run_id": "crashed",
                                            "status": "running"}))
    store.add_episodes([replace(r, run_id="crashed") for r in first])
    seen = []
    run_panel(panel, ZERO, store, run_id="crashed", on_episode=seen.append)
    assert len(seen) == len(specs) - 9
    assert [comparable(r) for r in store.episode_records("crashed")] == [
        comparable(r) for r in store.episode_records("full")
    ]


def test_resume_with_another_policy_is_refused(store) -> None:
    run_panel(coin_panel(), ZERO, store, run_id="x")
    with pytest.raises(StoreError, match="policy"):
        run_panel(coin_panel(), "testkit:raising", store, run_id="x")


def test_unknown_policy_lists_available(store) -> None:
    with pytest.raises(PolicyNotFoundError) as info:
        run_panel(coin_panel(), "reach1d:nope", store)
    assert "reach1d:baseline" in str(info.value)
    assert store.list_runs() == []  # nothing half-written


def test_latency_quantiles_match_numpy_percentile() -> None:
    import numpy as np
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from evalband.run._execute import _latency_fields

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=80))
    def check(latencies: list[float]) -> None:
        got = _latency_fields(latencies)
        ms = np.asarray(latencies) * 1000.0
        assert got["latency_ms_p50"] == pytest.approx(np.percentile(ms, 50), abs=1e-9)
        assert got["latency_ms_p95"] == pytest.approx(np.percentile(ms, 95), abs=1e-9)
        assert got["latency_ms_max"] == pytest.approx(ms.max())

    check()


@pytest.mark.parametrize("backend", ["serial", "process"])
def test_the_returned_summary_is_the_stored_runs(store, backend: str) -> None:
    """A fresh run is summarised from what it played (no read-back): the stored run's
    summary all the same, errors, factors and out-of-order process records included."""
    from evalband.analysis import summarize

    panel = coin_panel(env=FAULTY_COIN, env_kwargs={"length": 2, "error_p": 0.2}, episodes=16)
    for run_id, extra in (("a", {}), ("b", {"errors_as_failures": True})):
        rid, summary = run_panel(panel, ZERO, store, run_id=f"{run_id}-{backend}",
                                 backend=backend, workers=2, **extra)
        stored = summarize(store.episode_records(rid), **extra)
        assert summary.as_dict() == stored.as_dict() and summary.counts["error"]
