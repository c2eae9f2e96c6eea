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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["StepRecorder"]


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

    >>> rec = StepRecorder(("coverage",))
    >>> for t in range(3):
    ...     rec.add(np.array([t, -t], np.float32), 0.5 * t, {"coverage": t / 10})
    >>> from evalband.store._steps import decode_steps
    >>> data = decode_steps(rec.pending()["data"])
    >>> data.steps, data.action[:, 1].tolist(), data.info["coverage"].tolist()
    (3, [0.0, -1.0, -2.0], [0.0, 0.1, 0.2])
    """

    __slots__ = ("info_keys", "max_bytes", "actions", "rewards", "info", "dropped",
                 "_step_bytes")

    def __init__(self, info_keys: Sequence[str] = (), max_bytes: int | None = None) -> None:
        from evalband.store._steps import MAX_STEP_BYTES

        self.info_keys = tuple(info_keys)
        self.max_bytes = MAX_STEP_BYTES if max_bytes is None else max_bytes
        self.actions: list[np.ndarray] = []
        self.rewards: list[float] = []
        self.info: dict[str, list[float]] = {key: [] for key in self.info_keys}
        self.dropped = 0
        self._step_bytes = 0

    def add(self, action: Any, reward: Any, info: dict[str, Any]) -> None:
        """Keep one step (the action taken, the reward and info it gave)."""
        act = np.array(action, copy=True)  # a policy may reuse its output buffer
        if not self._step_bytes:
            self._step_bytes = act.nbytes + 8 * (1 + len(self.info_keys))
        if (len(self.rewards) + 1) * self._step_bytes > self.max_bytes or (
                self.actions and act.shape != self.actions[0].shape):
            self.dropped += 1
            return
        self.actions.append(act)
        self.rewards.append(_number(reward))
        for key, values in self.info.items():
            values.append(_number(info.get(key)))

    def pending(self) -> dict[str, Any]:
        """The encoded columns, as the record carries them to the driver."""
        from evalband.store._steps import STEPS_CONTENT_TYPE, StepData, encode_steps

        if self.actions:
            action = np.stack(self.actions)
        else:
            action = np.zeros((0,), np.float64)
        data = StepData(action, np.asarray(self.rewards, np.float64),
                        {key: np.asarray(values, np.float64) for key, values in self.info.items()})
        return {"data": encode_steps(data), "content_type": STEPS_CONTENT_TYPE, "kind": "steps",
                "steps": data.steps}

    def extra(self) -> dict[str, Any]:
        """The record's ``extra`` for this episode: the pending columns and any note."""
        from evalband.run._video import PENDING

        out: dict[str, Any] = {PENDING: [self.pending()]}
        if self.dropped:
            out["step_data_note"] = (
                f"step data keeps the first {len(self.rewards)} steps: the last "
                f"{self.dropped} were over the {self.max_bytes >> 20} MiB of raw step columns "
                "one episode may keep (or changed the action's shape)")
        return out
