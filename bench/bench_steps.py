"""Benchmark: a gym-pusht PushT run with ``--record-steps`` vs without (issue 29, item 4).

Both paths are a whole ``run_panel`` call on the serial backend into one temporary store, on
the same panel: gym-pusht's ``PushT-v0`` (``obs_type: state``; pymunk physics, no rendering),
lerobot-eval's seeds (1000 + episode), budget 300 steps, ``coverage`` declared as a metric,
played by ``gym_pusht:push`` (a scripted pusher that moves the T, so rewards and coverage
change from step to step):

* plain: no step data;
* steps: ``record_steps=True``: every step's action, reward and coverage kept, one
  compressed ``.npz`` an episode stored by its sha256 beside the store, durable before its
  record is committed.

The two paths are interleaved, each round in alternating order (plain-steps, steps-plain,
...), so a pair shares the machine's state. The figure is ``steps / plain - 1``, the median
of the rounds' wall-time ratios, target <= 10 %; the same on this process's CPU time beside
it. Because whole runs on a shared machine differ by more than that (the spread of the
pairs is reported), the recording's own work is also timed apart: each stored episode's steps
fed again through the recorder, encoded and stored, over a plain run's wall time
(``recording_own_share``). Also reported: the bytes the step data takes on disk (all
episodes, per episode, per step) against the raw columns' size. Outcomes and step counts
must be identical (recording does not change what happens), every episode must have step
data of its own length, and the same episode in two repeats the same actions (its rewards
may differ in their last bits: gym-pusht computes coverage as a polygon intersection; the
largest difference is reported).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from evalband.panel import Panel, load_panel
from evalband.run import run_panel
from evalband.store import RunStore, open_store, read_steps
from evalband.store._media import media_dir
from evalband.store._steps import steps_ref

TARGET_OVERHEAD = 0.10
POLICY = "gym_pusht:push"
BUDGET = 300
PATHS = ("plain", "steps")


def pusht_panel(episodes: int) -> Panel:
    return load_panel({
        "name": "bench-steps",
        "env": "gym_pusht/PushT-v0",
        "imports": ["gym_pusht"],
        "env_kwargs": {"obs_type": "state"},
        "episodes": episodes,
        "seed": 1000,
        "condition_seeds": "sequential",
        "budget": {"steps": BUDGET},
        "metrics": ["coverage"],
    })


def _timed_run(store: RunStore, panel: Panel, run_id: str, steps: bool) -> tuple[float, float]:
    """(wall s, this process's CPU s) of one whole run."""
    w0, c0 = time.perf_counter(), time.process_time()
    run_panel(panel, POLICY, store, run_id=run_id, record_steps=steps)
    return time.perf_counter() - w0, time.process_time() - c0


def _overhead(values: dict[str, list[float]]) -> float:
    """Median over rounds of ``steps / plain`` (same round), minus one."""
    return statistics.median(
        s / p for s, p in zip(values["steps"], values["plain"], strict=True)) - 1.0


def _played(store: RunStore, run_id: str) -> list[tuple[Any, str, int]]:
    return sorted((r.key, r.outcome.value, r.steps) for r in store.episode_records(run_id))


def _recording_cost(datas: list[Any], store_path: Path) -> float:
    """Seconds that recording alone takes for a run's episodes (median of 3 passes).

    Each stored episode's steps are fed again through a :class:`StepRecorder` (``add`` per
    step, then the encoding) and stored (:func:`store_media_bytes`, its file already there,
    as in a repeat): the recording's own work, timed apart from the env and the policy, so
    it is little changed by load that comes and goes between two whole runs.
    """
    from evalband.run._steps import StepRecorder
    from evalband.store._media import store_media_bytes

    passes = []
    for _ in range(3):
        t0 = time.perf_counter()
        for data in datas:
            rec = StepRecorder(tuple(data.info))
            columns = list(data.info.items())
            for t in range(data.steps):
                rec.add(data.action[t], data.reward[t],
                        {key: values[t] for key, values in columns})
            pending = rec.pending()
            store_media_bytes(store_path, pending["data"], content_type=pending["content_type"],
                              kind="steps")
        passes.append(time.perf_counter() - t0)
    return statistics.median(passes)


def run(quick: bool = False) -> dict[str, Any]:
    """Time plain and step-recording runs, paired; returns the result dict."""
    episodes = int(os.environ.get("BENCH_STEPS_EPISODES", 20 if quick else 200))
    repeats = int(os.environ.get("BENCH_STEPS_REPEATS", 2 if quick else 6))
    panel = pusht_panel(episodes)
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {p: [] for p in PATHS}
    cpu: dict[str, list[float]] = {p: [] for p in PATHS}
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "bench.sqlite") as store:
        _timed_run(store, pusht_panel(2), "warm-up", True)  # imports, pymunk, the policy
        for r in range(repeats):
            order = PATHS if r % 2 == 0 else PATHS[::-1]
            for path in order:
                wall, used = _timed_run(store, panel, f"{path}-{r}", path == "steps")
                times[path].append(wall)
                cpu[path].append(used)
        reference = _played(store, "plain-0")
        identical = all(_played(store, f"{p}-{r}") == reference
                        for p in PATHS for r in range(repeats))
        records = store.episode_records("steps-0")
        datas = [read_steps(store.path, rec) for rec in records]
        complete = all(d is not None and d.steps == rec.steps and "coverage" in d.info
                       for d, rec in zip(datas, records, strict=True))
        stored = sum(int(steps_ref(rec)["bytes"]) for rec in records)  # type: ignore[index]
        raw = sum(d.action.nbytes + d.reward.nbytes + sum(v.nbytes for v in d.info.values())
                  for d in datas if d is not None)
        files = len(list(media_dir(store.path).glob("*.npz")))
        # the same episodes in another repeat: the same actions; the rewards may differ in
        # their last bits (gym-pusht's coverage is a polygon intersection), so the files do
        again = {rec.key: read_steps(store.path, rec)
                 for rec in store.episode_records(f"steps-{repeats - 1}")}
        same_actions = all(d is not None and (o := again[rec.key]) is not None
                           and np.array_equal(d.action, o.action)
                           for d, rec in zip(datas, records, strict=True))
        reward_diff = max(float(np.max(np.abs(d.reward - o.reward), initial=0.0))
                          for d, rec in zip(datas, records, strict=True)
                          if d is not None and (o := again[rec.key]) is not None)
        coverage_moves = any(d is not None and d.info["coverage"].max() > 0 for d in datas)
        own_s = _recording_cost(datas, store.path)
    steps = sum(s for _, _, s in reference)
    pairs = [s / p for s, p in zip(times["steps"], times["plain"], strict=True)]
    overhead = _overhead(times)
    return {
        "name": "record_steps_pusht",
        "claim": f"gym-pusht PushT run ({episodes} episodes) with --record-steps vs without "
                 "(target: <= 10%); bytes of step data stored",
        "env": "gym_pusht/PushT-v0 (obs_type state)",
        "policy": POLICY,
        "episodes": episodes,
        "steps": steps,
        "repeats": repeats,
        "plain_s": statistics.median(times["plain"]),
        "steps_s": statistics.median(times["steps"]),
        "record_steps_overhead": overhead,
        "record_steps_overhead_pairs": [round(x - 1.0, 4) for x in pairs],
        "record_steps_overhead_cpu": _overhead(cpu),
        "record_steps_overhead_min": min(times["steps"]) / min(times["plain"]) - 1.0,
        # the recording's own work for a run's episodes, against a plain run's wall time:
        # a bound on the overhead that load between whole runs does not blur
        "recording_own_s": own_s,
        "recording_own_share": own_s / statistics.median(times["plain"]),
        "step_data_bytes": stored,
        "step_data_bytes_per_episode": stored / len(records),
        "step_data_bytes_per_step": stored / steps,
        "step_data_raw_bytes": raw,
        "compression_ratio": raw / stored if stored else None,
        "step_data_files": files,
        "actions_same_in_every_repeat": same_actions,
        "reward_max_abs_diff_across_repeats": reward_diff,
        "coverage_changes": coverage_moves,
        "ratio": 1.0 / (1.0 + overhead),
        "target_ratio": 1.0 / (1.0 + TARGET_OVERHEAD),
        "target_overhead": TARGET_OVERHEAD,
        "load_avg_before": list(load_before),
        "load_average_1min": os.getloadavg()[0],
        "identical": identical,
        "step_data_complete": complete,
        "passed": bool(identical and complete and same_actions
                       and overhead <= TARGET_OVERHEAD),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
