"""Pair tables: the counts a comparison decides on, computed column-wise for whole runs.

A comparison needs, per cell, each run's successes and episodes and -- where episodes pair by
``(cell, episode, repeat)`` -- the four pair types. :func:`run_columns` turns a run's records
into arrays once; :func:`cell_tables` joins two runs' arrays on the pairing key with numpy and
counts every cell at once, so a slice's table is the sum of its cells' tables and nothing is
computed per record per slice. :func:`pair_table` is the plain record-by-record definition the
column-wise path is tested against.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, overload

import msgspec
import numpy as np
from numpy.typing import NDArray

from evalband.episode import EpisodeRecord, Outcome

__all__ = [
    "PairTable", "pair_table", "RunColumns", "run_columns", "columns_from_arrays",
    "COMPARE_COLUMNS", "HAS_METRICS", "StoredRecords", "cell_tables",
    "cell_table_counts", "pair_spans", "stored_columns", "cell_ranks",
    "records_where",
]


class PairTable(msgspec.Struct, frozen=True):
    """The counts a slice's (or a cell's) decision needs, and nothing else.

    ``k_*``/``n_*``: each arm's successes and episodes (errors excluded unless counted as
    failures); ``both`` .. ``neither``: matched pair types; ``unmatched``: episodes in one
    run only. A table with no matched pair is compared unpaired. (A frozen struct: a
    comparison makes one per cell and per slice.)
    """

    k_baseline: int = 0
    n_baseline: int = 0
    k_candidate: int = 0
    n_candidate: int = 0
    both: int = 0
    baseline_only: int = 0
    candidate_only: int = 0
    neither: int = 0
    unmatched: int = 0

    @property
    def paired(self) -> bool:
        """Whether any episodes pair."""
        return self.both + self.baseline_only + self.candidate_only + self.neither > 0

    def __add__(self, other: PairTable) -> PairTable:
        return PairTable(*(getattr(self, f) + getattr(other, f) for f in _TABLE_FIELDS))

    def difference_counts(self) -> dict[str, int]:
        """Counts in the form :func:`evalband.stats.diff_paired` / the MOVER take."""
        if self.paired:
            return {"both": self.both, "a_only": self.candidate_only,
                    "b_only": self.baseline_only, "neither": self.neither}
        return {"k_a": self.k_candidate, "n_a": self.n_candidate, "k_b": self.k_baseline,
                "n_b": self.n_baseline}


_TABLE_FIELDS: tuple[str, ...] = PairTable.__struct_fields__


def pair_table(base: Sequence[EpisodeRecord], cand: Sequence[EpisodeRecord]) -> PairTable:
    """Count two runs' (already filtered) episodes into a :class:`PairTable`."""
    base_by_key = {r.key: r.success for r in base}
    cand_by_key = {r.key: r.success for r in cand}
    matched = base_by_key.keys() & cand_by_key.keys()
    tally = Counter((cand_by_key[k], base_by_key[k]) for k in matched)
    return PairTable(
        k_baseline=sum(r.success for r in base), n_baseline=len(base),
        k_candidate=sum(r.success for r in cand), n_candidate=len(cand),
        both=tally[True, True], baseline_only=tally[False, True],
        candidate_only=tally[True, False], neither=tally[False, False],
        unmatched=len(base_by_key.keys() ^ cand_by_key.keys()),
    )




