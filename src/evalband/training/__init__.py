"""Checkpoint evaluation during training, and experiment-tracker logging of its results.

>>> from evalband.training._checkpoint import run_name
>>> run_name("act", 1000)
'act-step00001000'
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "evaluate_checkpoint": "evalband.training._checkpoint",
    "evaluate_checkpoints": "evalband.training._checkpoint",
    "CheckpointResult": "evalband.training._checkpoint",
    "TensorBoardLogger": "evalband.training._trackers",
    "WandbLogger": "evalband.training._trackers",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
