"""Evaluate checkpoints during training: one stored run per checkpoint, carrying its step.

:func:`evaluate_checkpoint` is the callback a training loop calls every K steps; it plays a
panel with the checkpoint's policy into the run store as the run ``<prefix>-step<N>`` (the
run's ``step`` field is N, so ``evalband rank --by step`` and sweeps read the series), and
sends the run's summary with its band to the loggers given (TensorBoard, Weights & Biases).
:func:`evaluate_checkpoints` does the same for the checkpoints ``lerobot-train`` saved
(``OUTPUT/checkpoints/<step>/pretrained_model``), skipping those already stored: run it
beside or after training (a lerobot-train "hook" that needs no change to lerobot).

Cheap by default: the ``vector`` backend keeps its sub-envs (and the envs they built) warm
from one checkpoint to the next in one Python session, and ``until_decided=True`` stops each
checkpoint's run as soon as its comparison with the best checkpoint so far is decided
(:func:`evalband.run.run_until_decided`: an anytime-valid sequential test).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalband.errors import InvalidParameterError
from evalband.panel import Panel, load_panel

__all__ = ["CheckpointResult", "evaluate_checkpoint", "evaluate_checkpoints",
           "lerobot_checkpoints", "run_name", "summary_scalars"]


@dataclass(frozen=True)
class CheckpointResult:
    """What one checkpoint's evaluation stored and logged.

    Attributes:
        run_id: the stored run (``<prefix>-step<N>``).
        step: the training step.
        episodes: episodes in the rate's denominator.
        successes: successful episodes.
        rate: the success rate (``None`` with no episode counted).
        low: the lower end of its band (Wilson, 95 %).
        high: the upper end of its band.
        against: the best earlier run it was compared with (``until_decided``), else ``None``.
        decision: the sequential comparison's decision with ``against``, else ``None``.
        scalars: what went to the loggers (tag -> value).
    """

    run_id: str
    step: int
    episodes: int
    successes: int
    rate: float | None
    low: float | None
    high: float | None
    against: str | None = None
    decision: str | None = None
    scalars: dict[str, float] = field(default_factory=dict)


def _whole(value: object, name: str, minimum: int) -> int:
    """``value`` as an int ``>= minimum``, else :class:`InvalidParameterError` (one line).

    >>> _whole(5, "step", 0)
    5
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidParameterError(
            f"`{name}` must be a whole number >= {minimum}; got {value!r}", parameters=(name,))
    return value


def run_name(prefix: str, step: int) -> str:
    """The run id of a checkpoint: ``<prefix>-step<N>`` (zero-padded: ids sort by step).

    >>> run_name("act-pusht", 500)
    'act-pusht-step00000500'
    """
    return f"{prefix}-step{int(step):08d}"


def summary_scalars(summary: Any, panel: Panel) -> dict[str, float]:
    """A run summary as tracker scalars: overall rate and band, per cell rate, counts."""
    out: dict[str, float] = {"episodes": float(summary.n),
                             "successes": float(summary.successes),
                             "errors": float(summary.counts.get("error", 0))}
    if summary.rate is not None:
        out.update(success_rate=summary.rate.estimate, success_rate_low=summary.rate.low,
                   success_rate_high=summary.rate.high)
    for cell, row in sorted(summary.per_cell.items()):
        if cell and row.get("rate"):
            out[f"cell/{cell}/success_rate"] = float(row["rate"]["estimate"])
    return {f"evalband/{panel.name}/{k}": float(v) for k, v in out.items()}


def _best_before(store: Any, prefix: str, panel: Panel, step: int) -> str | None:
    """The stored run of this series with the highest success rate before ``step``."""
    from evalband.analysis import summarize

    best: tuple[float, str] | None = None
    pattern = re.compile(re.escape(prefix) + r"-step(\d+)$")
    for run in store.list_runs():
        match = pattern.match(run.run_id)
        if (match is None or int(match.group(1)) >= step
                or run.panel_fingerprint != panel.fingerprint):
            continue
        summary = summarize(store.episode_records(run.run_id))
        if summary.rate is not None and (best is None or summary.rate.estimate > best[0]):
            best = (summary.rate.estimate, run.run_id)
    return None if best is None else best[1]


