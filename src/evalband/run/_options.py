"""How a panel is run: :func:`~evalband.run._runner.run_panel`'s options as one object.

``run_panel(panel, policy, store, options)`` takes a :class:`RunOptions`; the keyword form
``run_panel(panel, policy, store, run_id=..., backend=...)`` stays, each keyword one field
of it (:meth:`RunOptions.with_changes`). The options are plain data a caller can build once
and reuse (``dataclasses.replace`` for a variant); the runner plans the run from them
(checks, backend, task), opens it in the store, then plays it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalband.episode import EpisodeRecord, EpisodeSpec

__all__ = ["RunOptions"]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class RunOptions:
    """Everything of a run but its panel, policy and store.

    Attributes:
        run_id: resume or name the run; a fresh id is made when omitted.
        backend: ``serial``, ``process`` or ``ray``.
        workers: worker processes for the process and ray backends (``None``: 1 for
            process, every CPU of the Ray cluster for ray).
        address: the Ray cluster for ``backend="ray"``: ``None``/``local`` (start one on
            this machine), ``auto`` or ``ray://HOST:PORT`` (see ``docs/ray.md``); recorded in
            the manifest's ``extra["address"]``.
        errors_as_failures: count error episodes as failures (kept in the manifest).
        command: the command line, for the manifest.
        batch: allow lockstep batch simulation where the env and policy support it.
        batch_size: play up to this many episodes in lockstep with one policy call per step
            on their stacked observations (``evalband run --batch N``; see
            ``docs/batching.md``); records equal the one-at-a-time path's except for timing.
            ``None`` plays one episode at a time. Recorded in the manifest's ``extra``, with
            a torch policy's ``batch_mode`` (:meth:`~evalband.policies._torch.TorchPolicy.
            probe_batch_mode`).
        retry_errors: when resuming, play the run's ``error`` episodes again (e.g. after a
            policy server came back); each replay records one more ``attempts``.
        record_video: ``"failures"``, ``"all"`` or ``"sample:K"``: film those episodes (the
            env is made with ``render_mode="rgb_array"``), store each clip beside the store
            and reference it from the record's ``extra["media"]``
            (:mod:`evalband.run._video`). Checked before the first episode: PyAV
            importable, one frame drawn.
        record_size: ``(width, height)`` of the clips' frames: passed to the env's renderer
            where its constructor takes a size (``width``/``height``,
            ``visualization_width``/``visualization_height``), else each frame is resized.
        record_steps: keep every episode's step data: per-step actions, rewards and the
            panel's ``metrics`` info keys, one compressed ``.npz`` beside the store by its
            sha256, referenced from the record's ``extra["step_data"]``
            (:mod:`evalband.store._steps`; read with :func:`evalband.store.read_steps`).
            ``"obs"``: the low-dimensional observations too (:mod:`evalband.run._steps`).
            Every backend and ``batch_size`` keep it.
        step: the training step of the checkpoint evaluated (stored with the run as its
            manifest's ``step``; ``rank --by step`` and ``sweep`` order checkpoints by it).
            Resuming a run recorded at another step is refused.
        override: what ``run --episodes N --seed S`` changed of the panel file (the panel
            given is the changed one): recorded in the new run's manifest,
            ``extra["override"]``, with the file's own fingerprint (``of_fingerprint``).
        episode_timeout: wall seconds one episode may take before it is stopped and
            recorded as an ``error`` (its cause ``EpisodeTimeout``) and the run goes on;
            ``None``: the panel's ``episode_timeout_s``, else
            :func:`~evalband.run._runner.default_episode_timeout`. Enforced in the thread
            that plays (the main thread of the driver or a worker).
        on_episode: called with each record after it is committed.
        on_start: called with (planned total, already-finished records) before playing.
        order: reorders the episodes still to play (``run --until-decided`` interleaves
            cells).
        stop_when: called with each committed record; returning True ends the run there
            (``run --until-decided``: the comparison is decided).
        on_note: called with a warning about the panel found while running (what
            ``check-env`` would say): a registered env whose seeded reset does not
            reproduce (checked before the first episode), a success rule that can never
            hold (checked when the first episodes have no success). ``None``: not checked.

    >>> options = RunOptions(backend="process", workers=2)
    >>> options.with_changes(run_id="r1").run_id, options.run_id
    ('r1', None)
    """

    run_id: str | None = None
    backend: str = "serial"
    workers: int | None = 1
    address: str | None = None
    errors_as_failures: bool = False
    command: str | None = None
    batch: bool = True
    batch_size: int | None = None
    retry_errors: bool = False
    record_video: str | None = None
    record_size: tuple[int, int] | None = None
    record_steps: bool | str = False
    step: int | None = None
    override: dict[str, Any] | None = None
    episode_timeout: float | None = None
    on_episode: Callable[[EpisodeRecord], None] | None = None
    on_start: Callable[[int, list[EpisodeRecord]], None] | None = None
    order: Callable[[list[EpisodeSpec]], list[EpisodeSpec]] | None = None
    stop_when: Callable[[EpisodeRecord], bool] | None = None
    on_note: Callable[[str], None] | None = None

    def with_changes(self, **changes: Any) -> RunOptions:
        """These options with ``changes`` (keyword names of :func:`run_panel`) applied.

        Raises:
            TypeError: a keyword that is no option, as for any function's unknown keyword.

        >>> RunOptions().with_changes(colour="red")
        Traceback (most recent call last):
        ...
        TypeError: run_panel() got an unexpected keyword argument 'colour'
        """
        if not changes:
            return self
        for name in changes:
            if name not in OPTION_NAMES:
                raise TypeError(f"run_panel() got an unexpected keyword argument {name!r}")
        return dataclasses.replace(self, **changes)


OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunOptions))
"""The keyword names :func:`~evalband.run._runner.run_panel` accepts besides ``options``."""
