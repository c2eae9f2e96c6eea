"""Episode traces for inspection, read from the stored episodes (never replayed).

The runner records a trace for the first episodes of each cell of an env with a trace hook
(:mod:`evalband.run._trace`) and stores it with the episode (``extra["trace"]``: ``t`` in
seconds and the env's named series). The report draws those: it never builds an env or
loads a policy, so a report (and the read-only viewer) runs no user code, and a run whose
policy is gone still shows its traces.

What is drawn is the env family's trace spec (``[trace]`` in its
``evalband/envs/families/NAME.toml``, read by :mod:`evalband._util.families`): the report
knows no env id; an env whose family declares no trace has no trace plot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalband._util.families import TraceSpec, trace_spec
from evalband.episode import EpisodeRecord, Outcome, record_key

if TYPE_CHECKING:
    from evalband.report._data import RunView

__all__ = ["Trace", "TraceSet", "trace_kind", "episode_traces", "stored_trace", "pick_keys"]


@dataclass(frozen=True)
class Trace:
    """One episode's trajectory (``series``: name -> values, ``t`` in seconds first)."""

    run_id: str
    key: tuple[str, int, int]
    condition_seed: int
    outcome: str
    series: dict[str, list[float]]
    slices: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TraceSet:
    """The traces a report shows, the family's ``spec`` to draw them, why some are missing."""

    spec: TraceSpec
    runs: tuple[str, ...]
    traces: tuple[Trace, ...]
    notes: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """The env family whose spec draws them (``reach1d``, ``pusht``)."""
        return self.spec.family


def trace_kind(env: str) -> str | None:
    """The env family whose trace spec draws ``env``'s traces, or ``None`` (no trace plot).

    >>> trace_kind("evalband/Reach1D-v0"), trace_kind("evalband/Coin-v0")
    ('reach1d', None)
    """
    spec = trace_spec(env)
    return None if spec is None else spec.family


def _counted(
    records: Sequence[EpisodeRecord], among: Set[tuple[str, int, int]] | None = None
) -> dict[tuple[str, int, int], EpisodeRecord]:
    from evalband.analysis._summary import counted

    out = {record_key(r): r for r in counted(records)}
    return out if among is None else {k: r for k, r in out.items() if k in among}


def pick_keys(
    views: Sequence[RunView], limit: int = 4, among: Set[tuple[str, int, int]] | None = None
) -> list[tuple[str, int, int]]:
    """Which episodes to inspect: where two runs disagree first, else one of each outcome.

    Only keys in ``among`` are picked when it is given (the episodes with stored traces).

    With two or more runs: matched episodes where only the candidate succeeded, then where
    only the baseline did, then where the outcomes differ otherwise, then any, in plan order,
    up to ``limit`` (at most half of it from each of the first three groups). With one run:
    the first episode of each outcome, then the first ones, up to ``limit``. Error episodes
    are never picked.
    """
    if len(views) > 1:
        first = _counted(views[0].data.records, among)
        second = _counted(views[1].data.records, among)
        keys = sorted(first.keys() & second.keys())
        take = max(1, limit // 2)
        groups: list[list[tuple[str, int, int]]] = [[], [], []]
        for k in keys:
            a, b = first[k], second[k]
            if a.outcome is b.outcome:
                continue
            group = (0 if b.success and not a.success else 1 if a.success and not b.success
                     else 2)
            if len(groups[group]) < take:
                groups[group].append(k)
                if all(len(g) >= take for g in groups):
                    break
        candidates = [k for g in groups for k in g] + keys[:limit]
    else:
        rows = sorted(_counted(views[0].data.records, among).values(), key=record_key)
        firsts = (next((r for r in rows if r.outcome is o), None) for o in Outcome)
        candidates = [record_key(r) for r in firsts if r is not None]
        candidates += [record_key(r) for r in rows[:limit]]
    chosen: list[tuple[str, int, int]] = []
    for key in candidates:
        if key not in chosen:
            chosen.append(key)
        if len(chosen) >= limit:
            break
    return chosen


def stored_trace(view: RunView, record: EpisodeRecord) -> Trace | None:
    """The trace the runner stored with ``record`` (``extra["trace"]``), or ``None``.

    >>> from types import SimpleNamespace
    >>> r = EpisodeRecord("r", "p", "f", "c", 0, 0, 7, "success", True, False, 1,
    ...                   extra={"trace": {"t": [0.0, 0.2], "x": [1.0, None]}})
    >>> stored_trace(SimpleNamespace(run_id="r"), r).series["x"]
    [1.0, nan]
    """
    raw = record.extra.get("trace") if isinstance(record.extra, dict) else None
    if not isinstance(raw, dict) or not isinstance(raw.get("t"), list):
        return None
    try:
        series = {str(k): [math.nan if x is None else float(x) for x in v]
                  for k, v in raw.items() if isinstance(v, list)}
    except (TypeError, ValueError):
        return None
    return Trace(view.run_id, record.key, record.condition_seed, record.outcome.value, series,
                 dict(record.slices))


def episode_traces(views: Sequence[RunView], limit: int = 4) -> TraceSet | None:
    """Traces of a few episodes of the first two runs, or ``None`` for an env without them.

    The same episodes (same condition seeds) are shown for both runs (:func:`pick_keys`
    among the episodes with stored traces). A run without stored traces gets a note.
    """
    spec = trace_spec(views[0].data.panel.env)
    if spec is None:
        return None
    from evalband.analysis._pairs import records_where
    from evalband.report._data import WITH_TRACE

    shown = list(views[:2])
    # A stored run reads only the episodes whose extra names a trace, not every record.
    stored = [{record_key(r): t for r in records_where(
                   v.data.records, WITH_TRACE, lambda r: True)
               if (t := stored_trace(v, r)) is not None} for v in shown]
    kept = [set(by_key) for by_key in stored if by_key]
    keys = pick_keys(shown, limit, among=set.intersection(*kept)) if kept else []
    traces = [by_key[k] for by_key in stored for k in keys if k in by_key]
    notes = [f"{view.run_id}: no episode traces stored (runs recorded before traces were "
             "kept, or made elsewhere)" for view, by_key in zip(shown, stored, strict=True)
             if not by_key]
    if not traces and not notes:
        return None
    return TraceSet(spec, tuple(v.run_id for v in shown), tuple(traces), tuple(notes))
