"""Column-wise reads of a run's episodes: numpy arrays instead of one object per episode.

A run of a million episodes read as :class:`~evalband.episode.EpisodeRecord` objects costs
gigabytes and many seconds; most consumers (comparisons, summaries, reports) need a few
columns. :func:`episode_columns` streams the rows out of SQLite in blocks and fills one
preallocated array per column, so memory is the arrays themselves (a few bytes per episode
and column) plus one block of rows. :func:`cell_tallies` lets SQLite do the counting for a
summary (outcome counts, times among successes, assistance per cell) without moving rows
into Python at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.episode import EPISODE_FIELDS, Outcome
from evalband.errors import InvalidInputError

if TYPE_CHECKING:
    from evalband.store._sqlite import RunStore

__all__ = [
    "episode_columns", "cell_tallies", "error_messages", "OUTCOME_CODES", "DEFAULT_COLUMNS",
]

OUTCOME_CODES: tuple[str, ...] = tuple(o.value for o in Outcome)
"""``outcome`` arrays hold the index of the outcome in this tuple (success is 0)."""

DEFAULT_COLUMNS: tuple[str, ...] = (
    "cell", "episode", "repeat", "condition_seed", "outcome", "assisted", "score",
    "time_to_success_s",
)
"""The columns a comparison reads when none are named."""

_BLOCK = 65_536
_INT = {"episode": np.int64, "repeat": np.int64, "steps": np.int64, "interventions": np.int64,
        "attempts": np.int64}
_BOOL = ("terminated", "truncated", "assisted")
_FLOAT = ("sim_time_s", "time_to_success_s", "latency_ms_p50", "latency_ms_p95",
          "latency_ms_max", "env_ms", "wall_s")


def _sql_expression(name: str) -> str:
    if name == "outcome":
        cases = " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(OUTCOME_CODES))
        return f'CASE "outcome" {cases} ELSE -1 END'
    if name == "score":
        return 'COALESCE("score", -1)'
    return f'"{name}"'


def _empty(name: str, n: int) -> np.ndarray[Any, Any]:
    if name in _INT:
        return np.empty(n, dtype=np.int64)
    if name in _BOOL:
        return np.empty(n, dtype=bool)
    if name in _FLOAT:
        return np.empty(n, dtype=np.float64)
    if name in ("outcome",):
        return np.empty(n, dtype=np.int8)
    if name == "score":
        return np.empty(n, dtype=np.int64)
    return np.empty(n, dtype=object)


def _cell_column(conn: Any, run_id: str, n: int) -> np.ndarray[Any, Any]:
    """The ``cell`` column in ``(cell, episode, repeat)`` order from one count per cell."""
    column = np.empty(n, dtype=object)
    start = 0
    for cell, count in conn.execute('SELECT "cell", COUNT(*) FROM episodes WHERE run_id = ? '
                                    'GROUP BY "cell" ORDER BY "cell"', (run_id,)):
        column[start:start + count] = cell
        start += count
    return column


def episode_columns(
    store: RunStore, run_id: str, columns: Sequence[str] | None = None
) -> dict[str, np.ndarray[Any, Any]]:
    """A run's episodes as one numpy array per column, ordered by ``(cell, episode, repeat)``.

    Dtypes: ``episode``, ``repeat``, ``steps``, ``interventions``, ``attempts``: int64;
    ``terminated``, ``truncated``, ``assisted``: bool; timing floats: float64 with NaN for
    missing; ``outcome``: int8 codes into :data:`OUTCOME_CODES` (``success`` is 0); ``score``:
    int64 with -1 for missing; ``condition_seed`` int64 when every seed fits, else exact
    Python ints (object); text columns (``cell``, ``policy``, ``error``, ``slices`` and
    ``extra`` as their JSON text, ...): object arrays whose equal strings are one object.

    Args:
        store: an open store.
        run_id: the run.
        columns: the columns to read (default :data:`DEFAULT_COLUMNS`).

    Raises:
        RunNotFoundError: an unknown run.
        InvalidInputError: an unknown column name.

    >>> import tempfile
    >>> from evalband.episode import EpisodeRecord
    >>> from evalband.store import open_store
    >>> from evalband.store._manifest import _example
    >>> with tempfile.TemporaryDirectory() as d, open_store(f"{d}/s.sqlite") as st:
    ...     st.create_run(_example())
    ...     st.add_episodes(EpisodeRecord("r1", "p", "f", "c", i, 0, 10 + i,
    ...                     "success" if i % 2 else "timeout", i % 2 == 1, i % 2 == 0, 5)
    ...                     for i in range(4))
    ...     cols = episode_columns(st, "r1", ["episode", "outcome", "cell"])
    >>> cols["episode"].tolist(), cols["outcome"].tolist(), cols["cell"][0]
    ([0, 1, 2, 3], [2, 0, 2, 0], 'c')
    """
    names = list(DEFAULT_COLUMNS if columns is None else columns)
    unknown = [n for n in names if n not in EPISODE_FIELDS]
    if unknown:
        raise InvalidInputError(
            f"unknown episode column(s) {', '.join(map(repr, unknown))}; expected some of "
            f"{', '.join(EPISODE_FIELDS)}"
        )
    with store._lock:
        store.require_run(run_id)
        conn = store.conn
        n = int(conn.execute("SELECT COUNT(*) FROM episodes WHERE run_id = ?",
                             (run_id,)).fetchone()[0])
        out = {name: _empty(name, n) for name in names}
        if not names or n == 0:
            return out
        if "cell" in names:  # rows are ordered by cell: a count per cell says where each is
            out["cell"] = _cell_column(conn, run_id, n)
            names = [name for name in names if name != "cell"]
            if not names:
                return out
        select = ", ".join(_sql_expression(name) for name in names)
        cursor = conn.execute(
            f"SELECT {select} FROM episodes WHERE run_id = ? "
            'ORDER BY "cell", "episode", "repeat"',
            (run_id,),
        )
        shared: dict[str, dict[Any, Any]] = {name: {} for name in names
                                             if out[name].dtype == object}
        start = 0
        while rows := cursor.fetchmany(_BLOCK):
            stop = start + len(rows)
            for name, values in zip(names, zip(*rows, strict=True), strict=True):
                target = out[name]
                if target.dtype == object:
                    pool = shared[name]
                    target[start:stop] = [pool.setdefault(v, v) for v in values]
                elif target.dtype == np.float64:
                    target[start:stop] = np.array(values, dtype=float)  # None -> nan
                else:
                    target[start:stop] = values
            start = stop
    if "condition_seed" in out:
        seeds = out["condition_seed"]
        if all(type(v) is int for v in seeds):
            out["condition_seed"] = seeds.astype(np.int64)
        else:  # seeds past int64 are stored as exact text
            out["condition_seed"] = np.array([int(v) for v in seeds], dtype=object)
    return out


def cell_tallies(
    store: RunStore, run_id: str, progress: Callable[[int, int], None] | None = None
) -> dict[str, dict[str, Any]]:
    """Per cell, what a summary needs, counted by SQLite: no episode enters Python.

    Each cell is one aggregate query over its rows in the primary key's order (no sort);
    ``progress(episodes counted, episodes in all)`` is called after each cell.

    Returns:
        Cell key -> ``{"slices": JSON text, "counts": {outcome: n}, "time_sum": float,
        "time_n": int, "assisted": int, "unaided_successes": int}``; ``time_*`` cover
        successes with a recorded ``time_to_success_s``.

    Raises:
        RunNotFoundError: an unknown run.
    """
    per_outcome = ", ".join(f"SUM(\"outcome\" = '{o}')" for o in OUTCOME_CODES)
    known = ", ".join(f"'{o}'" for o in OUTCOME_CODES)
    query = (
        f'SELECT MIN("slices"), COUNT(*), {per_outcome}, '
        'SUM(CASE WHEN "outcome" = \'success\' THEN "time_to_success_s" END), '
        'SUM("outcome" = \'success\' AND "time_to_success_s" IS NOT NULL), '
        'SUM("assisted"), SUM("outcome" = \'success\' AND NOT "assisted") '
        'FROM episodes WHERE run_id = ? AND "cell" = ?'
    )
    out: dict[str, dict[str, Any]] = {}
    k = len(OUTCOME_CODES)
    with store._lock:
        store.require_run(run_id)
        conn = store.conn
        sizes = conn.execute('SELECT "cell", COUNT(*) FROM episodes WHERE run_id = ? '
                             'GROUP BY "cell" ORDER BY "cell"', (run_id,)).fetchall()
        total, done = sum(int(n) for _, n in sizes), 0
        for cell, _ in sizes:
            slices, n, *rest = conn.execute(query, (run_id, cell)).fetchone()
            counts = {o: int(c or 0) for o, c in zip(OUTCOME_CODES, rest[:k], strict=True)}
            if int(n) != sum(counts.values()):  # an outcome no evalband wrote: by its name
                counts.update((str(name), int(m)) for name, m in conn.execute(
                    'SELECT "outcome", COUNT(*) FROM episodes WHERE run_id = ? AND "cell" = ? '
                    f'AND "outcome" NOT IN ({known}) GROUP BY "outcome"', (run_id, cell)))
            tsum, tn, assisted, unaided = rest[k:]
            out[str(cell)] = {
                "slices": slices, "counts": counts, "time_sum": float(tsum or 0.0),
                "time_n": int(tn or 0), "assisted": int(assisted or 0),
                "unaided_successes": int(unaided or 0),
            }
            done += int(n)
            if progress is not None:
                progress(done, total)
    return out


def error_messages(
    store: RunStore, run_id: str, cells: Sequence[str] | None = None
) -> dict[str | None, int]:
    """The run's error messages with their counts (optionally of some cells only).

    Raises:
        RunNotFoundError: an unknown run.
    """
    where = ""
    params: list[Any] = [run_id]
    if cells is not None:
        where = f' AND "cell" IN ({", ".join("?" for _ in cells)})'
        params.extend(cells)
    with store._lock:
        store.require_run(run_id)
        rows = store.conn.execute(
            f"SELECT \"error\", COUNT(*) FROM episodes WHERE run_id = ? AND "
            f"\"outcome\" = 'error'{where} GROUP BY \"error\"",
            params,
        ).fetchall()
    return {row[0]: int(row[1]) for row in rows}
