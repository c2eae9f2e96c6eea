"""The Python API's entry points that combine layers (store + analysis)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalband.analysis import Comparison
    from evalband.analysis._compare import RunData
    from evalband.episode import EpisodeRecord
    from evalband.store import RunStore

__all__ = ["load_run", "compare"]


def load_run(
    source: str | Path,
    store: RunStore | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    extra_columns: Sequence[str] = (),
    conditions: Sequence[str] = (),
) -> RunData:
    """A run by id (in ``store``) or by artifact-bundle path (verified), as :class:`RunData`.

    A stored run carries its episodes column-wise (what a comparison reads, without one
    Python object per episode); its ``records`` are read on first use. ``progress(episodes
    read, episodes in all)`` is called while a stored run's columns are read.
    ``extra_columns`` are read in the same pass as the comparison's columns (one read of the
    store instead of one more per column; a report asks for the seeds and latencies).
    ``conditions`` (SQL on an episode's row) are read in that pass too, as boolean columns:
    :meth:`StoredRecords.where <evalband.analysis.StoredRecords.where>` of such a condition
    reads nothing when no episode meets it.

    The reference is resolved by :func:`evalband.store.resolve_run`: a stored run id wins; a
    bundle must be written as a path (``./baseline``, ``runs/baseline``). A bundle is the
    baseline of record: it is read as exported, never re-run.

    Raises:
        RunNotFoundError: an id that is not stored (the message names a same-named bundle
            directory when there is one).
        BundleError: a path that is not a bundle, or a bundle that fails its checks.
    """
    from evalband.analysis import StoredRecords
    from evalband.analysis._compare import RunData
    from evalband.analysis._pairs import COMPARE_COLUMNS
    from evalband.panel import panel_from_yaml
    from evalband.store._bundle import load_bundle
    from evalband.store._refs import resolve_run

    ref = resolve_run(source, store)
    records: Sequence[EpisodeRecord]
    if ref.kind == "bundle":
        assert ref.path is not None
        manifest, records = load_bundle(ref.path)
        origin = f"bundle {ref.path}"
    else:
        assert store is not None and ref.run_id is not None
        manifest = store.require_run(ref.run_id)
        wanted = [*COMPARE_COLUMNS, *(c for c in extra_columns if c not in COMPARE_COLUMNS)]
        records = StoredRecords(store.episode_columns(ref.run_id, wanted, progress, conditions),
                                _reader(store, ref.run_id), _where_reader(store, ref.run_id),
                                _column_reader(store, ref.run_id),
                                _column_where_reader(store, ref.run_id))
        origin = "store"
    return RunData(
        run_id=manifest.run_id,
        policy=manifest.policy,
        panel_fingerprint=manifest.panel_fingerprint,
        panel=panel_from_yaml(manifest.panel_yaml),
        records=records,
        errors_as_failures=manifest.errors_as_failures,
        source=origin,
    )


def _reader(store: RunStore, run_id: str) -> Callable[[], list[EpisodeRecord]]:
    """Reads a stored run's records; from the same file opened read-only once closed."""

    def read() -> list[EpisodeRecord]:
        if not store.closed:
            return store.episode_records(run_id)
        from evalband.store import open_store

        with open_store(store.path, read_only=True) as st:
            return st.episode_records(run_id)

    return read


def _where_reader(store: RunStore, run_id: str) -> Callable[[str], list[EpisodeRecord]]:
    """Reads the stored records an SQL condition selects (as :func:`_reader`)."""

    def read(condition: str) -> list[EpisodeRecord]:
        if not store.closed:
            return store.episode_records(run_id, where=condition)
        from evalband.store import open_store

        with open_store(store.path, read_only=True) as st:
            return st.episode_records(run_id, where=condition)

    return read


def _column_reader(store: RunStore, run_id: str) -> Callable[[str], Any]:
    """Reads one more column of a stored run (as :func:`_reader`)."""

    def read(name: str) -> Any:
        if not store.closed:
            return store.episode_columns(run_id, [name])[name]
        from evalband.store import open_store

        with open_store(store.path, read_only=True) as st:
            return st.episode_columns(run_id, [name])[name]

    return read


def _column_where_reader(store: RunStore, run_id: str) -> Callable[[str, str], Any]:
    """Reads one more column of the stored episodes a condition selects (as :func:`_reader`)."""

    def read(name: str, condition: str) -> Any:
        if not store.closed:
            return store.episode_columns(run_id, [name], where=condition)[name]
        from evalband.store import open_store

        with open_store(store.path, read_only=True) as st:
            return st.episode_columns(run_id, [name], where=condition)[name]

    return read


def compare(
    baseline: str | Path,
    candidate: str | Path,
    *,
    store: RunStore | str | Path | None = None,
    allow_panel_mismatch: bool = False,
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """Compare two runs (ids in ``store`` or artifact-bundle paths).

    >>> import tempfile, evalband
    >>> store = evalband.open_store(f"{tempfile.mkdtemp()}/s.sqlite")
    >>> panel = evalband.load_panel("reach1d")
    >>> for p in ("reach1d:baseline", "reach1d:damped"):
    ...     _ = evalband.run_panel(panel, p, store, run_id=p.split(":")[1])
    >>> c = evalband.compare("baseline", "damped", store=store)
    >>> str(c.verdict), c.slice_rows[0].pairs["candidate_only"]
    ('improves', 42)
    """
    from evalband.analysis import compare_runs
    from evalband.store import RunStore, open_store

    opened = None
    if store is not None and not isinstance(store, RunStore):
        opened = store = open_store(store)
    try:
        base = load_run(baseline, store)
        cand = load_run(candidate, store)
    finally:
        if opened is not None:
            opened.close()
    return compare_runs(base, cand, allow_panel_mismatch=allow_panel_mismatch,
                        confidence=confidence, seed=seed)
