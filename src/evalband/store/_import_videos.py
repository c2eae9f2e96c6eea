"""Which video of an imported evaluation shows which episode (LIBERO logs, ManiSkill JSON).

Neither source lists its videos in the results file; both write them by a fixed rule:

- **LIBERO** (openpi's ``examples/libero/main.py``, Physical-Intelligence/openpi): after each
  episode the client writes ``<video_out_path>/rollout_<task, spaces as _>_<success|failure>.mp4``
  (``video_out_path`` defaults to ``data/libero/videos``, relative to where the client ran);
  newer versions log ``Saving video to <path> (...)`` first. The name has no episode number,
  so each episode overwrites the previous one's of the same task and outcome: a file shows
  the **last** episode of its task and outcome, and is attached to that episode only.
- **ManiSkill** (``RecordEpisode`` in ``mani_skill/utils/wrappers/record.py``,
  haosulab/ManiSkill): with one env (``num_envs`` 1) the video of every episode is flushed
  at the next reset as ``<output_dir>/<video id>.mp4`` (``images_to_video`` in
  ``mani_skill/utils/visualization/misc.py``), beside ``<trajectory>.json``; video ids and
  episode ids both count the non-empty episodes from 0, so episode ``i`` is ``i.mp4``. With
  several GPU-parallel envs the frames of all envs are tiled into one video cut every
  ``max_steps_per_video`` steps, which shows no single episode: those are not attached.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evalband.store._import_read import _Raw

__all__ = ["LIBERO_SAVED", "attach_libero_videos", "attach_maniskill_videos"]

LIBERO_SAVED = re.compile(r"Saving video to (.+?\.mp4)(?: \(|\s*$)")
"""The line newer openpi LIBERO clients log before writing an episode's video."""

LIBERO_VIDEO_DIRS = (".", "videos", "data/libero/videos")
"""Where a LIBERO log's videos are looked for, relative to the log's folder (the client's
default ``video_out_path`` is ``data/libero/videos``)."""


def libero_video_name(task: str, success: bool) -> str:
    """The file name openpi's LIBERO client gives an episode's video.

    >>> libero_video_name("open the top drawer", False)
    'rollout_open_the_top_drawer_failure.mp4'
    """
    return f"rollout_{task.replace(' ', '_')}_{'success' if success else 'failure'}.mp4"


def attach_libero_videos(path: Path, rows: list[_Raw], logged: list[str | None]) -> int:
    """Name each (task, outcome)'s last episode's video in its row; how many were named.

    ``logged`` holds, per row, the path a ``Saving video to`` line gave (``None`` when the
    client did not log one: then the file is looked for in :data:`LIBERO_VIDEO_DIRS`).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> rows = [_Raw(f"line {i}", {"slice.task": "open it", "outcome": "timeout"})
    ...         for i in range(2)]
    >>> _ = (d / "rollout_open_it_failure.mp4").write_bytes(b"clip")
    >>> attach_libero_videos(d / "eval.log", rows, [None, None]), [r.media for r in rows]
    (1, [[], ['rollout_open_it_failure.mp4']])
    """
    last: dict[str, int] = {}
    for index, row in enumerate(rows):
        name = logged[index] or libero_video_name(
            str(row.values["slice.task"]), row.values["outcome"] == "success"
        )
        last[name] = index  # a later episode overwrote the file
    base = path.parent
    named = 0
    for name, index in last.items():
        if logged[index] is not None:
            rows[index].media = [name]  # the source named it: kept even when missing
            named += 1
            continue
        for folder in LIBERO_VIDEO_DIRS:
            if (base / folder / name).is_file():
                rows[index].media = [(Path(folder) / name).as_posix()]
                named += 1
                break
    return named


def attach_maniskill_videos(path: Path, rows: list[_Raw], env_info: dict[str, Any]) -> str | None:
    """Name ``<episode_id>.mp4`` beside the JSON in each row that has one; a note, or ``None``.

    The note says why videos found there were not attached (parallel envs).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "1.mp4").write_bytes(b"clip")
    >>> rows = [_Raw(f"episodes[{i}]", {}, {"episode_id": i}) for i in range(2)]
    >>> attach_maniskill_videos(d / "trajectory.json", rows, {}), [r.media for r in rows]
    (None, [[], ['1.mp4']])
    """
    kwargs = env_info.get("env_kwargs")
    num_envs = kwargs.get("num_envs", 1) if isinstance(kwargs, dict) else 1
    base = path.parent
    if num_envs not in (None, 1):
        if any(base.glob("[0-9]*.mp4")):
            return (f"videos not attached: recorded with {num_envs} parallel envs, ManiSkill "
                    "tiles them into one video per max_steps_per_video steps")
        return None
    for row in rows:
        episode_id = row.extra.get("episode_id")
        if isinstance(episode_id, int) and not isinstance(episode_id, bool):
            if (base / f"{episode_id}.mp4").is_file():
                row.media = [f"{episode_id}.mp4"]
    return None
