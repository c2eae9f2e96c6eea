"""``evalband export SESSION --format lerobot``: a robot session's trials as a LeRobotDataset.

Written with lerobot's own writer (``LeRobotDataset.create``, ``add_frame``, ``save_episode``,
``finalize``), so lerobot's tools (its dataset class, visualiser, training scripts) read it.
Each confirmed trial with a clip becomes one episode; each frame of its clip (the policy
phase and the stress) one dataset frame:

* ``observation.images.<camera>``: the clip's frame, decoded, stored losslessly (``image``
  features, PNG): the dataset's frames are the clip's, pixel for pixel;
* ``observation.state`` / ``action``: the measured motors and the goals sent at that step
  (names: the robot's motors, from the step data), as ``hw_to_dataset_features`` names them
  for a robot;
* ``evalband.step``: ``[t, phase]``, the seconds into the trial on the loop's clock and the
  phase (0 policy, 1 stress), from the step data.

Timestamps are ``frame_index / fps`` (lerobot's convention; the real step times are in
``evalband.step``). ``meta/evalband_trials.json`` maps each episode to its trial: index, scene,
attempt, the policy's label (its blind code in a blinded session), score, suggestion and
operator. A blinded session is exported only when no trial is pending (or with ``unblind``,
which is still only codes: the dataset never names a blinded policy).
"""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evalband.errors import InvalidInputError

__all__ = ["ExportedDataset", "clip_frames", "export_lerobot", "step_table"]

PHASES = {"policy": 0, "stress": 1}


@dataclass(frozen=True)
class ExportedDataset:
    """What :func:`export_lerobot` wrote.

    Attributes:
        root: the dataset directory.
        repo_id: its lerobot repo id.
        episodes: episodes written (one per trial with a clip).
        frames: frames written.
        skipped: trials left out (no clip: skipped, or scored without a robot).
    """

    root: Path
    repo_id: str
    episodes: int
    frames: int
    skipped: int


def clip_frames(data: bytes) -> list[np.ndarray]:
    """The RGB frames of a stored clip (MP4/WebM bytes), decoded with PyAV."""
    import av

    frames: list[np.ndarray] = []
    container: Any
    with av.open(io.BytesIO(data)) as container:
        for frame in container.decode(video=0):
            frames.append(frame.to_ndarray(format="rgb24"))
    return frames


def step_table(data: bytes) -> dict[str, np.ndarray]:
    """A trial's stored step data (Parquet bytes) as named columns."""
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    return {name: table.column(name).to_numpy(zero_copy_only=False)
            for name in table.column_names}


