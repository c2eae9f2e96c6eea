"""Benchmark: the ray backend vs the process backend on one machine (2 workers each).

Both play the SAME 200-episode PushT panel as ``bench_pusht.py`` (``pusht_panel(100)``: 100
episodes per start, budget 200 steps, ``pusht:expert``) through ``run_panel`` into a
temporary SQLite store, and their records must be identical (all fields but timing, the run
id and ``attempts``).

* The Ray cluster (``num_cpus=2``, local, started by the backend's own ``connect``) is
  started before any timing; its start-up is reported as ``ray_cluster_start_s``. A cluster
  this process was already connected to is used as it is (``ray_cluster_reused``; its start
  is then not measured, ``None``) and left running: only a cluster the bench started itself
  is shut down at the end. The
  first run on the fresh cluster (workers importing evalband, building the env and policy)
  as ``ray_first_run_s``: ``ray_whole_run_eps_per_s`` is what a one-off ``evalband run
  --backend ray`` on this machine sees (start-up + cold run).
* The process backend's first run (the small panel) starts its forkserver; also untimed.
* Then, interleaved per repeat: process on the full panel and a small one (40 episodes), ray
  on the same two. ``*_eps_per_s`` is the full panel over its median wall time (the process
  pool's start-up included; Ray's workers are already warm); ``*_steady_eps_per_s`` is the
  marginal rate ``(200 - 40) / (t_full - t_small)``, which removes each backend's fixed cost
  per run (pool start-up, task submission of the first chunks).

``ratio`` is ray over process on the steady rate (``None`` when either steady rate could not
be measured: the small panel took at least as long as the full one, noise); the target (issue
8) is ray within 25 % of process (``ratio >= 0.75``); ``passed`` needs a measured ratio that
meets it and identical records.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_pusht import POLICY, pusht_panel
from evalband.run import run_panel
from evalband.store import RunStore, open_store

TARGET_RATIO = 0.75
WORKERS = 2
_NOT_COMPARED = ("latency_ms_p50", "latency_ms_p95", "latency_ms_max", "env_ms", "wall_s",
                 "started_at", "run_id", "attempts")


def _records(store: RunStore, run_id: str) -> list[dict[str, Any]]:
    out = []
    for record in sorted(store.episode_records(run_id), key=lambda r: r.key):
        data = record.as_dict()
        for name in _NOT_COMPARED:
            data.pop(name, None)
        out.append(data)
    return out


def _timed_run(store: RunStore, panel: Any, run_id: str, backend: str) -> float:
    t0 = time.perf_counter()
    run_panel(panel, POLICY, store, run_id=run_id, backend=backend, workers=WORKERS)
    return time.perf_counter() - t0


def run(quick: bool = False) -> dict[str, Any]:
    """Time the process and ray backends on the same PushT panel; returns the result dict."""
    import ray

    from evalband.run._ray import connect

    per_cell, small_per_cell = (20, 5) if quick else (100, 20)
    repeats = 1 if quick else 3
    panel, small = pusht_panel(per_cell), pusht_panel(small_per_cell)
    n, n_small = len(panel.episode_specs()), len(small.episode_specs())
    started_here = False
    reused = ray.is_initialized()  # someone else's cluster: use it, never shut it down
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "bench.sqlite") as store:
        try:
            t0 = time.perf_counter()
            started_here = connect(workers=WORKERS)
            start_s = time.perf_counter() - t0 if started_here else None
            cluster_cpus = ray.cluster_resources().get("CPU")
            first_s = _timed_run(store, panel, "ray-first", "ray")
            # The process backend's first run starts the forkserver (imports): not timed.
            process_first_s = _timed_run(store, small, "process-first", "process")
            times: dict[str, list[float]] = {"process": [], "process_small": [], "ray": [],
                                             "ray_small": []}
            for r in range(repeats):
                order = ("process", "ray") if r % 2 == 0 else ("ray", "process")
                for backend in order:
                    times[backend].append(_timed_run(store, panel, f"{backend}-{r}", backend))
                    times[f"{backend}_small"].append(
                        _timed_run(store, small, f"{backend}-small-{r}", backend)
                    )
            reference = _records(store, "process-0")
            identical = len(reference) == n and all(
                _records(store, f"{backend}-{r}") == reference
                for backend in ("process", "ray") for r in range(repeats)
            ) and _records(store, "ray-first") == reference
            retried = sum(r.attempts > 1 for r in store.episode_records("ray-0"))
        finally:
            if started_here:
                ray.shutdown()
    med = {name: statistics.median(values) for name, values in times.items()}
    steady = {
        backend: (n - n_small) / (med[backend] - med[f"{backend}_small"])
        if med[backend] > med[f"{backend}_small"] else None
        for backend in ("process", "ray")
    }
    ray_steady, process_steady = steady["ray"], steady["process"]
    ratio = ray_steady / process_steady if ray_steady and process_steady else None
    return {
        "name": "ray_vs_process",
        "episodes": n,
        "small_episodes": n_small,
        "workers": WORKERS,
        "repeats": repeats,
        "ray_cluster_reused": reused,
        "ray_cluster_cpus": cluster_cpus,
        "ray_cluster_start_s": start_s,
        "ray_first_run_s": first_s,
        "ray_whole_run_eps_per_s": n / (start_s + first_s) if start_s is not None else None,
        "process_first_small_run_s": process_first_s,
        "process_s": med["process"],
        "ray_s": med["ray"],
        "process_s_each": [round(x, 4) for x in times["process"]],
        "ray_s_each": [round(x, 4) for x in times["ray"]],
        "process_small_s": med["process_small"],
        "ray_small_s": med["ray_small"],
        "process_eps_per_s": n / med["process"],
        "ray_eps_per_s": n / med["ray"],
        "ratio_whole_run": med["process"] / med["ray"],
        "process_steady_eps_per_s": process_steady,
        "ray_steady_eps_per_s": ray_steady,
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "target": "ray within 25% of process (ratio >= 0.75)",
        "ray_retried_episodes": retried,
        "identical": identical,
        "passed": bool(identical and ratio is not None and ratio >= TARGET_RATIO),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
