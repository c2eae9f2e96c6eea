"""Compare stored runs and record the comparison: one code path for the CLI and the library.

``evalband compare`` and a Python caller both go through :func:`record_comparison`: the runs
are compared (unless the caller computed the comparisons already, e.g. a sequential design or
with a progress bar), the comparison is recorded in the run store with its episode counts
(``evalband view`` lists it; a report reads its stored result back), and the peeking notes
are returned and carried by each result (every renderer says them first).

The notes are the caller's ``notices`` (a sequential design chosen after the data:
EXPLORATORY) and then, for a fixed-n verdict, the peeking notes: an incomplete run, an earlier
comparison of the same runs at fewer episodes (a sequential verdict is valid at every look).
A bundle, a store opened read-only, or one this user cannot write, is compared but not
recorded: then only the notices are said.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalband.analysis import Comparison
    from evalband.analysis._compare import RunData
    from evalband.store import RunStore

__all__ = ["RecordedComparison", "record_comparison"]


@dataclass(frozen=True)
class RecordedComparison:
    """What :func:`record_comparison` compared and recorded.

    Attributes:
        comparisons: one per candidate, each carrying ``notes`` as its ``peeking`` field.
        notes: the notices and peeking notes, in the order every renderer says them.
        recorded: whether the comparison is in the store (``False``: a bundle among the
            runs, a store opened read-only, or one this user cannot write).
    """

    comparisons: tuple[Comparison, ...]
    notes: tuple[str, ...]
    recorded: bool


def record_comparison(
    store: RunStore | str | Path,
    baseline: str | Path | RunData,
    candidates: Sequence[str | Path | RunData],
    *,
    confidence: float = 0.95,
    allow_panel_mismatch: bool = False,
    effect: float | None = None,
    results: Sequence[Comparison] | None = None,
    sequential: bool = False,
    max_pairs: int | None = None,
    discordant: float | None = None,
    scorer: str | None = None,
    success_at: float = 1.0,
    notices: Sequence[str] = (),
) -> RecordedComparison:
    """Compare ``candidates`` with ``baseline`` and record the comparison in ``store``.

    Args:
        store: the run store (an open :class:`~evalband.store.RunStore` or its path).
        baseline: a run id, a bundle path, or a loaded run (:func:`evalband.load_run`).
        candidates: one or more candidates, as ``baseline``.
        confidence: one minus the family-wise error rate.
        allow_panel_mismatch: compare runs of different panels anyway.
        effect: the drop the power statements plan for (default ``DEFAULT_EFFECT``).
        results: the comparisons already computed (one per candidate); ``None``: computed
            here by :func:`evalband.analysis.compare_many`.
        sequential: ``results`` are sequential comparisons (no peeking notes; the design
            options are recorded).
        max_pairs: the sequential design's maximum (recorded with ``sequential``).
        discordant: the discordance the design assumed (recorded).
        scorer: the named scorer ``results`` were judged by (recorded; ``compare --scorer``).
        success_at: the scorer's value counted as a success (recorded with ``scorer``).
        notices: notes said before the peeking notes.

    Returns:
        A :class:`RecordedComparison`.

    >>> import tempfile, evalband
    >>> store = evalband.open_store(f"{tempfile.mkdtemp()}/s.sqlite")
    >>> panel = evalband.load_panel("reach1d")
    >>> for p in ("reach1d:baseline", "reach1d:damped"):
    ...     _ = evalband.run_panel(panel, p, store, run_id=p.split(":")[1])
    >>> done = record_comparison(store, "baseline", ["damped"])
    >>> str(done.comparisons[0].verdict), done.recorded, len(store.comparisons())
    ('improves', True, 1)
    """
    from evalband.store import RunStore

    given = store if isinstance(store, RunStore) and not store.closed else None
    path = store.path if isinstance(store, RunStore) else Path(store)
    refs = [baseline, *candidates]
    if any(isinstance(ref, str | Path) for ref in refs):
        with _store(given, path, read_only=True) as st:
            runs = [_loaded(st, ref) for ref in refs]
    else:
        runs = list(refs)  # type: ignore[arg-type]  # all loaded already
    base, cands = runs[0], runs[1:]
    if results is None and scorer is not None:
        from evalband.errors import InvalidInputError

        raise InvalidInputError(
            "`scorer` records the scorer that judged `results`; pass the comparisons judged "
            "by it (`evalband compare --scorer` does), or store judged runs with "
            "`rescore_run` and compare those")
    if results is None:
        from evalband.analysis import compare_many
        from evalband.analysis._models import DEFAULT_EFFECT

        results = compare_many(base, cands, allow_panel_mismatch=allow_panel_mismatch,
                               confidence=confidence,
                               effect=DEFAULT_EFFECT if effect is None else effect)
    notes, recorded = list(notices), False
    writable = given is None or not given.read_only  # a store opened read-only stays so
    if writable and all(r.source == "store" for r in (base, *cands)):
        from evalband.errors import StoreError

        try:
            with _store(given, path) as st:
                notes = _record(st, base, cands, results, notices, confidence=confidence,
                                allow_panel_mismatch=allow_panel_mismatch,
                                sequential=sequential, effect=effect, max_pairs=max_pairs,
                                discordant=discordant, scorer=scorer, success_at=success_at)
            recorded = True
        except StoreError:
            pass  # a store this user cannot write: compared, not listed
    if notes:  # part of the result (stored with it): every renderer says it first
        from msgspec.structs import replace

        results = [replace(r, peeking=notes) for r in results]
    return RecordedComparison(tuple(results), tuple(notes), recorded)


@contextmanager
def _store(given: RunStore | None, path: Path, *, read_only: bool = False) -> Iterator[RunStore]:
    """The caller's open store, or ``path`` opened for this call (and closed after it)."""
    if given is not None:
        yield given
        return
    from evalband.store import open_store

    with open_store(path, read_only=read_only) as st:
        yield st


