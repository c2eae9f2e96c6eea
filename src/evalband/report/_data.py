"""What a report shows, gathered once: runs, their summaries and noise floors, comparisons.

Every number comes from :mod:`evalband.analysis` (summaries, comparisons, noise floors); this
module only loads runs and groups episodes by slice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.errors import InvalidInputError, InvalidParameterError

if TYPE_CHECKING:
    from evalband.analysis import Comparison, NoiseFloor, RunSummary
    from evalband.analysis._compare import RunData
    from evalband.analysis._metrics import MetricSummary
    from evalband.episode import EpisodeRecord
    from evalband.panel import Panel
    from evalband.report._clips import Clip
    from evalband.store import RunStore
    from evalband.store._manifest import RunManifest

__all__ = [
    "WITH_MEDIA",
    "WITH_REASON",
    "WITH_TRACE",
    "SliceSummary",
    "RunView",
    "LatencyRow",
    "latency_rows",
    "ReportData",
    "collect",
    "slice_summaries",
    "stored_slice_summaries",
    "suite_size_for",
    "open_for",
    "is_bundle",
]

SUITE_SIZE = 20
"""Episodes per suite for the swing plot (seed 000's twenty-episode eval)."""
MAX_SUITES = 1000
"""Most suites a report cuts a run into (larger runs get larger suites)."""


@dataclass(frozen=True)
class SliceSummary:
    """One slice of one run: ``kind`` is ``factor``, ``cell`` or ``all``."""

    kind: str
    name: str
    summary: RunSummary


@dataclass(frozen=True)
class RunView:
    """A run as the report shows it.

    Attributes:
        data: identity, panel and episodes (as :func:`evalband.load_run` gives them).
        manifest: the run manifest (reproducibility block).
        summary: the whole run's summary.
        slices: per-slice summaries, factor values first, then cells, then ``all``.
        noise: the run's noise floor (suites of :func:`suite_size_for` episodes), or
            ``None`` when the run is too small for two suites.
        metrics: the run's metric means with their intervals
            (:func:`evalband.analysis.metric_summaries`).
    """

    data: RunData
    manifest: RunManifest
    summary: RunSummary
    slices: tuple[SliceSummary, ...]
    noise: NoiseFloor | None
    metrics: tuple[MetricSummary, ...] = ()

    @property
    def run_id(self) -> str:
        """The run id."""
        return self.data.run_id


@dataclass(frozen=True)
class ReportData:
    """Everything one report shows: the runs (baseline first) and their comparisons.

    ``confidence`` is the level of every band on the page. ``comparisons_from`` says where
    the comparisons came from: ``"stored"`` (the result ``evalband compare`` stored, still
    current), ``"given"`` (passed in by the caller that computed them) or ``"computed"``.
    """

    runs: tuple[RunView, ...]
    comparisons: tuple[Comparison, ...]
    title: str
    command: str | None
    sources: tuple[str, ...]
    confidence: float = 0.95
    clips: tuple[Clip, ...] = ()
    clips_left_out: int = 0
    comparisons_from: str = "computed"

    @property
    def is_comparison(self) -> bool:
        """Two or more runs: a comparison report."""
        return len(self.runs) > 1

    @property
    def peeking(self) -> list[str]:
        """The comparisons' peeking notices, each once (the page says them first)."""
        return list(dict.fromkeys(n for c in self.comparisons for n in c.peeking))


@dataclass(frozen=True)
class LatencyRow:
    """One run's policy inference time, over the episodes that recorded it (milliseconds).

    Each episode records its calls' median, 95th percentile and maximum; a run is summarised
    by the median episode's median, the 95th percentile of the episodes' 95th percentiles
    and the slowest call of all.
    """

    run_id: str
    episodes: int
    median_p50_ms: float
    p95_of_p95_ms: float
    max_ms: float


_LATENCY = ("latency_ms_p50", "latency_ms_p95", "latency_ms_max")


def latency_rows(runs: Sequence[RunView]) -> tuple[LatencyRow, ...]:
    """The latency row of each run that timed its policy (imported runs usually did not).

    A stored run's latency columns are read alone; no episode record is built.

    >>> from types import SimpleNamespace as NS
    >>> recs = [NS(latency_ms_p50=p, latency_ms_p95=2 * p, latency_ms_max=3 * p)
    ...         for p in (1.0, 2.0, 3.0)]
    >>> recs.append(NS(latency_ms_p50=None, latency_ms_p95=None, latency_ms_max=None))
    >>> row, = latency_rows([NS(run_id="r", data=NS(records=recs))])
    >>> row.episodes, row.median_p50_ms, row.max_ms
    (3, 2.0, 9.0)
    """
    import numpy as np

    from evalband.analysis import StoredRecords

    rows = []
    for view in runs:
        records = view.data.records
        stored = records if isinstance(records, StoredRecords) else None

        def read(name: str, records: Sequence[Any] = records,
                 stored: StoredRecords | None = stored) -> Any:
            col = stored.column(name) if stored is not None else None
            return np.asarray(
                col if col is not None else [getattr(r, name) for r in records], dtype=float)

        p50 = read("latency_ms_p50")  # the others are read only for a run that timed
        timed = ~np.isnan(p50)
        if not timed.any():
            continue
        values = {"latency_ms_p50": p50, **{name: read(name) for name in _LATENCY[1:]}}
        rows.append(LatencyRow(
            run_id=view.run_id, episodes=int(timed.sum()),
            median_p50_ms=float(np.median(values["latency_ms_p50"][timed])),
            p95_of_p95_ms=float(np.percentile(values["latency_ms_p95"][timed], 95)),
            max_ms=float(np.nanmax(values["latency_ms_max"][timed]))))
    return tuple(rows)


def suite_size_for(n: int) -> int | None:
    """Episodes per suite for a run of ``n`` counted episodes (``None``: no swing).

    Seed 000's twenty when there are at least two suites of twenty, else a quarter of the
    run (at least 2 episodes per suite, 8 episodes in all); past :data:`MAX_SUITES` suites
    of twenty, ``ceil(n / MAX_SUITES)`` (a 100,000-episode run: suites of 100).

    >>> suite_size_for(200), suite_size_for(20), suite_size_for(3), suite_size_for(100_000)
    (20, 5, None, 100)
    """
    if n >= 2 * SUITE_SIZE:
        return max(SUITE_SIZE, -(-n // MAX_SUITES))
    if n >= 8:
        return n // 4
    return None


def is_bundle(source: str | Path) -> bool:
    """Whether ``source`` is written as a path to an artifact-bundle directory.

    A bare name is a run id even when a folder of that name exists (see
    :func:`evalband.store.resolve_run`).
    """
    from evalband.store._refs import is_bundle_path

    return is_bundle_path(source)


@contextlib.contextmanager
def open_for(
    store: RunStore | str | Path | None, sources: Sequence[str] = ()
) -> Iterator[RunStore | None]:
    """The store to read runs from: as given, opened read-only from a path, or none.

    A store path that does not exist is never created: each of ``sources`` that is not a
    bundle path is then resolved without a store, which raises the error naming it; when
    every source is a bundle, none is needed (``None``). ``evalband report``, ``compare``,
    ``rank`` and ``show`` read their sources through this.
    """
    from evalband.store import RunStore
    from evalband.store._refs import resolve_run

    if store is None or isinstance(store, RunStore):
        yield store
        return
    if not Path(store).exists():
        for source in sources:
            if not is_bundle(source):
                resolve_run(source, None, store_path=store)
        if sources:  # bundles only: read without a store
            yield None
            return
    with RunStore(store, read_only=True) as opened:
        yield opened


def _manifest(source: str, run: RunData, store: RunStore | None) -> RunManifest:
    if run.source == "store" and store is not None:
        return store.require_run(run.run_id)
    from evalband.store._bundle import load_bundle

    return load_bundle(Path(source))[0]


def slice_summaries(run: RunData, confidence: float = 0.95) -> tuple[SliceSummary, ...]:
    """A run's summary per slice: factor values, then cells, then ``all`` (the whole run).

    The slices are the comparison's own (one slice table, one meaning). Episodes are
    grouped by cell once; a slice is the union of the cells whose labels match it, and a
    slice made of the same cells as one already summarised (a one-factor panel's factor
    values are its cells) reuses that summary.
    """
    from evalband.analysis import summarize

    by_cell: dict[str, list[EpisodeRecord]] = {}
    for record in run.records:
        by_cell.setdefault(record.cell, []).append(record)

    def summary(cells: tuple[str, ...]) -> RunSummary:
        rows = [r for cell in cells for r in by_cell[cell]]
        return summarize(rows, errors_as_failures=run.errors_as_failures, confidence=confidence)

    return _per_slice(run.panel, {cell: rows[0].slices for cell, rows in by_cell.items()},
                      summary)


WITH_MEDIA = "instr(\"extra\", '\"media\"') > 0"
"""The episodes that recorded media (the report's clips read only these)."""
WITH_REASON = ("\"outcome\" <> 'success' AND (instr(\"extra\", '\"reason\"') > 0 "
               "OR \"error\" IS NOT NULL)")
"""The failures with a reason or an error (the report's failure reasons read only these)."""
WITH_TRACE = "instr(\"extra\", '\"trace\"') > 0"
"""The episodes that stored a trace (the report's trace plot reads only these)."""


def stored_slice_summaries(
    store: RunStore, run_id: str, confidence: float = 0.95,
    progress: Callable[[int, int], None] | None = None,
    columns: Mapping[str, Any] | None = None,
) -> tuple[SliceSummary, ...]:
    """:func:`slice_summaries` of a stored run, counted by SQLite (no episode is loaded).

    What ``evalband show`` prints: on a million episodes it reads a few hundred aggregate
    rows instead of building a million records. ``progress(episodes counted, episodes in
    all)`` is called per cell. With the run's ``columns`` already read (a report), the same
    counts come from them (:func:`evalband.store.column_tallies`), without a second pass.
    """
    import json

    from evalband.analysis._summary import rank_error_causes, summary_from_tallies
    from evalband.panel import panel_from_yaml
    from evalband.store._columns import cell_tallies, column_tallies, error_messages

    manifest = store.require_run(run_id)
    tallies = (cell_tallies(store, run_id, progress) if columns is None
               else column_tallies(store, run_id, columns))

    def summary(cells: tuple[str, ...]) -> RunSummary:
        part = {c: tallies[c] for c in cells}
        errored = any(t["counts"].get("error", 0) for t in part.values())
        causes = rank_error_causes(error_messages(store, run_id, cells)) if errored else ()
        return summary_from_tallies(part, errors_as_failures=manifest.errors_as_failures,
                                    confidence=confidence, causes=causes)

    labels = {cell: dict(json.loads(t["slices"])) for cell, t in tallies.items()}
    return _per_slice(panel_from_yaml(manifest.panel_yaml), labels, summary)


def _per_slice(
    panel: Panel, labels: dict[str, dict[str, Any]],
    summary: Callable[[tuple[str, ...]], RunSummary],
) -> tuple[SliceSummary, ...]:
    """The slices of ``panel`` over cells with these labels, each summarised once."""
    from evalband.analysis._compare import slice_definitions

    done: dict[tuple[str, ...], RunSummary] = {}

    def once(cells: tuple[str, ...]) -> RunSummary:
        if cells not in done:
            done[cells] = summary(cells)
        return done[cells]

    out = []
    for kind, name, slices in slice_definitions(panel):
        if kind == "all":
            continue
        cells = tuple(c for c, got in labels.items()
                      if all(got.get(f) == v for f, v in slices.items()))
        out.append(SliceSummary(kind, name, once(cells)))
    out.append(SliceSummary("all", "all", once(tuple(labels))))
    return tuple(out)


def _noise(run: RunData, n: int, confidence: float) -> NoiseFloor | None:
    from evalband.analysis import noise_floor

    size = suite_size_for(n)
    if size is None or not run.records:
        return None
    try:
        return noise_floor(run.records, size, confidence=confidence,
                           errors_as_failures=run.errors_as_failures)
    except InvalidInputError:  # e.g. every episode errored: no swing to show
        return None


def _view(source: str, store: RunStore | None, confidence: float,
          progress: Callable[[str, int, int], None] | None = None) -> RunView:
    from evalband import load_run
    from evalband.analysis._metrics import metric_summaries

    def stage(label: str) -> Callable[[int, int], None] | None:
        if progress is None:
            return None
        return lambda done, total: progress(f"{label} {source}", done, total)

    # the seeds line and the latency section read these: one pass with the compare columns
    # what the page reads of a stored run beyond its columns, flagged in the same pass
    conditions = [WITH_MEDIA, WITH_REASON]
    manifest = None if store is None else store.get_run(str(source))
    if manifest is not None:
        from evalband.panel import panel_from_yaml
        from evalband.report._traces import trace_kind

        if trace_kind(panel_from_yaml(manifest.panel_yaml).env) is not None:
            conditions.append(WITH_TRACE)
    run = load_run(source, store, stage("reading"),
                   extra_columns=("condition_seed", "latency_ms_p50"),
                   conditions=conditions)
    if run.source == "store" and store is not None:  # counted from its columns: no records
        slices = stored_slice_summaries(store, run.run_id, confidence, stage("summarising"),
                                        columns=getattr(run.records, "columns", None))
    else:
        slices = slice_summaries(run, confidence)
    summary = slices[-1].summary
    return RunView(
        data=run,
        manifest=_manifest(source, run, store),
        summary=summary,
        slices=slices,
        noise=_noise(run, summary.n, confidence),
        metrics=tuple(metric_summaries(run.records, run.panel, confidence=confidence)),
    )


def collect(
    sources: Sequence[str | Path],
    store: RunStore | str | Path | None = None,
    *,
    command: str | None = None,
    title: str | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    allow_panel_mismatch: bool = False,
    sequential: bool = False,
    effect: float | None = None,
    max_pairs: int | None = None,
    comparisons: Sequence[Comparison] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    media_link: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> ReportData:
    """Load the runs and gather what the report shows.

    The comparisons are, in this order: ``comparisons`` when given (the caller computed
    them: ``compare --report``), the result ``evalband compare`` stored for these runs and
    options while the runs keep the episodes it was computed from, else computed here from
    the stored episodes. No env, policy or runner is imported either way.

    Args:
        sources: run ids (in ``store``) or artifact-bundle directories; the first is the
            baseline when there are several (as ``evalband compare``).
        store: a run store, a path to one, or ``None`` (bundles only).
        command: the command that asked for the report (shown in the reproducibility block).
        title: the report title (default: from the run ids).
        confidence: level of every band.
        seed: seed of the comparison's aggregate bootstrap.
        allow_panel_mismatch: compare runs of different panels anyway (the page says so).
        sequential: the anytime-valid verdict (``compare --sequential``; the viewer's live one).
        effect: the declared drop the power statements are for (``compare --effect``).
        max_pairs: with ``sequential``, the declared maximum of pairs (``--max-pairs``).
        comparisons: the comparisons of these runs (baseline first), already computed.
        progress: called as ``progress(stage, episodes done, episodes in all)`` while the
            runs are read and counted.
        media_link: a media reference -> its URL: clips are linked (``evalband view``
            serves them at ``/media/``), not embedded as ``data:`` URIs.

    Raises:
        InvalidParameterError: no sources.
        RunNotFoundError: a source is neither a run in the store nor a bundle.
        PanelMismatchError: runs made on different panels.
    """
    from evalband.analysis import compare_many
    from evalband.analysis._models import DEFAULT_EFFECT

    effect = DEFAULT_EFFECT if effect is None else effect
    names = [str(s) for s in sources] if not isinstance(sources, str | Path) else [str(sources)]
    if not names:
        raise InvalidParameterError(
            "a report needs at least one run id or artifact-bundle directory; got none"
        )
    if all(is_bundle(name) for name in names):
        store = None  # never create a store file just to read bundles
    found: tuple[Comparison, ...] | None = None
    source = "computed"
    if comparisons is not None:
        found, source = tuple(comparisons), "given"
    with open_for(store, names) as st:
        views = tuple(_view(name, st, confidence, progress) for name in names)
        store_file = None if st is None else st.path
        if found is None and st is not None and len(views) > 1 and seed == 0 and all(
                v.data.source == "store" for v in views):
            from evalband.analysis._stored import comparison_options, stored_comparisons

            found = stored_comparisons(st, [v.run_id for v in views], comparison_options(
                confidence=confidence, allow_panel_mismatch=allow_panel_mismatch,
                sequential=sequential, effect=effect, max_pairs=max_pairs if sequential
                else None))
            source = "computed" if found is None else "stored"
    if len(views) < 2:
        found = ()
    else:  # a run beside itself: its episodes matched with themselves, a comparison of nothing
        from evalband.analysis._compare import check_distinct_runs

        check_distinct_runs([v.data for v in views],
                            "report a run alone, or with different runs to compare it with")
    if found is None and sequential:
        from evalband.analysis import compare_sequential
        from evalband.analysis._sequential_plan import design_for

        found = tuple(compare_sequential(  # the design fixed before the data
            views[0].data, v.data, allow_panel_mismatch=allow_panel_mismatch,
            design=design_for(views[0].data, recorded=v.manifest.extra.get("sequential"),
                              candidate=v.data))
            for v in views[1:])
    elif found is None:
        found = tuple(compare_many(views[0].data, [v.data for v in views[1:]],
                                   confidence=confidence, seed=seed, effect=effect,
                                   allow_panel_mismatch=allow_panel_mismatch))
    if title is None:
        ids = [v.run_id for v in views]
        title = (f"evalband report: {ids[0]}" if len(ids) == 1
                 else f"evalband report: {', '.join(ids[1:])} vs {ids[0]}")
    from evalband.report._clips import choose_clips

    clips, left_out = choose_clips(views, found, _locators(views, names, store_file),
                                   link=media_link)
    return ReportData(runs=views, comparisons=found, title=title, command=command,
                      sources=tuple(names), confidence=confidence, clips=clips,
                      clips_left_out=left_out, comparisons_from=source)


def _locators(
    views: Sequence[RunView], names: Sequence[str], store_file: Path | None
) -> dict[str, Callable[[Mapping[str, Any]], Path | None]]:
    """Where each run's media files are: beside its store, or in its bundle's ``media/``."""
    from evalband.store._media import media_file

    def finder(root: Path) -> Callable[[Mapping[str, Any]], Path | None]:
        return lambda ref: media_file(root, ref)

    out: dict[str, Callable[[Mapping[str, Any]], Path | None]] = {}
    for view, name in zip(views, names, strict=True):
        if is_bundle(name):
            out[view.run_id] = finder(Path(name) / "bundle")  # media_file looks in <dir>/media
        elif store_file is not None:
            out[view.run_id] = finder(Path(store_file))
    return out