def evaluate_checkpoint(
    policy: Any,
    panel: Panel | str | Path,
    *,
    step: int,
    store: Any = None,
    prefix: str = "checkpoint",
    backend: str = "vector",
    workers: int | None = 2,
    batch_size: int | None = None,
    until_decided: bool = False,
    loggers: Sequence[Any] = (),
    **run_options: Any,
) -> CheckpointResult:
    """Evaluate one checkpoint on ``panel`` into the store as run ``<prefix>-step<step>``.

    Args:
        policy: the checkpoint's policy: a name (``lerobot:PATH``, ``module:attr``, a
            ``.pt`` file) or a policy object (e.g. the model being trained, wrapped).
        panel: a :class:`~evalband.panel.Panel`, a YAML path or a built-in panel name.
        step: the training step (stored with the run; ``rank --by step`` orders by it).
        store: an open run store, or a path (default: ``./evalband-runs/evalband.sqlite``).
        prefix: the run series' name; runs are ``<prefix>-step<N>``.
        backend: ``vector`` (default: sub-envs kept warm across checkpoints), ``serial``,
            ``process`` or ``ray``.
        workers: sub-envs (vector) or worker processes.
        batch_size: lockstep batch (``--batch``) for the serial and process backends.
        until_decided: stop as soon as the comparison with the best earlier checkpoint of
            the series (the highest success rate) is decided; the first checkpoint plays
            the whole panel.
        loggers: objects with ``log(result, step)`` (:class:`~evalband.training.
            TensorBoardLogger`, :class:`~evalband.training.WandbLogger`).
        **run_options: passed to :func:`evalband.run.run_panel`.

    Returns:
        The stored run's id, its rate with its band and what was logged.

    Raises:
        InvalidParameterError: ``step`` is not a whole number >= 0.
    """
    from evalband.analysis import summarize
    from evalband.run import run_panel
    from evalband.run._until import run_until_decided
    from evalband.store import open_store

    step = _whole(step, "step", 0)
    panel_obj = panel if isinstance(panel, Panel) else load_panel(panel)
    if store is None or isinstance(store, str | Path):
        with open_store(store) as opened:
            return evaluate_checkpoint(
                policy, panel_obj, step=step, store=opened, prefix=prefix, backend=backend,
                workers=workers, batch_size=batch_size, until_decided=until_decided,
                loggers=loggers, **run_options)
    run_id = run_name(prefix, step)
    options = dict(run_options, backend=backend, workers=workers, step=step)
    if batch_size is not None:
        options["batch_size"] = batch_size
    against = _best_before(store, prefix, panel_obj, step) if until_decided else None
    decision = None
    if against is not None:
        _, _, monitor = run_until_decided(panel_obj, policy, store, against=against,
                                          run_id=run_id, **options)
        decision = monitor.decision
    else:
        run_panel(panel_obj, policy, store, run_id=run_id, **options)
    summary = summarize(store.episode_records(run_id))
    scalars = summary_scalars(summary, panel_obj)
    rate = summary.rate
    result = CheckpointResult(
        run_id=run_id, step=step, episodes=summary.n, successes=summary.successes,
        rate=None if rate is None else rate.estimate, low=None if rate is None else rate.low,
        high=None if rate is None else rate.high, against=against, decision=decision,
        scalars=scalars)
    for logger in loggers:
        logger.log(result, step)
    return result


_STEP_DIR = re.compile(r"\d+")


def lerobot_checkpoints(output_dir: str | Path) -> list[tuple[int, Path]]:
    """``(step, pretrained_model dir)`` of each checkpoint lerobot-train saved, by step.

    lerobot-train writes ``OUTPUT/checkpoints/<step, zero-padded>/pretrained_model`` (and a
    ``last`` link to the newest): the link is skipped, the step is the folder's number.
    """
    root = Path(output_dir) / "checkpoints"
    if not root.is_dir():
        raise InvalidParameterError(
            f"`output_dir` {output_dir} has no checkpoints/ folder: expected a lerobot-train "
            "output directory (OUTPUT/checkpoints/<step>/pretrained_model)",
            parameters=("output_dir",))
    found = []
    for child in root.iterdir():
        model = child / "pretrained_model"
        if _STEP_DIR.fullmatch(child.name) and not child.is_symlink() and model.is_dir():
            found.append((int(child.name), model))
    return sorted(found)


def evaluate_checkpoints(
    output_dir: str | Path,
    panel: Panel | str | Path,
    *,
    every: int = 1,
    store: Any = None,
    prefix: str | None = None,
    device: str = "cpu",
    **options: Any,
) -> list[CheckpointResult]:
    """Evaluate lerobot-train's checkpoints not yet stored, every ``every``-th saved step.

    Args:
        output_dir: lerobot-train's ``--output_dir``.
        panel: the panel.
        every: evaluate checkpoints whose step is a multiple of this (K; 1: every one).
        store: an open run store or a path.
        prefix: the series' name (default: the output directory's name).
        device: the torch device of the policy (``lerobot:PATH?device=...``).
        **options: passed to :func:`evaluate_checkpoint` (backend, loggers, ...).

    Returns:
        One result per checkpoint evaluated now (those already in the store are skipped).
    """
    from evalband.store import open_store

    every = _whole(every, "every", 1)
    series = prefix or Path(output_dir).resolve().name
    if store is None or isinstance(store, str | Path):
        with open_store(store) as opened:
            return evaluate_checkpoints(output_dir, panel, every=every, store=opened,
                                        prefix=series, device=device, **options)
    results = []
    for step, model in lerobot_checkpoints(output_dir):
        if step % every or store.get_run(run_name(series, step)) is not None:
            continue
        results.append(evaluate_checkpoint(f"lerobot:{model}?device={device}", panel,
                                           step=step, store=store, prefix=series, **options))
    return results
