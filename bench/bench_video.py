"""Benchmark: filming 20 % of a PushT panel's episodes (``run --record sample:K``) vs not.

Both paths are a whole ``run_panel`` call on the serial backend into a temporary store, on
the same PushT panel (``start: [train, held_out]``, budget 200 steps, ``pusht:expert``):

* plain: no recording;
* filmed: ``record_video="sample:K"`` with K = 20 % of the episodes: the env is made with
  ``render_mode="rgb_array"`` and draws a 96x96 frame after ``reset`` and after every step of
  the chosen episodes; each clip is encoded to MP4 (H.264, PyAV) in the worker and stored by
  its sha256 beside the store. Frames stream to an encoder process forked for the run's chunk
  (the default, ``filmed``) or, the older path, to an encoder thread of the playing process
  (``filmed_thread``, ``EVALBAND_VIDEO_ENCODER=thread``).

The three paths are interleaved, each round in a rotated order so that every path runs
first, second and third equally often. The figure is ``filmed / plain - 1``, the median of
the rounds' wall-time ratios, target <= 15 %; ``filmed_thread / plain - 1`` beside it. Also
reported for both: the same on the playing process's CPU time (every thread of it; the
encoder process's CPU is reported apart, as ``encoder_cpu_s``), on the playing thread's CPU
time alone, and the time filming took per filmed frame (the records' ``extra["media_ms"]``:
drawing and encoding, the latter in the encoder) against a plain run's time per step.
Outcomes and step counts must be identical (filming does not change what happens), every
sampled episode must have one clip of ``steps + 1`` frames, and the encoder process and the
encoder thread must write the same clips, byte for byte.
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from evalband.envs.pusht import ENV_ID
from evalband.panel import Panel, load_panel
from evalband.run import _encproc, run_panel
from evalband.store import RunStore, open_store
from evalband.store._media import media_dir

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


PATHS = ("plain", "filmed", "filmed_thread")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # reaped children: the encoders
    return usage.ru_utime + usage.ru_stime


def _timed_run(
    store: RunStore, panel: Panel, run_id: str, record: str | None, mode: str = "process"
) -> tuple[float, float, float, float]:
    """(wall s, this process's CPU s, the playing thread's CPU s, the encoder's CPU s)."""
    _encproc.MODE = mode
    try:
        w0, c0, t0, e0 = (time.perf_counter(), time.process_time(), time.thread_time(),
                          _children_cpu())
        run_panel(panel, POLICY, store, run_id=run_id, record_video=record)
        return (time.perf_counter() - w0, time.process_time() - c0, time.thread_time() - t0,
                _children_cpu() - e0)
    finally:
        _encproc.MODE = "process"


def _overhead(values: dict[str, list[float]], path: str) -> float:
    """Median over rounds of ``path / plain`` (same round), minus one."""
    return statistics.median(
        f / p for f, p in zip(values[path], values["plain"], strict=True)) - 1.0


def _played(store: RunStore, run_id: str) -> list[tuple[Any, str, int]]:
    return sorted((r.key, r.outcome.value, r.steps) for r in store.episode_records(run_id))


def run(quick: bool = False) -> dict[str, Any]:
    """Time plain and filmed runs, paired; returns the result dict."""
    per_cell = 5 if quick else 50
    repeats = 3 if quick else 6
    panel = pusht_panel(per_cell)
    n = len(panel.episode_specs())
    sample = f"sample:{round(SHARE * n)}"
    times: dict[str, list[float]] = {p: [] for p in PATHS}
    cpu: dict[str, list[float]] = {p: [] for p in PATHS}
    main: dict[str, list[float]] = {p: [] for p in PATHS}
    encoder: dict[str, list[float]] = {p: [] for p in PATHS}
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "bench.sqlite") as store:
        for mode in ("process", "thread"):  # imports, PyAV
            _timed_run(store, pusht_panel(2), f"warm-up-{mode}", "all", mode)
        for r in range(repeats):
            order = PATHS[r % 3:] + PATHS[: r % 3]
            for path in order:
                record = None if path == "plain" else sample
                mode = "thread" if path == "filmed_thread" else "process"
                wall, used, played, enc = _timed_run(store, panel, f"{path}-{r}", record, mode)
                times[path].append(wall)
                cpu[path].append(used)
                main[path].append(played)
                encoder[path].append(enc)
        reference = _played(store, "plain-0")
        identical = all(_played(store, f"{p}-{r}") == reference
                        for p in times for r in range(repeats))
        filmed = [rec for rec in store.episode_records("filmed-0") if rec.media]
        by_thread = {rec.key: rec.media[0]["sha256"]
                     for rec in store.episode_records("filmed_thread-0") if rec.media}
        clips_ok = len(filmed) == round(SHARE * n) and all(
            rec.media[0]["frames"] == rec.steps + 1 for rec in filmed)
        # the encoder process and the encoder thread write the same bytes
        same_clips = by_thread == {rec.key: rec.media[0]["sha256"] for rec in filmed}
        clip_bytes = [int(rec.media[0]["bytes"]) for rec in filmed]
        cost = []  # filming's own time (drawing + encoding) per frame, inside each filmed run
        for r in range(repeats):
            records = [rec for rec in store.episode_records(f"filmed-{r}") if rec.media]
            media_ms = sum(float(rec.extra.get("media_ms", 0.0)) for rec in records)
            cost.append(media_ms / max(1, sum(rec.steps + 1 for rec in records)))
        stored = len(list(media_dir(store.path).glob("*.mp4")))
    pairs = [f / p for f, p in zip(times["filmed"], times["plain"], strict=True)]
    overhead = _overhead(times, "filmed")
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
        "filmed_thread_s": statistics.median(times["filmed_thread"]),
        "record_overhead": overhead,
        "record_overhead_thread": _overhead(times, "filmed_thread"),
        "record_overhead_pairs": [round(x - 1.0, 4) for x in pairs],
        "record_overhead_min": min(times["filmed"]) / min(times["plain"]) - 1.0,
        # drawing + encoding time per filmed frame (the records' media_ms), and a plain run's
        # time per step, both medians: what one filmed step costs against one step
        "film_ms_per_frame": statistics.median(cost),
        "plain_ms_per_step": 1000.0 * statistics.median(times["plain"]) / steps,
        # this process's CPU time (user + system, every thread): little changed by other load
        # (the playing process's, without its encoder process)
        "record_overhead_cpu": _overhead(cpu, "filmed"),
        "record_overhead_cpu_thread": _overhead(cpu, "filmed_thread"),
        # the playing thread's CPU time alone: what the run's wall time grows by when a
        # second core is free for the encoder (and, with a thread, the GIL lets it be)
        "record_overhead_playing_thread_cpu": _overhead(main, "filmed"),
        "record_overhead_playing_thread_cpu_thread": _overhead(main, "filmed_thread"),
        # CPU seconds of the encoder processes (reaped children) per filmed run
        "encoder_cpu_s": statistics.median(encoder["filmed"]),
        "clip_kb_median": statistics.median(clip_bytes) / 1000.0 if clip_bytes else None,
        "clips_stored": stored,
        "ratio": 1.0 / (1.0 + overhead),
        "target_ratio": 1.0 / (1.0 + TARGET_OVERHEAD),
        "target_overhead": TARGET_OVERHEAD,
        "identical": identical,
        "clips_ok": clips_ok,
        "same_clips_thread_and_process": same_clips,
        "passed": bool(identical and clips_ok and same_clips and overhead <= TARGET_OVERHEAD),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