def _media(store_path: Path, refs: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    from evalband.store._media import media_file

    for ref in refs:
        if ref.get("kind") == kind:
            path = media_file(store_path, ref)
            if path is not None:
                return {**ref, "data": path.read_bytes()}
    return None


def export_lerobot(store_path: str | Path, session_id: str, out: str | Path, *,
                   repo_id: str | None = None, overwrite: bool = False) -> ExportedDataset:
    """Write the session's played, confirmed trials as a LeRobotDataset at ``out``.

    Raises:
        InvalidInputError: lerobot not installed here, ``out`` exists (without
            ``overwrite``), a blinded session with pending trials, or no trial with a clip.
        SessionNotFoundError: unknown session.
    """
    try:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
        from lerobot.datasets.utils import hw_to_dataset_features
    except ModuleNotFoundError:
        raise InvalidInputError(
            "the lerobot format is written with lerobot's own dataset writer, and lerobot is "
            "not installed in this Python; run evalband from lerobot's venv "
            "(`.venv-lerobot/bin/evalband export ...`)") from None
    from evalband.session._store import SessionStore

    store_path = Path(store_path)
    target = Path(out)
    with SessionStore(store_path, read_only=True) as ss:
        plan = ss.plan(session_id)
        records = ss.records(session_id)
    pending = plan.n_trials - len(records)
    if plan.blind and pending:
        raise InvalidInputError(
            f"session {session_id!r} is blinded and {pending} trials are pending; export it "
            "when every trial is recorded")
    played = [r for r in records if r.play and r.play.get("media")]
    if not played:
        raise InvalidInputError(f"session {session_id!r} has no trial played on a robot with "
                                "a clip; nothing to export")
    if target.exists():
        if not overwrite:
            raise InvalidInputError(f"{target} exists; choose a new `out` or pass "
                                    "`overwrite=True`", parameters=("out", "overwrite"))
        shutil.rmtree(target)
    episodes: list[tuple[Any, list[np.ndarray], dict[str, np.ndarray], dict[str, Any]]] = []
    for record in played:
        refs = list(record.play["media"])  # type: ignore[index]
        clip = _media(store_path, refs, "video")
        steps = _media(store_path, refs, "steps")
        if clip is None or steps is None:
            continue
        episodes.append((record, clip_frames(clip["data"]), step_table(steps["data"]), clip))
    if not episodes:
        raise InvalidInputError(f"session {session_id!r}: the clips of its trials are missing "
                                f"from {store_path.parent / 'media'}")
    first_steps = episodes[0][2]
    state_names = [k[len("obs."):] for k in first_steps if k.startswith("obs.")]
    action_names = [k[len("action."):] for k in first_steps if k.startswith("action.")]
    camera = str(episodes[0][3].get("camera") or "camera")
    height, width = episodes[0][1][0].shape[:2]
    fps = int(round(float(episodes[0][3].get("fps") or 30)))
    features = {
        **hw_to_dataset_features({**dict.fromkeys(action_names, float)}, "action",
                                 use_video=False),
        **hw_to_dataset_features({**dict.fromkeys(state_names, float),
                                  camera: (height, width, 3)}, "observation", use_video=False),
        # one vector: lerobot 0.4's writer cannot encode shape-(1,) columns under numpy 2.4
        "evalband.step": {"dtype": "float32", "shape": (2,), "names": ["t", "phase"]},
    }
    repo = repo_id or f"evalband/{session_id}"
    robot = str(played[0].play.get("robot") or "robot")  # type: ignore[union-attr]
    dataset = LeRobotDataset.create(repo, fps=fps, features=features, root=target,
                                    robot_type=robot, use_videos=False)
    task = str((plan.instrument or {}).get("task") or f"evalband session {session_id}")
    index: list[dict[str, Any]] = []
    frames_written = 0
    for record, frames, steps, _ in episodes:
        rows = np.flatnonzero(steps["frame"] >= 0)
        if len(rows) != len(frames):
            raise InvalidInputError(
                f"trial {record.trial_index + 1}: its clip has {len(frames)} frames and its "
                f"step data {len(rows)} filmed steps; the stored media do not match")
        for row, image in zip(rows, frames, strict=True):
            dataset.add_frame({
                "observation.state": np.array([steps[f"obs.{k}"][row] for k in state_names],
                                              dtype=np.float32),
                "action": np.array([steps[f"action.{k}"][row] for k in action_names],
                                   dtype=np.float32),
                f"observation.images.{camera}": image,
                "evalband.step": np.array([steps["t"][row],
                                           PHASES.get(str(steps["phase"][row]), -1)],
                                          dtype=np.float32),
                "task": task,
            })
        dataset.save_episode()
        trial = plan.trials[record.trial_index]
        play = record.play or {}
        index.append({"episode_index": len(index), "trial_index": record.trial_index,
                      "scene": trial.scene, "attempt": trial.attempt,
                      "policy": plan.label(trial.policy), "score": record.score,
                      "suggestion": play.get("suggestion"), "operator": play.get("operator"),
                      "frames": len(frames)})
        frames_written += len(frames)
    dataset.finalize()
    (target / "meta" / "evalband_trials.json").write_text(
        json.dumps({"session_id": session_id, "blind": plan.blind, "episodes": index},
                   indent=1))
    return ExportedDataset(target, repo, len(index), frames_written,
                           len(records) - len(index))
