"""Step data recorded while an episode is played (``evalband run --record-steps``).

One :class:`StepRecorder` per episode: the player calls :meth:`StepRecorder.add` after every
``env.step`` with the action, the reward and the info. At the episode's end
:meth:`StepRecorder.pending` encodes the columns (:func:`evalband.store.encode_steps`) and
the record carries the bytes back to the driver under ``extra["_media_pending"]`` with the
clips (:mod:`evalband.run._video`); the driver stores them by their sha256 beside the store and
refers to them from ``extra["step_data"]`` (:func:`evalband.run._video.store_pending_media`),
durable before the record is committed. So every backend that plays episodes one at a time
(serial, process, ray) keeps step data, and a Ray worker needs no access to the store.

Size: an episode keeps at most :data:`evalband.store.MAX_STEP_BYTES` of raw columns; the
steps after that are dropped and ``extra["step_data_note"]`` says how many.

Observations (``observations=True``; ``evalband run --record-obs``): the observation each
action was chosen from is kept too, when it is low-dimensional: a numeric array (column
``obs``) or a dict of them (``obs/<key>``) of at most :data:`MAX_OBS_VALUES` values a step;
a larger entry (a camera image) is not kept and the note says which.

The lockstep player (``--batch``), the vector backend and the :class:`~evalband.Recorder`
(a user's own loop) fill the same recorder, so every way of playing keeps the same columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["MAX_OBS_VALUES", "StepRecorder"]

MAX_OBS_VALUES = 4096
"""Most values one observation entry may have a step to be kept (a camera image is not)."""


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


class StepRecorder:
    """The growing step columns of one episode.

    Args:
        info_keys: the panel's declared numeric info keys (``metrics``).
        max_bytes: raw bytes the episode's columns may take (``None``: the store's cap).
        observations: also keep the low-dimensional observations (see the module).

    >>> rec = StepRecorder(("coverage",))
    >>> for t in range(3):
    ...     rec.add(np.array([t, -t], np.float32), 0.5 * t, {"coverage": t / 10})
    >>> from evalband.store._steps import decode_steps
    >>> data = decode_steps(rec.pending()["data"])
    >>> data.steps, data.action[:, 1].tolist(), data.info["coverage"].tolist()
    (3, [0.0, -1.0, -2.0], [0.0, 0.1, 0.2])
    >>> rec = StepRecorder(observations=True)
    >>> rec.add(0.5, 1.0, {}, obs={"pos": np.array([1.0, 2.0]), "image": np.zeros((96, 96, 3))})
    >>> back = decode_steps(rec.pending()["data"])
    >>> back.obs["obs/pos"].tolist(), sorted(back.obs)
    ([[1.0, 2.0]], ['obs/pos'])
    >>> rec.extra()["step_data_note"].split(",")[0]
    "observation 'image' is not kept: 27648 values a step"
    """

    __slots__ = ("info_keys", "max_bytes", "actions", "rewards", "info", "dropped",
                 "observations", "obs", "skipped", "_step_bytes", "_seen")

    def __init__(self, info_keys: Sequence[str] = (), max_bytes: int | None = None, *,
                 observations: bool = False) -> None:
        from evalband.store._steps import MAX_STEP_BYTES

        self.info_keys = tuple(info_keys)
        self.max_bytes = MAX_STEP_BYTES if max_bytes is None else max_bytes
        self.observations = observations
        self.actions: list[np.ndarray] = []
        self.rewards: list[float] = []
        self.info: dict[str, list[float]] = {key: [] for key in self.info_keys}
        self.obs: dict[str, list[np.ndarray]] = {}
        self.skipped: dict[str, int] = {}  # observation entries too large to keep: their size
        self.dropped = 0
        self._step_bytes = 0
        self._seen: dict[str, np.ndarray] | None = None

    def observe(self, obs: Any) -> None:
        """Note the observation the next action is chosen from; the next :meth:`add` keeps it.

        Copied now (an env may reuse its buffer); nothing when observations are not kept.
        """
        if self.observations:
            self._seen = self._entries(obs)

    def add(self, action: Any, reward: Any, info: dict[str, Any], obs: Any = None) -> None:
        """Keep one step: the action taken (chosen from ``obs``), the reward and info it gave.

        ``obs`` (default: the one given to :meth:`observe`) is kept only by a recorder made
        with ``observations=True``.
        """
        act = np.array(action, copy=True)  # a policy may reuse its output buffer
        entries: dict[str, np.ndarray] = {}
        if self.observations:
            entries = self._entries(obs) if obs is not None else (self._seen or {})
            self._seen = None
        if not self._step_bytes:
            self._step_bytes = act.nbytes + 8 * (1 + len(self.info_keys)) + sum(
                v.nbytes for v in entries.values())
            self.obs = {name: [] for name in entries}
        if (len(self.rewards) + 1) * self._step_bytes > self.max_bytes or (
                self.actions and act.shape != self.actions[0].shape) or (
                entries.keys() != self.obs.keys() or any(
                    v.shape != self.obs[k][0].shape for k, v in entries.items() if self.obs[k])):
            self.dropped += 1
            return
        self.actions.append(act)
        self.rewards.append(_number(reward))
        for key, values in self.info.items():
            values.append(_number(info.get(key)))
        for name, value in entries.items():
            self.obs[name].append(value)

    def _entries(self, obs: Any) -> dict[str, np.ndarray]:
        """The observation's low-dimensional numeric entries as columns (``obs``, ``obs/k``)."""
        items = obs.items() if isinstance(obs, dict) else [("", obs)]
        out: dict[str, np.ndarray] = {}
        for key, value in items:
            try:
                array = np.array(value, copy=True)
            except Exception:  # noqa: BLE001 - not an array: not kept
                continue
            if array.dtype.kind not in "biuf":
                continue
            if array.size > MAX_OBS_VALUES:
                self.skipped[str(key) or "obs"] = int(array.size)
                continue
            out[f"obs/{key}" if key != "" else "obs"] = array
        return out

    def pending(self) -> dict[str, Any]:
        """The encoded columns, as the record carries them to the driver."""
        from evalband.store._steps import STEPS_CONTENT_TYPE, StepData, encode_steps

        if self.actions:
            action = np.stack(self.actions)
        else:
            action = np.zeros((0,), np.float64)
        data = StepData(action, np.asarray(self.rewards, np.float64),
                        {key: np.asarray(values, np.float64) for key, values in self.info.items()},
                        {name: np.stack(values) for name, values in self.obs.items() if values})
        return {"data": encode_steps(data), "content_type": STEPS_CONTENT_TYPE, "kind": "steps",
                "steps": data.steps}

    def extra(self) -> dict[str, Any]:
        """The record's ``extra`` for this episode: the pending columns and any note."""
        from evalband.run._video import PENDING

        out: dict[str, Any] = {PENDING: [self.pending()]}
        notes = [f"observation {key!r} is not kept: {size} values a step, over the "
                 f"{MAX_OBS_VALUES} an observation entry may have" for key, size in
                 self.skipped.items()]
        if self.dropped:
            notes.append(
                f"step data keeps the first {len(self.rewards)} steps: the last "
                f"{self.dropped} were over the {self.max_bytes >> 20} MiB of raw step columns "
                "one episode may keep (or changed the action's or observation's shape)")
        if notes:
            out["step_data_note"] = "; ".join(notes)
        return out
