"""What ``evalband offline`` returns: validation action error, and the split's make-up.

Pure data (computed by :mod:`evalband.policies.lerobot_offline`, rendered by
:mod:`evalband.report._offline`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalband._util.typed import typed_from_dict
from evalband.stats import Interval

__all__ = ["Composition", "OfflineCheckpoint", "OfflineReport"]


@dataclass(frozen=True)
class Composition:
    """The validation split by a declared metadata column, beside the whole dataset.

    Seed 004: "our val split had silently inherited 25% kinesthetic episodes ... Check what
    your val set is actually made of."

    Attributes:
        column: the column (a per-episode metadata column or a per-frame feature, read at
            each episode's first frame).
        split_episodes: value -> episodes of the split.
        split_frames: value -> frames of the split.
        dataset_episodes: value -> episodes of the whole dataset.
        sentence: the split's make-up in words.
    """

    column: str
    split_episodes: dict[str, int]
    split_frames: dict[str, int]
    dataset_episodes: dict[str, int]
    sentence: str


@dataclass(frozen=True)
class OfflineCheckpoint:
    """One checkpoint's validation action error.

    Attributes:
        checkpoint: ``lerobot:PATH``.
        policy_type: lerobot's policy type (``act``, ``diffusion``, ...).
        denoising_steps: the denoising steps used (diffusion; ``None`` otherwise).
        n_action_steps: actions executed per inference (the deployed chunking).
        frames: frames compared.
        action_mse: mean squared error of the generated actions (the dataset's action units,
            after the checkpoint's postprocessor), with a band over held-out episodes.
        action_mae: mean absolute error, same.
        per_episode_mse: episode index -> its mean squared error.
    """

    checkpoint: str
    policy_type: str
    denoising_steps: int | None
    n_action_steps: int | None
    frames: int
    action_mse: Interval
    action_mae: Interval
    per_episode_mse: dict[int, float]


@dataclass(frozen=True)
class OfflineReport:
    """``evalband offline``'s result.

    Attributes:
        dataset: the dataset directory.
        episodes: the held-out episodes.
        frames: their frames.
        seed: the seed of the shared noise draws.
        composition: the split's make-up (``None`` without a column to read).
        checkpoints: one result per checkpoint.
        notes: what the reader must know.
    """

    dataset: str
    episodes: tuple[int, ...]
    frames: int
    seed: int
    composition: Composition | None
    checkpoints: tuple[OfflineCheckpoint, ...]
    notes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``--json``)."""
        return {"kind": "offline", **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OfflineReport:
        """The typed result back from :meth:`as_dict`."""
        return typed_from_dict(cls, data)

    def csv_text(self) -> str:
        """``checkpoint,action_mse,action_mae``: the table ``evalband agree --csv`` reads.

        >>> OfflineReport("d", (), 0, 0, None, (), ()).csv_text().split()
        ['checkpoint,action_mse,action_mae']
        """
        rows = ["checkpoint,action_mse,action_mae"]
        rows += [f"{c.checkpoint},{c.action_mse.estimate!r},{c.action_mae.estimate!r}"
                 for c in self.checkpoints]
        return "\n".join(rows) + "\n"
