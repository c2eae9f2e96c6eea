"""Benchmark: comparisons at the speed of counting, small and large.

* ``small``: :func:`evalband.analysis.compare_many` of 200 vs 200 paired episodes on a
  three-slice panel, in-process (the runs already in memory: no store I/O), median of
  repeated calls with identical results. ``cold_ms`` clears the memoised bands, intervals,
  aggregates and power searches and the runs' kept arrays before every call (the first
  comparison of a session); ``warm_ms`` keeps them (a session comparing again, a report, a
  sweep). ``*_cpu_ms``: the same calls' CPU time (``time.thread_time``), which moves less
  with other processes on a shared machine. The issue's figure for the code
  before this work, measured on this machine, was 15.5 ms.
* ``large``: two stored runs of 100,000 episodes each (two cells of 50,000, every episode
  paired), compared with :func:`evalband.compare` (the store's columns, no per-episode
  Python object) against the record path that came before (``episode_records`` into
  :class:`~evalband.analysis.RunData`, then the same comparison), and the HTML report of
  the comparison (:func:`evalband.report.render_html` of both runs). Both comparisons'
  documents (``comparison_document``) must be equal.

The machine is shared and noisy: the ratio of two paths measured in one run is the figure
to quote. Before this work (issue figures, same VM): 3.5 s for the 100k CLI comparison and
6.9 s for its report. The README's side-by-side "before" figures ran :func:`small` and the
100k ``evalband.compare`` in alternation against a checkout of commit ``ff9b76e`` (the code
before the fast path) at the same load.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PREVIOUS = {"small_ms": 15.5, "large_compare_s": 3.5, "large_report_s": 6.9}
TARGETS = {"small_ms": 2.0, "large_compare_s": 0.5, "large_report_s": 2.0}


def small_runs() -> tuple[Any, Any]:
    """Two in-memory runs of 201 episodes each on a three-value factor, every episode paired."""
    import numpy as np

    from evalband.analysis import RunData
    from evalband.episode import EpisodeRecord
    from evalband.panel import load_panel

    panel = load_panel({"name": "speed3", "env": "evalband/Coin-v0", "episodes": 67,
                        "seed": 0, "budget": {"steps": 1},
                        "factors": {"mass": ["light", "mid", "heavy"]}})

    def build(run_id: str, p: float, seed: int) -> RunData:
        rng = np.random.default_rng(seed)
        recs = [
            EpisodeRecord(run_id=run_id, policy=run_id, panel_fingerprint=panel.fingerprint,
                          cell=cell.key, slices=dict(cell.slices), episode=ep, repeat=0,
                          condition_seed=ep, outcome="success" if ok else "failure",
                          terminated=True, truncated=False, steps=1,
                          time_to_success_s=1.0 + ep / 100 if ok else None)
            for cell in panel.cells() for ep in range(panel.episodes)
            for ok in [bool(rng.random() < p)]
        ]
        return RunData(run_id, run_id, panel.fingerprint, panel, recs)

    return build("base", 0.7, 0), build("cand", 0.62, 1)


def _clear_caches() -> None:
    from evalband.analysis import _compare

    for fn in vars(_compare).values():  # every memoised function of the module (lru_cache)
        if callable(getattr(fn, "cache_clear", None)):
            fn.cache_clear()
    _compare._KEPT_COLUMNS.clear()  # the runs' records are read into arrays again


def small(repeats: int) -> dict[str, Any]:
    """Median milliseconds of the 200 vs 200 comparison, cold and warm caches."""
    from evalband.analysis import compare_many
    from evalband.report import comparison_document

    base, cand = small_runs()
    reference = comparison_document(compare_many(base, [cand])[0])
    cold, warm, cold_cpu, warm_cpu = [], [], [], []
    for _ in range(repeats):
        _clear_caches()
        t0, c0 = time.perf_counter(), time.thread_time()
        out = compare_many(base, [cand])[0]
        cold.append(time.perf_counter() - t0)
        cold_cpu.append(time.thread_time() - c0)
        assert comparison_document(out) == reference
        t0, c0 = time.perf_counter(), time.thread_time()
        out = compare_many(base, [cand])[0]
        warm.append(time.perf_counter() - t0)
        warm_cpu.append(time.thread_time() - c0)
        assert comparison_document(out) == reference
    return {"cold_ms": 1e3 * statistics.median(cold), "warm_ms": 1e3 * statistics.median(warm),
            "cold_cpu_ms": 1e3 * statistics.median(cold_cpu),
            "warm_cpu_ms": 1e3 * statistics.median(warm_cpu),
            "episodes_per_run": len(base.records), "slices": len(reference["slices"])}


def build_large(store_path: Path, per_cell: int) -> tuple[str, str]:
    """Two runs of ``2 * per_cell`` episodes on reach1d-dynamics's two cells, all paired."""
    import numpy as np

    from evalband.episode import EpisodeRecord
    from evalband.panel import load_panel
    from evalband.store import new_manifest, open_store

    panel = load_panel({**load_panel("reach1d-dynamics").model_dump(
        mode="json", exclude_defaults=True), "name": f"speed-{per_cell}", "episodes": per_cell})
    ids = []
    with open_store(store_path) as store:
        for run_id, p, seed in (("large-base", 0.80, 0), ("large-cand", 0.78, 1)):
            rng = np.random.default_rng(seed)
            manifest = new_manifest(panel, f"policy-{run_id}", run_id, backend="serial",
                                    workers=1, policy_hash=None, n_planned=2 * per_cell,
                                    command="bench/bench_compare.py")
            store.create_run(manifest)
            records = []
            for cell in panel.cells():
                ok = rng.random(per_cell) < p
                tts = 0.5 + rng.random(per_cell)
                records.extend(
                    EpisodeRecord(run_id=run_id, policy=f"policy-{run_id}",
                                  panel_fingerprint=panel.fingerprint, cell=cell.key,
                                  slices=dict(cell.slices), episode=ep, repeat=0,
                                  condition_seed=ep, outcome="success" if s else "timeout",
                                  terminated=bool(s), truncated=not s, steps=40,
                                  time_to_success_s=float(t) if s else None)
                    for ep, (s, t) in enumerate(zip(ok.tolist(), tts.tolist(), strict=True)))
            store.add_episodes(records)
            store.update_run(run_id, status="finished", finished_at=manifest.started_at)
            ids.append(run_id)
    return ids[0], ids[1]


