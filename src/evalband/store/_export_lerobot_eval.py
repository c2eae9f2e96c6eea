"""A stored run as lerobot-eval's ``eval_info.json`` (the multi-task layout lerobot writes now).

lerobot's ``src/lerobot/scripts/lerobot_eval.py`` (``eval_policy_all``) writes ``per_task``
(each ``{"task_group", "task_id", "metrics": {"sum_rewards", "max_rewards", "successes",
"video_paths"}}`` with one list entry per episode), ``per_group`` (per task group:
``avg_sum_reward``, ``avg_max_reward``, ``pc_success``, ``n_episodes``, ``video_paths``) and
``overall`` (the same over every episode, with ``eval_s`` and ``eval_ep_s``). This module
writes that layout from a run, so lerobot users' tooling (and evalband's own lerobot importer,
:mod:`evalband.store._import_lerobot`) reads it:

* a **task** is the episode's ``task`` slice when the run has one (a run imported from
  lerobot), else its cell (``""``: the env id); a whole number is written as one (lerobot's
  ``task_id`` is the task's index); the **task group** is the ``task_group`` slice,
  else the run's env id (lerobot's suite name);
* episodes of a task in ``(episode, repeat)`` order; ``successes`` are booleans (a timeout is
  not a success, as in lerobot);
* ``sum_rewards`` / ``max_rewards`` from the episode's ``sum_reward``/``max_reward`` (a lerobot
  import) or ``return``/``reward_max`` metrics (an evalband run), written only when every
  episode of the task has them (lerobot's lists are one value per episode);
* ``video_paths`` from an imported episode's media path when it has one.

An ``error`` episode has no lerobot counterpart (lerobot counts no crashed episode): the run
is refused until its errors are retried or decided.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidInputError

if TYPE_CHECKING:
    from evalband.store._sqlite import RunStore

__all__ = ["eval_info", "export_eval_info"]


def _reward(record: EpisodeRecord, names: tuple[str, str]) -> float | None:
    for name in names:
        value = record.metrics.get(name)
        if value is not None and math.isfinite(value):
            return value
    return None


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else float("nan")


def _aggregate(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    sums = [v for t in tasks for v in t["metrics"].get("sum_rewards", [])]
    maxes = [v for t in tasks for v in t["metrics"].get("max_rewards", [])]
    successes = [v for t in tasks for v in t["metrics"]["successes"]]
    return {"avg_sum_reward": _mean(sums), "avg_max_reward": _mean(maxes),
            "pc_success": _mean([float(s) for s in successes]) * 100.0,
            "n_episodes": len(successes),
            "video_paths": [p for t in tasks for p in t["metrics"]["video_paths"]]}


def eval_info(records: Sequence[EpisodeRecord], env: str) -> dict[str, Any]:
    """The ``eval_info.json`` document of a run's episodes (see the module docstring).

    Raises:
        InvalidInputError: no episodes, or ``error`` episodes.

    >>> r = EpisodeRecord("r", "p", "f", "", 0, 0, 7, "success", True, False, 5,
    ...                   extra={"metrics": {"return": 2.0, "reward_max": 1.0}})
    >>> doc = eval_info([r], "gym_pusht/PushT-v0")
    >>> doc["per_task"][0]["metrics"]["successes"], doc["overall"]["pc_success"]
    ([True], 100.0)
    """
    if not records:
        raise InvalidInputError("the run has no episodes to export")
    errors = sum(1 for r in records if r.outcome is Outcome.ERROR)
    if errors:
        raise InvalidInputError(
            f"the run has {errors} error episode(s), which lerobot's eval_info.json cannot "
            "hold (it has no crashed-episode outcome); retry them (`evalband run PANEL "
            "--run-id RUN --retry-errors`) before exporting")
    tasks: dict[tuple[str, str], list[EpisodeRecord]] = {}
    for record in sorted(records, key=lambda r: (r.cell, r.episode, r.repeat)):
        task = record.slices.get("task", record.cell or env)
        group = record.slices.get("task_group", env)
        tasks.setdefault((group, task), []).append(record)
    per_task: list[dict[str, Any]] = []
    for (group, task), rows in tasks.items():
        metrics: dict[str, Any] = {}
        for key, names in (("sum_rewards", ("sum_reward", "return")),
                           ("max_rewards", ("max_reward", "reward_max"))):
            values = [_reward(r, names) for r in rows]
            if all(v is not None for v in values):
                metrics[key] = values
        metrics["successes"] = [r.success for r in rows]
        metrics["video_paths"] = [str(m["path"]) for r in rows for m in r.media[:1]
                                  if isinstance(m.get("path"), str)]
        task_id: int | str = int(task) if task.isdigit() and str(int(task)) == task else task
        per_task.append({"task_group": group, "task_id": task_id, "metrics": metrics})
    groups = sorted({t["task_group"] for t in per_task})
    wall = [r.wall_s for r in records if r.wall_s is not None]
    overall = _aggregate(per_task)
    overall["eval_s"] = float(sum(wall)) if wall else float("nan")
    overall["eval_ep_s"] = overall["eval_s"] / len(records) if wall else float("nan")
    overall["video_paths"] = overall.pop("video_paths")
    return {"per_task": per_task,
            "per_group": {g: _aggregate([t for t in per_task if t["task_group"] == g])
                          for g in groups},
            "overall": overall}


def _env(panel_yaml: str, fallback: str) -> str:
    from evalband.panel import panel_from_yaml

    try:
        return panel_from_yaml(panel_yaml).env
    except Exception:  # noqa: BLE001 - an imported run's inferred panel may not parse
        return fallback


def export_eval_info(store: RunStore, run_id: str, out_dir: str | Path, *,
                     overwrite: bool = False) -> Path:
    """Write ``out_dir/eval_info.json`` for a stored run; its path.

    Raises:
        InvalidInputError: the file exists (without ``overwrite``), or :func:`eval_info`'s.
        RunNotFoundError: when no such run is stored.
    """
    manifest = store.require_run(run_id)
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InvalidInputError(f"`out_dir` {out_dir} is a file; lerobot-eval's eval_info.json "
                                "is written into a directory: give a directory (new or "
                                "existing)", parameters=("out_dir",))
    out = Path(out_dir) / "eval_info.json"
    if out.exists() and not overwrite:
        raise InvalidInputError(f"{out} exists; pass `overwrite=True` to replace it",
                                parameters=("overwrite",))
    doc = eval_info(store.episode_records(run_id), _env(manifest.panel_yaml, manifest.panel_name))
    from evalband._util.files import write_text_whole

    write_text_whole(out, json.dumps(doc, indent=2) + "\n")  # Ctrl-C: no partial file left
    return out
