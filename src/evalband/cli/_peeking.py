"""Record each stored comparison with its episode counts; say when a fixed-n verdict peeks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalband.analysis import RunData

__all__ = ["check_and_record"]


def check_and_record(
    store: Path,
    base: RunData,
    cands: Sequence[RunData],
    *,
    confidence: float,
    allow_panel_mismatch: bool,
    sequential: bool,
) -> list[str]:
    """Record the comparison (with ``episode_counts`` in its options) and return the peeking notes.

    The notes are empty for ``--sequential`` (its verdict is valid at every look); otherwise
    they name an incomplete run and an earlier comparison of the same runs at fewer episodes.
    """
    from evalband.analysis._sequential import episode_counts, peeking_notes
    from evalband.store import open_store

    runs = [base, *cands]
    counts = episode_counts(runs)
    options: dict[str, object] = {} if confidence == 0.95 else {"confidence": confidence}
    if allow_panel_mismatch:
        options["allow_panel_mismatch"] = True
    if sequential:
        options["sequential"] = True
    with open_store(store) as st:
        previous = [c for c in st.comparisons() if not (c.get("options") or {}).get("sequential")]
        planned = {}
        for r in runs:
            manifest = st.get_run(r.run_id)
            if manifest is not None:
                planned[r.run_id] = (int(manifest.n_planned), str(manifest.status))
        # one row per pair of runs and set of counts (the store dedupes identical options)
        st.record_comparison([r.run_id for r in runs], {**options, "episode_counts": counts})
    if sequential:
        return []
    return peeking_notes(counts, planned, previous)