def large(per_cell: int, repeats: int) -> dict[str, Any]:
    """Seconds of the columnar comparison, the record path before it, and the report."""
    import evalband
    from evalband.analysis import RunData, compare_many
    from evalband.report import comparison_document, render_html
    from evalband.store import open_store

    def by_records(store_path: Path, base_id: str, cand_id: str) -> Any:
        with open_store(store_path, read_only=True) as st:
            runs = []
            for run_id in (base_id, cand_id):
                loaded = evalband.load_run(run_id, st)
                runs.append(RunData(loaded.run_id, loaded.policy, loaded.panel_fingerprint,
                                    loaded.panel, st.episode_records(run_id),
                                    loaded.errors_as_failures))
        return compare_many(runs[0], [runs[1]])[0]

    with tempfile.TemporaryDirectory() as tmp:
        store_path = Path(tmp) / "runs.sqlite"
        base_id, cand_id = build_large(store_path, per_cell)
        evalband.compare(base_id, cand_id, store=store_path)  # warm-up: imports
        render_html([base_id, cand_id], store_path)  # warm-up: matplotlib's font cache
        columnar, records, report = [], [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fast = evalband.compare(base_id, cand_id, store=store_path)
            columnar.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            slow = by_records(store_path, base_id, cand_id)
            records.append(time.perf_counter() - t0)
            assert comparison_document(fast) == comparison_document(slow), (
                "columnar and record paths differ")
            t0 = time.perf_counter()
            render_html([base_id, cand_id], store_path)
            report.append(time.perf_counter() - t0)
    return {"episodes_per_run": 2 * per_cell, "compare_s": statistics.median(columnar),
            "records_compare_s": statistics.median(records),
            "report_s": statistics.median(report)}


def run(quick: bool = False) -> dict[str, Any]:
    """Both sizes; the result dict of ``bench/run.py``."""
    t0 = time.perf_counter()
    s = small(30 if quick else 200)
    big = large(2_000 if quick else 50_000, 1 if quick else 3)
    passed = (s["warm_ms"] < TARGETS["small_ms"]
              and big["compare_s"] < TARGETS["large_compare_s"]
              and big["report_s"] < TARGETS["large_report_s"])
    return {
        "name": "compare_speed" if not quick else "compare_speed_quick",
        "small": s,
        "large": big,
        "previous": PREVIOUS,
        "targets": TARGETS,
        "small_speedup_vs_previous": PREVIOUS["small_ms"] / s["warm_ms"],
        "large_columnar_vs_records": big["records_compare_s"] / big["compare_s"],
        "ratio": big["records_compare_s"] / big["compare_s"],
        "target_ratio": 1.0,
        "passed": bool(passed),
        "load_average_1min": os.getloadavg()[0],
        "bench_seconds": time.perf_counter() - t0,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run("--quick" in sys.argv), indent=2))