@dataclass(frozen=True)
class RunColumns:
    """One run's records as arrays (one entry per record whose cell is on the panel)."""

    cell: NDArray[np.int64]
    episode: NDArray[np.int64]
    repeat: NDArray[np.int64]
    success: NDArray[np.bool_]
    error: NDArray[np.bool_]
    unaided: NDArray[np.bool_]
    intervened: NDArray[np.bool_]
    latency_p95: NDArray[np.float64]
    time_to_success: NDArray[np.float64]

    def counted(self, errors_as_failures: bool) -> NDArray[np.bool_]:
        """Which records a rate counts (every one, or the non-errors; read-only, kept)."""
        return self._every if errors_as_failures else self._not_error

    # What a comparison derives from one run's columns alone, computed once and kept with
    # them (the columns are read-only): a run compared again reads them without recomputing.

    @cached_property
    def sides(self) -> dict[tuple[int, bool], Any]:
        """The run's sides as comparisons count them, kept with these columns.

        Per (cells, errors rule), a :class:`~evalband.analysis._statistics.RunSide`.
        """
        return {}

    @cached_property
    def _every(self) -> NDArray[np.bool_]:
        return _read_only(np.ones(self.cell.size, dtype=np.bool_))

    @cached_property
    def _not_error(self) -> NDArray[np.bool_]:
        return _read_only(~self.error)

    def counted_columns(self, errors_as_failures: bool) -> tuple[NDArray[np.int64], ...]:
        """The counted records' cell, episode, repeat and success (read-only, kept).

        The success column is an ``int64`` 0/1 column (what a pair's code adds up).
        """
        return self._every_column if errors_as_failures else self._counted_column

    @cached_property
    def _every_column(self) -> tuple[NDArray[np.int64], ...]:
        return self.cell, self.episode, self.repeat, _read_only(self.success.astype(np.int64))

    @cached_property
    def _counted_column(self) -> tuple[NDArray[np.int64], ...]:
        use = self._not_error
        return (_read_only(self.cell[use]), _read_only(self.episode[use]),
                _read_only(self.repeat[use]), _read_only(self.success[use].astype(np.int64)))

    @cached_property
    def spans(self) -> tuple[int, int]:
        """One past the largest episode and repeat index (1 without records).

        A pairing key ``(cell * episodes + episode) * repeats + repeat`` of two runs takes
        each span as the larger of the two runs'.
        """
        return int(self.episode.max(initial=0)) + 1, int(self.repeat.max(initial=0)) + 1

    @cached_property
    def timed(self) -> NDArray[np.bool_]:
        """Which records succeeded with a recorded time to success (read-only)."""
        return _read_only(self.success & ~np.isnan(self.time_to_success))

    @cached_property
    def in_key_order(self) -> bool:
        """Whether the records are in strictly increasing pairing-key order (this run's spans)."""
        keys = self.keys(self.spans, True)
        return bool(np.all(keys[1:] > keys[:-1]))

    @cached_property
    def timed_by_key(self) -> tuple[NDArray[np.int64], NDArray[np.bool_], NDArray[np.float64]]:
        """Every record's cell, :attr:`timed` and time to success, in pairing-key order.

        The order of ``(cell, episode, repeat)``, the same under any spans at least this
        run's (:meth:`keys`); the columns themselves when they are in it (read-only).
        """
        if self.in_key_order:
            return self.cell, self.timed, self.time_to_success
        order = np.argsort(self.keys(self.spans, True), kind="stable")
        return (_read_only(self.cell[order]), _read_only(self.timed[order]),
                _read_only(self.time_to_success[order]))

    def same_keys(self, other: RunColumns, spans: tuple[int, int],
                  errors_as_failures: bool) -> bool:
        """Whether both runs' counted records have the same pairing keys in the same order.

        (The keys' bytes compared, kept with each run: equal bytes are equal keys.)
        """
        return self._key_bytes(spans, errors_as_failures) == other._key_bytes(
            spans, errors_as_failures)

    def _key_bytes(self, spans: tuple[int, int], errors_as_failures: bool) -> bytes:
        found: bytes | None = self._derived.get(("bytes", spans, errors_as_failures))
        if found is None:
            found = self.keys(spans, errors_as_failures).tobytes()
            self._derived["bytes", spans, errors_as_failures] = found
        return found

    def keys(self, spans: tuple[int, int], errors_as_failures: bool) -> NDArray[np.int64]:
        """The counted records' pairing keys ``(cell * episodes + episode) * repeats + repeat``.

        ``spans``: (episodes, repeats), each at least this run's (:func:`pair_spans` of two
        runs); ``errors_as_failures``: every record (True) or the non-errors. Read-only, kept.
        """
        found: NDArray[np.int64] | None = self._derived.get((spans, errors_as_failures))
        if found is None:
            cell, episode, repeat, _ = self.counted_columns(errors_as_failures)
            found = _read_only((cell * spans[0] + episode) * spans[1] + repeat)
            self._derived[spans, errors_as_failures] = found
        return found

    def cell_counts(self, n_cells: int, errors_as_failures: bool) -> NDArray[np.int64]:
        """Per cell (rows x ``n_cells``, read-only, kept): the run's counts a comparison reads.

        The rows: episodes, counted episodes (errors left out unless counted as failures),
        counted episodes that succeeded unaided, counted episodes that were helped, counted
        successes.
        """
        found: NDArray[np.int64] | None = self._derived.get((n_cells, errors_as_failures))
        if found is None:
            use = self.counted(errors_as_failures)
            found = _read_only(np.stack([
                np.bincount(self.cell[mask], minlength=n_cells)
                for mask in (slice(None), use, use & self.unaided, use & self.intervened,
                             use & self.success)]).astype(np.int64))
            self._derived[n_cells, errors_as_failures] = found
        return found

    def pair_codes(self, errors_as_failures: bool) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The counted records' parts of a pair's type code ``cell * 4 + 2 * c + b``.

        As the baseline (``cell * 4 + success``) and as the candidate (``2 * success``), where
        ``b`` and ``c`` are the baseline's and the candidate's success (read-only, kept).
        """
        found: Any = self._derived.get(("codes", errors_as_failures))
        if found is None:
            cell, _, _, success = self.counted_columns(errors_as_failures)
            found = (_read_only(cell * 4 + success), _read_only(2 * success))
            self._derived["codes", errors_as_failures] = found
        return found  # type: ignore[no-any-return]

    @cached_property
    def _derived(self) -> dict[Any, Any]:
        """What :meth:`keys`, :meth:`cell_counts` and :meth:`pair_codes` computed, by argument."""
        return {}


def _read_only(array: NDArray[Any]) -> NDArray[Any]:
    array.flags.writeable = False
    return array


def run_columns(records: Sequence[EpisodeRecord], cells: Sequence[str]) -> RunColumns:
    """Arrays of the fields a comparison reads; records of other cells are left out."""
    index = {key: i for i, key in enumerate(cells)}
    nan = float("nan")
    success, error = Outcome.SUCCESS, Outcome.ERROR
    rows = [
        (index[r.cell], r.episode, r.repeat, r.outcome is success, r.outcome is error,
         r.outcome is success and not r.assisted, r.assisted or r.interventions > 0,
         nan if r.latency_ms_p95 is None else r.latency_ms_p95,
         nan if r.time_to_success_s is None else r.time_to_success_s)
        for r in records if r.cell in index
    ]
    if not rows:
        z = np.zeros(0, dtype=np.int64)
        f = np.zeros(0, dtype=np.bool_)
        x = np.zeros(0, dtype=np.float64)
        return RunColumns(z, z, z, f, f, f, f, x, x)
    cell, ep, rep, ok, err, unaided, helped, lat, tts = zip(*rows, strict=True)
    return RunColumns(
        cell=np.asarray(cell, dtype=np.int64),
        episode=np.asarray(ep, dtype=np.int64),
        repeat=np.asarray(rep, dtype=np.int64),
        success=np.asarray(ok, dtype=np.bool_),
        error=np.asarray(err, dtype=np.bool_),
        unaided=np.asarray(unaided, dtype=np.bool_),
        intervened=np.asarray(helped, dtype=np.bool_),
        latency_p95=np.asarray(lat, dtype=np.float64),
        time_to_success=np.asarray(tts, dtype=np.float64),
    )


HAS_METRICS = """instr("extra", 'metrics') > 0 OR instr("extra", '\\u') > 0"""
"""SQL: the episode's ``extra`` JSON may hold metrics (:mod:`evalband.analysis._metrics`).

