"""Experiment trackers for checkpoint evaluations: TensorBoard and Weights & Biases.

Each logger has ``log(result, step)`` (a :class:`~evalband.training.CheckpointResult`) and
``close()``. Both are optional: evaluation never needs them, and neither package is required
(:class:`TensorBoardLogger` writes the event file itself, :mod:`evalband.training.
_tensorboard`; :class:`WandbLogger` needs ``wandb``, the ``tracking`` extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from evalband.errors import InvalidParameterError
from evalband.training._tensorboard import EventWriter

__all__ = ["TensorBoardLogger", "WandbLogger"]


class TensorBoardLogger:
    """Scalars of each checkpoint's run (rate, band, counts, per-cell rates) to TensorBoard.

    Tags are ``evalband/<panel>/success_rate``, ``..._low``, ``..._high``, ``episodes``,
    ``successes``, ``errors`` and ``evalband/<panel>/cell/<cell>/success_rate``, at the
    checkpoint's step.
    """

    def __init__(self, logdir: str | Path) -> None:
        self.writer = EventWriter(logdir)

    def log(self, result: Any, step: int) -> None:
        """Write the result's scalars at ``step``."""
        self.writer.add_scalars(dict(result.scalars), step)

    def close(self) -> None:
        """Close the event file."""
        self.writer.close()


class WandbLogger:
    """The same scalars to Weights & Biases, offline unless told otherwise (nothing is sent).

    Args:
        run: an active ``wandb`` run (e.g. the training's own); ``None`` starts one with
            ``project``, ``mode`` and ``dir``.
        project: the W&B project of a run started here.
        mode: ``offline`` (default: written under ``dir``, synced later with ``wandb sync``
            if ever), ``online`` or ``disabled``.
        dir: where an offline run is written.
    """

    def __init__(self, run: Any = None, *, project: str = "evalband",
                 mode: Literal["online", "offline", "disabled"] = "offline",
                 dir: str | Path | None = None) -> None:
        if run is None:
            try:
                import wandb
            except ImportError:
                raise InvalidParameterError(
                    "WandbLogger needs wandb: pip install 'evalband[tracking]' (TensorBoard "
                    "needs nothing: TensorBoardLogger)", parameters=("loggers",)) from None
            run = wandb.init(project=project, mode=mode, dir=None if dir is None else str(dir),
                             settings=wandb.Settings(console="off"))  # leave stdout alone
            self._owned = True
        else:
            self._owned = False
        self.run = run

    def log(self, result: Any, step: int) -> None:
        """Log the result's scalars at ``step`` and its run id in the summary."""
        self.run.log(dict(result.scalars), step=step)
        self.run.summary["evalband/last_run_id"] = result.run_id

    def close(self) -> None:
        """Finish the run if this logger started it."""
        if self._owned:
            self.run.finish()
