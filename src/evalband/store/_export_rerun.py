"""A run's step data as a Rerun recording (``evalband export RUN --format rerun -o FILE.rrd``).

Rerun (``rerun-sdk``, the ``rerun`` extra; imported only here) opens the file in its viewer
(``rerun FILE.rrd``) with every episode's traces on one ``step`` timeline. Each episode that
has step data (``evalband run --record-steps``, :mod:`evalband.store._steps`) becomes the
entity ``/<cell>/episode_<episode>_<repeat>`` (the cell is ``all`` for a panel without
factors) holding

* ``reward``: one scalar a step;
* ``action``: the action's components, one scalar series each (flattened);
* ``info/<key>``: each declared info key;
* ``obs`` or ``obs/<key>`` (step data recorded with ``--record-obs``): the observation's
  components, one scalar series each (flattened);
* ``outcome``: a static text (``success``, ``timeout``...).

Steps are sent as columns (:func:`rerun.send_columns`): one call per series, not per step.
Episodes without step data are left out and counted; a run with none is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.errors import InvalidInputError, InvalidParameterError

if TYPE_CHECKING:
    from evalband.episode import EpisodeRecord
    from evalband.store._sqlite import RunStore

__all__ = ["RerunExport", "episode_entity", "export_rerun"]


@dataclass(frozen=True)
class RerunExport:
    """What :func:`export_rerun` wrote.

    Attributes:
        path: the ``.rrd`` file.
        episodes: episodes written (those with step data).
        steps: steps written, all episodes together.
        skipped: episodes left out (no step data stored, or its file is gone).
    """

    path: Path
    episodes: int
    steps: int
    skipped: int


def episode_entity(record: EpisodeRecord) -> str:
    r"""The Rerun entity path of an episode (its parts escaped as Rerun wants them).

    >>> from evalband.episode import EpisodeRecord
    >>> episode_entity(EpisodeRecord("r", "p", "f", "start=held out", 3, 1, 7, "success",
    ...                              True, False, 5))
    '/start\\=held\\ out/episode_3_1'
    """
    return "/" + "/".join(_escape(part) for part in
                          (record.cell or "all", f"episode_{record.episode}_{record.repeat}"))


def _escape(part: str) -> str:
    # Rerun's rules for an entity path part: letters, digits, -_. unescaped; others escaped
    return "".join(ch if ch.isalnum() or ch in "-_." else "\\" + ch for ch in part)


def _rerun() -> Any:
    try:
        import rerun
    except ModuleNotFoundError:
        raise InvalidParameterError(
            "the Rerun export writes with rerun-sdk, which is not installed in this environment; "
            "install the extra: pip install 'evalband[rerun]'", parameters=("format",)
        ) from None
    return rerun


def export_rerun(store: RunStore, run_id: str, out: str | Path, *,
                 overwrite: bool = False) -> RerunExport:
    """Write the step data of ``run_id``'s episodes to the Rerun recording ``out``.

    Raises:
        InvalidInputError: ``out`` exists (without ``overwrite``), or no episode of the run
            has step data.
        InvalidParameterError: rerun-sdk is not installed.
        RunNotFoundError: no such run is stored.
    """
    from evalband.store._steps import read_steps

    out = Path(out)
    store.require_run(run_id)
    if out.exists() and not overwrite:
        raise InvalidInputError(f"{out} exists; pass `overwrite=True` to replace it",
                                parameters=("overwrite",))
    rr = _rerun()
    records = store.episode_records(run_id)
    found = [(record, read_steps(store.path, record)) for record in records]
    kept = [(record, data) for record, data in found if data is not None]
    if not kept:
        raise InvalidInputError(
            f"run {run_id} has no step data to export; record it with "
            "`evalband run ... --record-steps`")
    out.parent.mkdir(parents=True, exist_ok=True)
    from evalband._util.files import written_whole

    with written_whole(out) as tmp:  # an error or Ctrl-C: no partial recording is left
        rec = rr.RecordingStream("evalband", recording_id=run_id)
        rec.save(str(tmp))
        try:
            steps = _log_episodes(rr, rec, kept)
            rec.flush()
        finally:
            rec.disconnect()
    return RerunExport(out, len(kept), steps, len(records) - len(kept))


def _log_episodes(rr: Any, rec: Any, kept: list[tuple[EpisodeRecord, Any]]) -> int:
    """Log each episode's outcome and step series to ``rec``; the steps logged in all."""
    steps = 0
    for record, data in kept:
        entity = episode_entity(record)
        index = [rr.TimeColumn("step", sequence=np.arange(data.steps, dtype=np.int64))]
        rec.log(f"{entity}/outcome", rr.TextDocument(record.outcome.value), static=True)
        series = {"reward": data.reward,
                  **{f"info/{_escape(key)}": value for key, value in data.info.items()}}
        if data.steps:
            series["action"] = data.action.reshape(data.steps, -1).astype(np.float64)
            for name, value in data.obs.items():  # "obs" or "obs/<key>"
                head, _, key = name.partition("/")
                series[f"{head}/{_escape(key)}" if key else head] = value.reshape(
                    data.steps, -1).astype(np.float64)
        for name, values in series.items():
            rec.send_columns(f"{entity}/{name}", indexes=index,
                             columns=rr.Scalars.columns(scalars=values))
        steps += data.steps
    return steps
