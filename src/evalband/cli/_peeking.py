"""Record each stored comparison with its episode counts; say when a fixed-n verdict peeks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalband.analysis import Comparison
    from evalband.analysis._compare import RunData

__all__ = ["check_and_record"]


def check_and_record(
    store: Path,
    base: RunData,
    cands: Sequence[RunData],
    *,
    confidence: float,
    allow_panel_mismatch: bool,
    sequential: bool,
    results: Sequence[Comparison] | None = None,
    effect: float | None = None,
    max_pairs: int | None = None,
    discordant: float | None = None,
    notices: Sequence[str] = (),
) -> list[str]:
    """Record the comparison (with ``episode_counts`` in its options) and return the peeking notes.

    ``results`` (what was computed) are stored with it, each with the notes as its
    ``peeking`` field: reports and the viewer render them (the notices first) while the runs
    keep these episodes.

    The notes are ``notices`` (e.g. a sequential design chosen after the data: EXPLORATORY)
    and then, for a fixed-n verdict, the peeking notes: an incomplete run, an earlier
    comparison of the same runs at fewer episodes (``--sequential``'s verdict is valid at every
    look).
    """
    from msgspec.structs import replace

    from evalband.analysis._models import DEFAULT_EFFECT
    from evalband.analysis._sequential import episode_counts, peeking_notes
    from evalband.analysis._stored import comparison_options
    from evalband.report._document import comparison_documents
    from evalband.store import open_store

    runs = [base, *cands]
    counts = episode_counts(runs)
    options = comparison_options(confidence=confidence, allow_panel_mismatch=allow_panel_mismatch,
                                 sequential=sequential,
                                 effect=DEFAULT_EFFECT if effect is None else effect,
                                 max_pairs=max_pairs if sequential else None,
                                 discordant=discordant)
    with open_store(store) as st:
        previous = [c for c in st.comparisons() if not (c.get("options") or {}).get("sequential")]
        planned = {}
        for r in runs:
            manifest = st.get_run(r.run_id)
            if manifest is not None:
                planned[r.run_id] = (int(manifest.n_planned), str(manifest.status))
        notes = [*notices, *([] if sequential else peeking_notes(counts, planned, previous))]
        stored = None if results is None else comparison_documents(
            [replace(c, peeking=notes) for c in results])
        # one row per pair of runs and set of counts (the store dedupes identical options)
        st.record_comparison([r.run_id for r in runs], {**options, "episode_counts": counts},
                             result=stored, episode_counts=counts)
    return notes