def _loaded(store: RunStore, ref: str | Path | RunData) -> RunData:
    """A run by reference (:func:`evalband.load_run`), or the run already loaded."""
    from evalband._api import load_run

    return load_run(ref, store) if isinstance(ref, str | Path) else ref


def _record(st: RunStore, base: RunData, cands: Sequence[RunData],
            results: Sequence[Comparison], notices: Sequence[str], *, confidence: float,
            allow_panel_mismatch: bool, sequential: bool, effect: float | None,
            max_pairs: int | None, discordant: float | None, scorer: str | None = None,
            success_at: float = 1.0) -> list[str]:
    """Record the comparison (``episode_counts`` in its options); return the notes."""
    from msgspec.structs import replace

    from evalband.analysis._models import DEFAULT_EFFECT
    from evalband.analysis._sequential import episode_counts, peeking_notes
    from evalband.analysis._stored import comparison_options
    from evalband.report._document import comparison_documents

    runs = [base, *cands]
    counts = episode_counts(runs)
    options = comparison_options(confidence=confidence, allow_panel_mismatch=allow_panel_mismatch,
                                 sequential=sequential,
                                 effect=DEFAULT_EFFECT if effect is None else effect,
                                 max_pairs=max_pairs if sequential else None,
                                 discordant=discordant, scorer=scorer,
                                 success_at=success_at)
    previous = [c for c in st.comparisons() if not (c.get("options") or {}).get("sequential")]
    planned = {}
    for r in runs:
        manifest = st.get_run(r.run_id)
        if manifest is not None:
            planned[r.run_id] = (int(manifest.n_planned), str(manifest.status))
    notes = [*notices, *([] if sequential else peeking_notes(counts, planned, previous))]
    stored = comparison_documents([replace(c, peeking=notes) for c in results])
    # one row per pair of runs and set of counts (the store dedupes identical options)
    st.record_comparison([r.run_id for r in runs], {**options, "episode_counts": counts},
                         result=stored, episode_counts=counts)
    return notes
