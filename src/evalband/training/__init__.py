"""Checkpoint evaluation during training, and experiment-tracker logging of its results.

>>> from evalband.training import run_name
>>> run_name("act", 1000)
'act-step00001000'
"""

from __future__ import annotations

from evalband.training._checkpoint import (
    CheckpointResult,
    evaluate_checkpoint,
    evaluate_checkpoints,
    lerobot_checkpoints,
    run_name,
    summary_scalars,
)
from evalband.training._trackers import TensorBoardLogger, WandbLogger

__all__ = [
    "CheckpointResult",
    "TensorBoardLogger",
    "WandbLogger",
    "evaluate_checkpoint",
    "evaluate_checkpoints",
    "lerobot_checkpoints",
    "run_name",
    "summary_scalars",
]
