"""The reaching lab (seed 002_4e7e9c5b524a571b.txt) reproduced by the real runner and store."""

from __future__ import annotations

import pytest

from evalband.analysis import paired_counts, summarize
from evalband.panel import load_panel
from evalband.run import run_panel
from testkit import comparable

BASE, DAMPED = "reach1d:baseline", "reach1d:damped"


def _run(store, panel_name: str, policy: str, **kw):
    name = f"{panel_name}-{policy.replace(':', '-')}-{kw.get('backend', 'serial')}"
    run_id, summary = run_panel(load_panel(panel_name), policy, store, run_id=name, **kw)
    return store.episode_records(run_id), summary


def test_default_batch_matches_the_seed(store) -> None:
    base, s_base = _run(store, "reach1d", BASE)
    damped, s_damped = _run(store, "reach1d", DAMPED)
    assert (s_base.counts["success"], s_base.counts["failure"], s_base.counts["timeout"]) == (
        9, 7, 48)
    assert (s_damped.counts["success"], s_damped.counts["failure"],
            s_damped.counts["timeout"]) == (50, 0, 14)
    assert round(s_base.mean_time_to_success_s, 6) == 1.511111
    assert round(s_damped.mean_time_to_success_s, 6) == 2.368
    assert round(100 * s_base.rate.low, 6) == 7.578573
    assert round(100 * s_base.rate.high, 6) == 24.616282
    assert round(100 * s_damped.rate.low, 6) == 66.567216
    assert round(100 * s_damped.rate.high, 6) == 86.497681
    pairs = paired_counts(base, damped)
    assert (pairs.both, pairs.a_only, pairs.b_only, pairs.neither) == (8, 1, 42, 13)
    first_base, first_damped = base[0], damped[0]
    assert first_base.outcome.value == "failure" and first_base.sim_time_s == pytest.approx(2.6)
    assert first_damped.outcome.value == "timeout" and first_damped.truncated
    assert not first_damped.terminated and first_damped.sim_time_s == pytest.approx(6.0)


def test_two_second_budget(store) -> None:
    base, s_base = _run(store, "reach1d-2s", BASE)
    damped, s_damped = _run(store, "reach1d-2s", DAMPED)
    assert (s_base.counts["success"], s_damped.counts["success"]) == (7, 16)
    assert base[0].outcome.value == "timeout" and damped[0].outcome.value == "timeout"


def test_256_episodes_keep_the_first_64(store) -> None:
    small, _ = _run(store, "reach1d", DAMPED)
    large, _ = _run(store, "reach1d-256", DAMPED)
    assert len(large) == 256
    strip = lambda r: {k: v for k, v in comparable(r).items() if k != "panel_fingerprint"}  # noqa: E731
    assert [strip(r) for r in large[:64]] == [strip(r) for r in small]


def test_one_and_two_process_workers_identical(store) -> None:
    serial, _ = _run(store, "reach1d", BASE)
    procs, _ = _run(store, "reach1d", BASE, backend="process", workers=2)
    assert [comparable(r) for r in serial] == [comparable(r) for r in procs]


def test_batched_and_one_at_a_time_identical(store) -> None:
    batched, _ = _run(store, "reach1d-dynamics", DAMPED)
    run_id, _ = run_panel(load_panel("reach1d-dynamics"), DAMPED, store, run_id="single",
                          batch=False)
    single = store.episode_records(run_id)
    keep = ("cell", "episode", "repeat", "condition_seed", "outcome", "terminated", "truncated",
            "steps", "sim_time_s", "time_to_success_s", "slices")
    assert [{k: comparable(r)[k] for k in keep} for r in batched] == [
        {k: comparable(r)[k] for k in keep} for r in single
    ]
    # the simulator marks its episodes; the traced ones (first of each cell) play one at a time
    simulated = [r for r in batched if "trace" not in r.extra]
    assert simulated and all(r.extra.get("batched") for r in simulated)
    assert not any(r.extra.get("batched") for r in single)
    assert summarize(batched).per_cell.keys() == {"dynamics=nominal", "dynamics=changed"}


def _played(store, run_id: str) -> list[dict]:
    """Comparable records, ``extra`` without the marks of how they were played."""
    out = []
    for record in store.episode_records(run_id):
        data = comparable(record)
        data["extra"] = {k: v for k, v in (data["extra"] or {}).items()
                         if k not in ("trace", "batched")}
        out.append(data)
    return out


def test_every_play_path_stores_every_episodes_metrics(store) -> None:
    # The batch simulator plays the untraced episodes; one at a time, the lockstep
    # --batch N path (the simulator N at a time) and the vector backend must store the
    # same records, extra["metrics"] included, for every episode.
    panel = load_panel("reach1d-dynamics")
    paths = {"batched": {}, "single": {"batch": False}, "lockstep": {"batch_size": 5},
             "vector": {"backend": "vector", "workers": 2}}
    runs = {}
    for name, kw in paths.items():
        run_id, _ = run_panel(panel, DAMPED, store, run_id=f"metrics-{name}", **kw)
        runs[name] = _played(store, run_id)
    single = runs["single"]
    assert len(single) == 128
    assert all(set(r["extra"]["metrics"]) == {"return", "reward_max", "reward_final"}
               for r in single)
    won = [r["outcome"] == "success" for r in single]
    assert any(won) and not all(won)  # both kinds of episode are compared
    assert [r["extra"]["metrics"]["return"] for r in single] == [float(w) for w in won]
    for name in ("batched", "lockstep", "vector"):
        assert sum("metrics" in r["extra"] for r in runs[name]) == len(single), name
        assert runs[name] == single, name
    simulated = [r for r in store.episode_records("metrics-batched") if r.extra.get("batched")]
    assert len(simulated) > 64  # most episodes really came from the simulator


def test_declared_info_keys_are_stored_for_every_episode(store) -> None:
    # the batch simulator keeps no info: with declared keys every episode plays one at a time
    panel = load_panel({**load_panel("reach1d").model_dump(), "episodes": 12,
                        "metrics": ["x", "streak"]})
    run_id, _ = run_panel(panel, DAMPED, store, run_id="info-keys")
    records = store.episode_records(run_id)
    assert len(records) == 12
    assert all({"return", "x", "streak"} <= set(r.metrics) for r in records)