A superset of those that do (a text naming ``metrics`` anywhere, or with an escape that
could spell it): only these episodes' ``extra`` texts are read and decoded.
"""

COMPARE_COLUMNS: tuple[str, ...] = (
    "cell", "episode", "repeat", "outcome", "assisted", "interventions", "latency_ms_p95",
    "time_to_success_s", f"where {HAS_METRICS}",
)
"""The store columns (:meth:`evalband.store.RunStore.episode_columns`) a comparison reads;
the last, whether an episode may hold metrics, read in the same pass (the ``extra`` texts
of those episodes are read after it, :meth:`StoredRecords.column_where`)."""


class StoredRecords(Sequence[EpisodeRecord]):
    """A stored run's episodes: columns read up front, records read on first use.

    ``columns``: :data:`COMPARE_COLUMNS` as the store gives them (what a comparison reads);
    ``read``: returns the records (in the columns' order) when something indexes or
    iterates them, once. Immutable, so the columns always describe the records.

    >>> import numpy as np
    >>> recs = StoredRecords({"cell": np.array(["a"], dtype=object)}, lambda: ["record"])
    >>> len(recs), recs._records is None, list(recs)
    (1, True, ['record'])
    """

    def __init__(self, columns: Mapping[str, NDArray[Any]],
                 read: Callable[[], list[EpisodeRecord]],
                 read_where: Callable[[str], list[EpisodeRecord]] | None = None,
                 read_column: Callable[[str], NDArray[Any]] | None = None,
                 read_column_where: Callable[[str, str], NDArray[Any]] | None = None,
                 ) -> None:
        self.columns = columns
        self._read = read
        self._read_where = read_where
        self._read_column = read_column
        self._read_column_where = read_column_where
        self._records: list[EpisodeRecord] | None = None

    def column(self, name: str) -> NDArray[Any] | None:
        """One more store column, read alone while the records are not; ``None`` if it cannot.

        As :meth:`~evalband.store.RunStore.episode_columns` gives it.
        """
        if name in self.columns:
            return self.columns[name]
        if self._records is not None or self._read_column is None:
            return None
        return self._read_column(name)

    def column_where(self, name: str, condition: str) -> NDArray[Any] | None:
        """One more column where the episodes meet ``condition`` (``None`` elsewhere).

        Read alone for those episodes only, and not at all when none does; the condition
        must have been read with the columns (``"where <condition>"``). ``None`` when it
        cannot be read so.
        """
        met = self.columns.get(f"where {condition}")
        if met is None or self._records is not None or self._read_column_where is None:
            return None
        out = np.full(len(met), None, dtype=object)
        if bool(met.any()):
            out[met] = self._read_column_where(name, condition)
        return out

    def where(self, condition: str) -> list[EpisodeRecord] | None:
        """The records the SQL ``condition`` selects, read alone; ``None`` when it cannot.

        Nothing is read when the condition was read with the columns (``"where <condition>"``)
        and no episode meets it.
        """
        if self._records is not None or self._read_where is None:
            return None
        met = self.columns.get(f"where {condition}")
        if met is not None and not bool(met.any()):
            return []
        return self._read_where(condition)

    def _loaded(self) -> list[EpisodeRecord]:
        if self._records is None:
            self._records = self._read()
        return self._records

    def __len__(self) -> int:
        return len(self.columns["cell"]) if self._records is None else len(self._records)

    @overload
    def __getitem__(self, index: int) -> EpisodeRecord: ...
    @overload
    def __getitem__(self, index: slice) -> list[EpisodeRecord]: ...
    def __getitem__(self, index: int | slice) -> EpisodeRecord | list[EpisodeRecord]:
        return self._loaded()[index]

    def __iter__(self) -> Iterator[EpisodeRecord]:
        return iter(self._loaded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return self._loaded() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StoredRecords({len(self)} episodes)"


def columns_from_arrays(
    arrays: Mapping[str, NDArray[Any]], cells: Sequence[str]
) -> RunColumns:
    """:class:`RunColumns` from the store's column arrays (no per-episode Python object).

    ``arrays``: :data:`COMPARE_COLUMNS` as :meth:`~evalband.store.RunStore.episode_columns`
    gives them (``outcome`` as codes into :data:`~evalband.store._columns.OUTCOME_CODES`).
    Equal to :func:`run_columns` of the same episodes in the same order.

    >>> import numpy as np
    >>> cols = columns_from_arrays({
    ...     "cell": np.array(["a", "b", "z"], dtype=object), "episode": np.arange(3),
    ...     "repeat": np.zeros(3, dtype=np.int64), "outcome": np.array([0, 1, 0], np.int8),
    ...     "assisted": np.array([True, False, False]), "interventions": np.zeros(3, np.int64),
    ...     "latency_ms_p95": np.full(3, np.nan), "time_to_success_s": np.full(3, np.nan)},
    ...     ["a", "b"])
    >>> cols.cell.tolist(), cols.success.tolist(), cols.unaided.tolist()
    ([0, 1], [True, False], [False, False])
    """
    from evalband.store._columns import OUTCOME_CODES

    keys = np.asarray(arrays["cell"], dtype=object)
    index = {key: i for i, key in enumerate(cells)}
    # The store orders rows by cell: look each run of equal keys up once.
    starts = np.flatnonzero(np.concatenate(([keys.size > 0], keys[1:] != keys[:-1])))
    codes = np.fromiter((index.get(str(keys[i]), -1) for i in starts), dtype=np.int64,
                        count=starts.size)
    cell = np.repeat(codes, np.diff(np.append(starts, keys.size)))
    keep: Any = slice(None) if bool(np.all(codes >= 0)) else cell >= 0  # no copy when all
    outcome = np.asarray(arrays["outcome"])[keep]
    success = outcome == OUTCOME_CODES.index(Outcome.SUCCESS.value)
    assisted = np.asarray(arrays["assisted"], dtype=np.bool_)[keep]
    return RunColumns(
        cell=cell[keep],
        episode=np.asarray(arrays["episode"], dtype=np.int64)[keep],
        repeat=np.asarray(arrays["repeat"], dtype=np.int64)[keep],
        success=success,
        error=outcome == OUTCOME_CODES.index(Outcome.ERROR.value),
        unaided=success & ~assisted,
        intervened=assisted | (np.asarray(arrays["interventions"])[keep] > 0),
        latency_p95=np.asarray(arrays["latency_ms_p95"], dtype=np.float64)[keep],
        time_to_success=np.asarray(arrays["time_to_success_s"], dtype=np.float64)[keep],
    )


def cell_tables(
    base: RunColumns, cand: RunColumns, n_cells: int, errors_as_failures: bool
) -> list[PairTable]:
    """Every cell's :class:`PairTable` from two runs' columns, in one vectorised pass."""
    return [PairTable(*row)
            for row in cell_table_counts(base, cand, n_cells, errors_as_failures).tolist()]


def pair_spans(base: RunColumns, cand: RunColumns) -> tuple[int, int]:
    """The spans of two runs' pairing keys: each run's largest episode and repeat, plus one."""
    (eb, rb), (ec, rc) = base.spans, cand.spans
    return max(eb, ec), max(rb, rc)


_PAIR_TYPES = np.zeros((4, len(_TABLE_FIELDS)), dtype=np.int64)
"""A cell's pair-type counts (by ``2 * candidate success + baseline success``) to its
:class:`PairTable` fields: ``neither``, ``baseline_only``, ``candidate_only``, ``both``, and
minus two ``unmatched`` per matched pair."""
for _code, _field in enumerate(("neither", "baseline_only", "candidate_only", "both")):
    _PAIR_TYPES[_code, _TABLE_FIELDS.index(_field)] = 1
_PAIR_TYPES[:, _TABLE_FIELDS.index("unmatched")] = -2
_PAIR_TYPES.flags.writeable = False


def cell_table_counts(
    base: RunColumns, cand: RunColumns, n_cells: int, errors_as_failures: bool
) -> NDArray[np.int64]:
    """:func:`cell_tables` as an array, so that a slice's table is a sum of rows.

    One row per cell, one column per :class:`PairTable` field (in its order): each run's
    successes and episodes per cell (:meth:`RunColumns.cell_counts`, kept with the run), plus
    the matched pairs' types counted per cell (``_PAIR_TYPES``), the only count of the pair.
    """
    spans = pair_spans(base, cand)
    if n_cells * spans[0] * spans[1] >= 2**62:  # pragma: no cover - absurd indices
        raise OverflowError("episode indices too large to pair column-wise")
    as_base, _ = base.pair_codes(errors_as_failures)
    _, as_cand = cand.pair_codes(errors_as_failures)
    if base.same_keys(cand, spans, errors_as_failures):  # the same episodes: every one pairs
        code = as_base + as_cand
    else:
        kb, kc = base.keys(spans, errors_as_failures), cand.keys(spans, errors_as_failures)
        _, ib, ic = np.intersect1d(kb, kc, assume_unique=True, return_indices=True)
        code = as_base[ib] + as_cand[ic]
    types = np.bincount(code, minlength=4 * n_cells).reshape(n_cells, 4)
    return (_run_table(base, n_cells, errors_as_failures, "baseline")
            + _run_table(cand, n_cells, errors_as_failures, "candidate")
            + types @ _PAIR_TYPES)


def _run_table(columns: RunColumns, n_cells: int, errors_as_failures: bool,
               arm: str) -> NDArray[np.int64]:
    """A run's part of the cells' tables as the ``arm``: its ``k``, its ``n``, ``unmatched``."""
    key = (n_cells, errors_as_failures, arm)
    found: NDArray[np.int64] | None = columns._derived.get(key)
    if found is None:
        counts = columns.cell_counts(n_cells, errors_as_failures)
        found = np.zeros((n_cells, len(_TABLE_FIELDS)), dtype=np.int64)
        for field, row in ((f"k_{arm}", 4), (f"n_{arm}", 1), ("unmatched", 1)):
            found[:, _TABLE_FIELDS.index(field)] = counts[row]
        columns._derived[key] = _read_only(found)
    return found


def stored_columns(records: Sequence[EpisodeRecord]) -> Mapping[str, NDArray[Any]] | None:
    """A stored run's column arrays when its records are not read yet, else ``None``.

    Consumers that can work on columns (curves, pair counts) use them instead of reading a
    record per episode; once the records are read anyway, the records are as cheap.
    """
    if isinstance(records, StoredRecords) and records._records is None:
        return records.columns
    return None


def cell_ranks(*cells: NDArray[Any]) -> tuple[list[str], list[NDArray[np.int64]]]:
    """The sorted distinct keys of several ``cell`` columns; each column as indices into them.

    Integer order is the keys' order (what sorting by the cell key needs).

    >>> import numpy as np
    >>> keys, (a, b) = cell_ranks(np.array(["b", "b", "a"], dtype=object),
    ...                           np.array(["c"], dtype=object))
    >>> keys, a.tolist(), b.tolist()
    (['a', 'b', 'c'], [1, 1, 0], [2])
    """
    runs = []
    for column in cells:
        keys = np.asarray(column, dtype=object)
        starts = np.flatnonzero(np.concatenate(([keys.size > 0], keys[1:] != keys[:-1])))
        runs.append((keys, starts))
    distinct = sorted({str(keys[i]) for keys, starts in runs for i in starts})
    index = {key: i for i, key in enumerate(distinct)}
    out = []
    for keys, starts in runs:
        codes = np.fromiter((index[str(keys[i])] for i in starts), dtype=np.int64,
                            count=starts.size)
        out.append(np.repeat(codes, np.diff(np.append(starts, keys.size))))
    return distinct, out


def records_where(
    records: Sequence[EpisodeRecord], condition: str, test: Callable[[EpisodeRecord], bool]
) -> list[EpisodeRecord]:
    """The records that pass ``test``, reading from a stored run only what ``condition`` selects.

    ``condition`` is an SQL condition selecting a superset of them (e.g. ``"error" IS NOT
    NULL``), so a stored run's other episodes are never made records.

    >>> import numpy as np
    >>> recs = StoredRecords({"cell": np.array(["a"], dtype=object)}, lambda: ["x", "y"])
    >>> records_where(recs, "1", lambda r: r == "y")
    ['y']
    """
    selected = records.where(condition) if isinstance(records, StoredRecords) else None
    return [r for r in (records if selected is None else selected) if test(r)]
