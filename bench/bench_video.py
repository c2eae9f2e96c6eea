"""Benchmark: filming 20 % of a PushT panel's episodes (``run --record sample:K``) vs not.

Both paths are a whole ``run_panel`` call on the serial backend into a temporary store, on
the same PushT panel (``start: [train, held_out]``, budget 200 steps, ``pusht:expert``):

* plain: no recording;
* filmed: ``record_video="sample:K"`` with K = 20 % of the episodes: the env is made with
  ``render_mode="rgb_array"`` and draws a 96x96 frame after ``reset`` and after every step of
  the chosen episodes; each clip is encoded to MP4 (H.264, PyAV) in the worker and stored by
  its sha256 beside the store. Frames stream to an encoder thread while the episode plays
  (PyAV converts and encodes with the GIL released).

The figure is ``filmed / plain - 1``, the median of paired wall-time ratios (the two paths
interleaved ABBA so a pair shares the machine's state), target <= 15 %. Also reported: the
same on this process's CPU time (every thread), on the playing thread's CPU time alone (the
wall-time overhead to expect when a second core is free for the encoder), and the time
filming took per filmed frame (the records' ``extra["media_ms"]``: drawing and encoding, the
latter on the encoder thread) against a plain run's time per step. Outcomes and step counts
must be identical (filming does not change what happens), and every sampled episode must
have one clip of ``steps + 1`` frames.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from evalband.envs.pusht import ENV_ID
from evalband.panel import Panel, load_panel
from evalband.run import _execute, run_panel
from evalband.store import RunStore, media_dir, open_store

TARGET_OVERHEAD = 0.15
SHARE = 0.2
POLICY = "pusht:expert"
BUDGET = 200
SIZE = 96


def pusht_panel(episodes: int, seed: int = 0) -> Panel:
    return load_panel({
        "name": "bench-video",
        "env": ENV_ID,
        "env_kwargs": {"render_size": SIZE},
        "episodes": episodes,
        "seed": seed,
        "budget": {"steps": BUDGET},
        "factors": {"start": ["train", "held_out"]},
    })


def _timed_run(
    store: RunStore, panel: Panel, run_id: str, record: str | None
) -> tuple[float, float, float]:
    """(wall seconds, this process's CPU seconds, the playing thread's CPU seconds)."""
    _execute._CACHE.clear()  # build the env and policy inside the run, as a fresh process
    w0, c0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
    run_panel(panel, POLICY, store, run_id=run_id, record_video=record)
    return time.perf_counter() - w0, time.process_time() - c0, time.thread_time() - t0


def _played(store: RunStore, run_id: str) -> list[tuple[Any, str, int]]:
    return sorted((r.key, r.outcome.value, r.steps) for r in store.episode_records(run_id))


def run(quick: bool = False) -> dict[str, Any]:
    """Time plain and filmed runs, paired; returns the result dict."""
    per_cell = 5 if quick else 50
    repeats = 2 if quick else 7
    panel = pusht_panel(per_cell)
    n = len(panel.episode_specs())
    sample = f"sample:{round(SHARE * n)}"
    times: dict[str, list[float]] = {"plain": [], "filmed": []}
    cpu: dict[str, list[float]] = {"plain": [], "filmed": []}
    main: dict[str, list[float]] = {"plain": [], "filmed": []}
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "bench.sqlite") as store:
        _timed_run(store, pusht_panel(2), "warm-up", "all")  # imports, PyAV, MuJoCo
        for r in range(repeats):
            order = ("plain", "filmed") if r % 2 == 0 else ("filmed", "plain")
            for path in order:
                record = sample if path == "filmed" else None
                wall, used, played = _timed_run(store, panel, f"{path}-{r}", record)
                times[path].append(wall)
                cpu[path].append(used)
                main[path].append(played)
        reference = _played(store, "plain-0")
        identical = all(_played(store, f"{p}-{r}") == reference
                        for p in times for r in range(repeats))
        filmed = [rec for rec in store.episode_records("filmed-0") if rec.media]
        clips_ok = len(filmed) == round(SHARE * n) and all(
            rec.media[0]["frames"] == rec.steps + 1 for rec in filmed)
        clip_bytes = [int(rec.media[0]["bytes"]) for rec in filmed]
        cost = []  # filming's own time (drawing + encoding) per frame, inside each filmed run
        for r in range(repeats):
            records = [rec for rec in store.episode_records(f"filmed-{r}") if rec.media]
            media_ms = sum(float(rec.extra.get("media_ms", 0.0)) for rec in records)
            cost.append(media_ms / max(1, sum(rec.steps + 1 for rec in records)))
        stored = len(list(media_dir(store.path).glob("*.mp4")))
    pairs = [f / p for f, p in zip(times["filmed"], times["plain"], strict=True)]
    overhead = statistics.median(pairs) - 1.0
    steps = sum(s for _, _, s in reference)
    return {
        "name": "video_record_20pct_pusht",
        "episodes": n,
        "filmed_episodes": len(filmed),
        "steps": steps,
        "frame_size": SIZE,
        "repeats": repeats,
        "plain_s": statistics.median(times["plain"]),
        "filmed_s": statistics.median(times["filmed"]),
        "record_overhead": overhead,
        "record_overhead_pairs": [round(x - 1.0, 4) for x in pairs],
        "record_overhead_min": min(times["filmed"]) / min(times["plain"]) - 1.0,
        # drawing + encoding time per filmed frame (the records' media_ms), and a plain run's
        # time per step, both medians: what one filmed step costs against one step
        "film_ms_per_frame": statistics.median(cost),
        "plain_ms_per_step": 1000.0 * statistics.median(times["plain"]) / steps,
        # this process's CPU time (user + system, every thread): little changed by other load
        "record_overhead_cpu": statistics.median(
            f / p for f, p in zip(cpu["filmed"], cpu["plain"], strict=True)) - 1.0,
        # the playing thread's CPU time alone (encoding runs on another thread, the GIL
        # released): what the run's wall time grows by when a second core is free
        "record_overhead_playing_thread_cpu": statistics.median(
            f / p for f, p in zip(main["filmed"], main["plain"], strict=True)) - 1.0,
        "clip_kb_median": statistics.median(clip_bytes) / 1000.0 if clip_bytes else None,
        "clips_stored": stored,
        "ratio": 1.0 / (1.0 + overhead),
        "target_ratio": 1.0 / (1.0 + TARGET_OVERHEAD),
        "target_overhead": TARGET_OVERHEAD,
        "identical": identical,
        "clips_ok": clips_ok,
        "passed": bool(identical and clips_ok and overhead <= TARGET_OVERHEAD),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
