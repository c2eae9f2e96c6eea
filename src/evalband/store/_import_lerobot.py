"""Reading lerobot-eval's ``eval_info.json`` (both of its layouts) into raw rows.

lerobot's layouts are those ``src/lerobot/scripts/lerobot_eval.py`` (huggingface/lerobot)
writes: ``eval_policy`` returns ``per_episode`` (``episode_ix``, ``sum_reward``, ``max_reward``,
``success``, ``seed``), ``aggregated`` and, when rendering, a top-level ``video_paths`` of
``eval_episode_<i>.mp4`` for the first episodes in order; ``eval_policy_all`` writes
``per_task`` entries whose ``metrics`` hold per-episode lists (``sum_rewards``,
``max_rewards``, ``successes``, ``video_paths``) and no seeds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from evalband.store._import_read import (
    _NOTHING,
    _READERS,
    _as_bool,
    _as_count,
    _as_label,
    _Bad,
    _fail,
    _missing,
    _Raw,
    _read_text,
    _Table,
    _Text,
)

__all__ = ["LEROBOT_PAIRING", "LEROBOT_SEED_PAIRING"]

LEROBOT_PAIRING = "episode index within task (lerobot records no per-episode seeds)"
"""What an imported lerobot run's episodes pair by (kept in the manifest's ``extra``)."""

LEROBOT_SEED_PAIRING = "episode seed (lerobot's per-episode seed; a repeated seed is a repeat)"
"""What an imported single-task lerobot run with per-episode seeds pairs by."""

# lerobot per-task metric lists kept per episode in ``extra`` (list name -> extra key).
_LEROBOT_LISTS: dict[str, str] = {
    "sum_rewards": "sum_reward",
    "max_rewards": "max_reward",
    "safety_costs": "safety_cost",
    "violation_steps": "violation_steps",
    "constraint_violations": "constraint_violations",
}



def _read_lerobot(path: Path) -> _Table:
    try:
        doc = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise _fail(
            path,
            f"line {exc.lineno}, character {exc.colno}",
            None,
            "a complete lerobot eval_info.json (JSON)",
            _Text(f"invalid JSON ({exc.msg})"),
        ) from None
    if not isinstance(doc, dict):
        raise _fail(path, "top level", None, "a JSON object", _Text(type(doc).__name__))
    if isinstance(doc.get("per_task"), list):
        table = _lerobot_per_task(path, doc["per_task"])
        summary, summary_name = doc.get("overall"), "overall"
    elif isinstance(doc.get("per_episode"), list):
        table = _lerobot_per_episode(path, doc["per_episode"], doc.get("video_paths"))
        summary, summary_name = doc.get("aggregated"), "aggregated"
    else:
        raise _fail(
            path,
            "top level",
            "per_task",
            "a 'per_task' list (multi-task lerobot-eval) or a 'per_episode' list",
            _Text("keys " + (", ".join(repr(k) for k in doc) or "none")),
        )
    _check_pc_success(path, table, summary, summary_name)
    table.manifest_extra.setdefault("pairing", LEROBOT_PAIRING)
    return table


def _lerobot_success(path: Path, value: Any, where: str, column: str) -> bool:
    try:
        return _as_bool(value)
    except _Bad as bad:
        raise _fail(path, where, column, bad.expected, bad.got) from None


def _lerobot_per_task(path: Path, tasks: list[Any]) -> _Table:
    rows: list[_Raw] = []
    seen: dict[tuple[str | None, str], str] = {}
    with_group: bool | None = None
    for index, entry in enumerate(tasks):
        where = f"per_task[{index}]"
        if not isinstance(entry, dict):
            raise _fail(path, where, None, "an object with task_id and metrics", entry)
        if "task_id" not in entry or _missing(entry["task_id"]):
            raise _fail(path, where, "task_id", "a task id", _NOTHING)
        has_group = "task_group" in entry and not _missing(entry["task_group"])
        if with_group is None:
            with_group = has_group
        elif has_group != with_group:
            raise _fail(
                path, where, "task_group", "a task_group on every task or on none", _NOTHING
            )
        try:
            task = _as_label(entry["task_id"])
            group = _as_label(entry["task_group"]) if has_group else None
        except _Bad as bad:
            raise _fail(path, where, "task_id", bad.expected, bad.got) from None
        label = task if group is None else f"{group}/{task}"
        if (group, task) in seen:
            raise _fail(
                path,
                where,
                "task_id",
                f"each task once (task {label} is also {seen[group, task]})",
                label,
            )
        seen[group, task] = where
        metrics = entry.get("metrics")
        if not isinstance(metrics, dict):
            raise _fail(path, f"task {label}", "metrics", "an object of per-episode lists", metrics)
        successes = metrics.get("successes")
        if not isinstance(successes, list) or not successes:
            raise _fail(
                path,
                f"task {label}",
                "metrics.successes",
                "a non-empty list of 0/1 or true/false",
                _NOTHING if successes is None else successes,
            )
        lists: dict[str, list[Any]] = {}
        for name in _LEROBOT_LISTS:
            values = metrics.get(name)
            if values is None:
                continue
            if not isinstance(values, list) or len(values) != len(successes):
                got = _Text(f"{len(values)} values") if isinstance(values, list) else values
                raise _fail(
                    path,
                    f"task {label}",
                    f"metrics.{name}",
                    f"a list of {len(successes)} values (one per episode, as successes)",
                    got,
                )
            lists[name] = values
        # lerobot renders the first ``max_episodes_rendered`` episodes of a task, in order.
        videos = _video_list(path, f"task {label}", metrics.get("video_paths"))
        for episode, value in enumerate(successes):
            at = f"task {label}, episode {episode}"
            success = _lerobot_success(path, value, at, "metrics.successes")
            values_: dict[str, Any] = {"success": success, "episode": episode, "slice.task": task}
            if group is not None:
                values_["slice.task_group"] = group
            extra = {_LEROBOT_LISTS[name]: lst[episode] for name, lst in lists.items()}
            metrics = _numbers(extra)
            if metrics:
                extra["metrics"] = metrics
            media = [str(videos[episode])] if episode < len(videos) else []
            rows.append(_Raw(at, values_, extra, media=media))
    if not rows:
        raise _fail(path, "per_task", None, "at least one task", _Text("an empty list"))
    columns = ["success", "episode", "slice.task"] + (["slice.task_group"] if with_group else [])
    order = (["task_group"] if with_group else []) + ["task"]
    return _Table(rows, columns, factor_order=order)


def _lerobot_per_episode(path: Path, episodes: list[Any], video_paths: Any) -> _Table:
    """The older single-task layout; a per-episode ``seed`` is the episode's condition.

    With seeds, episodes are numbered by their distinct seeds in increasing order and an
    episode whose seed came before is a repeat of that condition, so two evaluations with the
    same seeds pair seed by seed; without seeds, by ``episode_ix``.
    """
    rows: list[_Raw] = []
    videos = _video_list(path, "top level", video_paths)
    for index, entry in enumerate(episodes):
        where = f"per_episode[{index}]"
        if not isinstance(entry, dict):
            raise _fail(path, where, None, "an object with episode_ix and success", entry)
        raw_ix = entry.get("episode_ix", index)
        try:
            episode = index if raw_ix is None else _as_count(raw_ix)
        except _Bad as bad:
            raise _fail(path, where, "episode_ix", bad.expected, bad.got) from None
        at = f"episode {episode}"
        if "success" not in entry or entry["success"] is None:
            raise _fail(path, at, "success", "0/1 or true/false", _NOTHING)
        success = _lerobot_success(path, entry["success"], at, "success")
        extra = {k: v for k, v in entry.items() if k not in ("episode_ix", "success")}
        metrics = _numbers({k: v for k, v in extra.items() if k != "seed"})
        if metrics:
            extra["metrics"] = metrics
        values: dict[str, Any] = {"success": success, "episode": episode}
        labels = {"episode": "episode_ix"}
        if entry.get("seed") is not None:
            try:
                values["condition_seed"] = _as_count(entry["seed"])
            except _Bad as bad:
                raise _fail(path, at, "seed", bad.expected, bad.got) from None
        media = [str(videos[index])] if index < len(videos) else []
        rows.append(_Raw(at, values, extra, labels, media=media))
    if not rows:
        raise _fail(path, "per_episode", None, "at least one episode", _Text("an empty list"))
    seeded = [row for row in rows if "condition_seed" in row.values]
    if seeded and len(seeded) != len(rows):
        first = next(row for row in rows if "condition_seed" not in row.values)
        raise _fail(path, first.where, "seed", "a seed on every episode or on none", _NOTHING)
    table = _Table(rows, ["success", "episode"], factor_order=[])
    if seeded:
        distinct = sorted({r.values["condition_seed"] for r in rows})
        order = {seed: i for i, seed in enumerate(distinct)}
        seen: dict[int, int] = {}
        for row in rows:
            seed = row.values["condition_seed"]
            row.values["episode"] = order[seed]
            row.values["repeat"] = seen.get(seed, 0)
            seen[seed] = row.values["repeat"] + 1
            row.labels = {"episode": "seed", "repeat": "seed"}
        table.external_seeds = True
        table.manifest_extra["pairing"] = LEROBOT_SEED_PAIRING
    return table


def _numbers(values: dict[str, Any]) -> dict[str, float]:
    """The finite numbers among ``values`` (booleans as 0/1): an episode's metrics."""
    out: dict[str, float] = {}
    for name, value in values.items():
        if isinstance(value, bool | int | float) and math.isfinite(float(value)):
            out[name] = float(value)
    return out


def _video_list(path: Path, where: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, where, "video_paths", "a list of file paths", value)
    return list(value)


def _check_pc_success(path: Path, table: _Table, summary: Any, name: str) -> None:
    """Cross-check lerobot's own aggregate success rate against the per-episode list."""
    if not isinstance(summary, dict) or not isinstance(summary.get("pc_success"), int | float):
        return
    stated = float(summary["pc_success"])
    if math.isnan(stated):
        return
    rate = 100.0 * sum(bool(r.values["success"]) for r in table.rows) / len(table.rows)
    if abs(rate - stated) > 1e-6 * max(1.0, abs(stated)):
        raise _fail(
            path, name, "pc_success", f"{rate!r} (the per-episode successes' rate, in %)", stated
        )


_READERS["lerobot"] = _read_lerobot
