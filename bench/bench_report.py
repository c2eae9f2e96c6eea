"""Benchmark: the HTML report of a 100,000-episode run renders in under ten seconds.

The run is real: the reaching lab's damped controller on ``reach1d-dynamics`` widened to
50,000 episodes per cell (nominal and changed dynamics, 100,000 episodes), played through the
runner's own episode path (:func:`evalband.run.execute_chunk`, lockstep batch simulation) and
written to a temporary store in one transaction. Timed: ``evalband.report.render_html`` of
that run (loading 100,000 episodes from SQLite, the summaries, the noise floor, every plot
and the page), median over a few repeats after one warm-up (imports, font cache). Plots are
drawn at no more than 500 points per curve, so the page stays small however large the run.

The machine is shared: the result also carries the CPU seconds of the render (less sensitive
to other processes than the wall clock) and the one-minute load average when it ran.
``python bench/bench_report.py --profile`` prints where a render spends its time instead
(cProfile, the 30 costliest functions by their own time).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_SECONDS = 10.0
EPISODES_PER_CELL = 50_000


def build_run(store_path: Path, episodes_per_cell: int = EPISODES_PER_CELL) -> str:
    """Write a finished run of ``2 * episodes_per_cell`` reach1d episodes; return its id."""
    from evalband.panel import load_panel
    from evalband.run._execute import RunTask, execute_chunk
    from evalband.run._runner import _env_dt
    from evalband.store import open_store
    from evalband.store._manifest import new_manifest

    panel = load_panel({**load_panel("reach1d-dynamics").model_dump(mode="json",
                                                                    exclude_defaults=True),
                        "name": f"reach1d-dynamics-{episodes_per_cell}",
                        "episodes": episodes_per_cell})
    policy = "reach1d:damped"
    run_id = f"bench-{2 * episodes_per_cell}"
    specs = panel.episode_specs()
    task = RunTask(run_id=run_id, policy=policy, panel_fingerprint=panel.fingerprint,
                   env=panel.env, env_kwargs=dict(panel.env_kwargs),
                   budget_steps=panel.budget.resolve_steps(_env_dt(panel)))
    records = list(execute_chunk(task, specs))
    with open_store(store_path) as store:
        manifest = new_manifest(panel, policy, run_id, backend="serial", workers=1,
                                policy_hash=None, n_planned=len(specs),
                                command="bench/bench_report.py")
        store.create_run(manifest)
        store.add_episodes(records)
        store.update_run(run_id, status="finished", finished_at=manifest.started_at)
    return run_id


def run(quick: bool = False) -> dict[str, Any]:
    """Build the run, time ``render_html`` on it; returns the result dict (prints nothing)."""
    from evalband.report import render_html

    episodes = 2_000 if quick else EPISODES_PER_CELL
    repeats = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "runs.sqlite"
        t0 = time.perf_counter()
        run_id = build_run(store, episodes)
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        page = render_html([run_id], store)  # warm-up: imports, matplotlib's font cache
        first_s = time.perf_counter() - t0
        times, cpu = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            page = render_html([run_id], store)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    seconds = statistics.median(times)
    return {
        "name": "report_html_100k_episodes" if not quick else "report_html_quick",
        "episodes": 2 * episodes,
        "build_seconds": build_s,
        "first_render_seconds": first_s,
        "median_seconds": seconds,
        "seconds": times,
        "median_cpu_seconds": statistics.median(cpu),
        "load_average_1min": os.getloadavg()[0],
        "repeats": repeats,
        "page_bytes": len(page.encode()),
        "svg_elements": page.count("<svg"),
        "target_seconds": TARGET_SECONDS,
        "ratio": TARGET_SECONDS / seconds,
        "target_ratio": 1.0,
        "passed": bool(seconds < TARGET_SECONDS),
    }


def profile(episodes_per_cell: int = EPISODES_PER_CELL, top: int = 30) -> None:
    """Print where one render spends its time (after a warm-up render)."""
    import cProfile
    import pstats

    from evalband.report import render_html

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "runs.sqlite"
        run_id = build_run(store, episodes_per_cell)
        render_html([run_id], store)
        profiler = cProfile.Profile()
        profiler.enable()
        render_html([run_id], store)
        profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


if __name__ == "__main__":
    if "--profile" in sys.argv[1:]:
        profile()
    else:
        print(run(quick="--quick" in sys.argv[1:]))
