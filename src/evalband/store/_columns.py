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

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from evalband.episode import EPISODE_FIELDS, Outcome
from evalband.errors import InvalidInputError

if TYPE_CHECKING:
    from evalband.store._sqlite import RunStore

__all__ = [
    "episode_columns", "cell_tallies", "column_tallies", "error_messages", "OUTCOME_CODES",
    "DEFAULT_COLUMNS", "WHERE",
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


WHERE = "where "
"""A column named ``where <SQL condition>`` is whether each episode meets the condition."""


def _sql_expression(name: str) -> str:
    if name.startswith(WHERE):
        return f"CASE WHEN ({name[len(WHERE):]}) THEN 1 ELSE 0 END"
    if name == "outcome":
        cases = " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(OUTCOME_CODES))
        return f'CASE "outcome" {cases} ELSE -1 END'
    if name == "score":
        return 'COALESCE("score", -1)'
    return f'"{name}"'


def _empty(name: str, n: int) -> np.ndarray[Any, Any]:
    if name.startswith(WHERE):
        return np.empty(n, dtype=bool)
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


def episode_columns(
    store: RunStore,
    run_id: str,
    columns: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    conditions: Sequence[str] = (),
    where: str | None = None,
) -> dict[str, np.ndarray[Any, Any]]:
    """A run's episodes as one numpy array per column, ordered by ``(cell, episode, repeat)``.

    Dtypes: ``episode``, ``repeat``, ``steps``, ``interventions``, ``attempts``: int64;
    ``terminated``, ``truncated``, ``assisted``: bool; timing floats: float64 with NaN for
    missing; ``outcome``: int8 codes into :data:`OUTCOME_CODES` (``success`` is 0); ``score``:
    int64 with -1 for missing; ``condition_seed`` int64 when every seed fits, else exact
    Python ints (object); text columns (``cell``, ``policy``, ``error``, ``slices`` and
    ``extra`` as their JSON text, ...): object arrays whose equal strings are one object.

    Numbers cross from SQLite to numpy as text, not as one Python object per episode: each
    block of rows (a cell, or a range of its episodes) is one aggregate query whose
    ``group_concat`` of a column is parsed by numpy in one call. A float column is read
    only when it holds a value (exactly, row by row: a float's text would round it); text
    columns row by row. ``progress(episodes read, episodes in all)`` is called per block.
    Each of ``conditions`` (an SQL condition on an episode's row) adds a boolean column,
    ``"where <condition>"``, read in the same pass: whether each episode meets it (what a
    report asks before it reads the few records with media, a reason or a trace).

    Args:
        store: an open store.
        run_id: the run.
        columns: the columns to read (default :data:`DEFAULT_COLUMNS`).
        progress: called after each block of rows.
        conditions: SQL conditions read as boolean columns too.
        where: an SQL condition: only the episodes that meet it, read in one query (what a
            reader asks after a ``"where <condition>"`` column said which it wants).

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
    names = [*(DEFAULT_COLUMNS if columns is None else columns),
             *(f"{WHERE}{c}" for c in conditions)]
    unknown = [n for n in names if n not in EPISODE_FIELDS and not n.startswith(WHERE)]
    if unknown:
        raise InvalidInputError(
            f"unknown episode column(s) {', '.join(map(repr, unknown))}; expected some of "
            f"{', '.join(EPISODE_FIELDS)}"
        )
    with store._lock:
        store.require_run(run_id)
        conn = store.conn
        if where is not None:
            return _read_whole(conn, run_id, names, where)
        out = _read_whole(conn, run_id, names)  # one query, if the run is small
        if out is not None:
            if progress is not None:
                read = len(next(iter(out.values()))) if out else 0
                progress(read, read)
            return out
        blocks, sizes = _blocks(conn, run_id)
        n = sum(size for _, size in sizes)
        out = {name: np.empty(n, np.int64) if name == "condition_seed" else _empty(name, n)
               for name in names}
        if "cell" in out:
            start = 0
            for cell, size in sizes:
                out["cell"][start:start + size] = cell
                start += size
        packed = [name for name in names if _is_packed(name)]
        rows = [name for name in names if not _is_packed(name) and name != "cell"]
        start = 0
        for cell, low, high in blocks:
            block = (run_id, cell, low, high)
            got = _read_packed(conn, block, packed)
            if got is None:  # a value the text path cannot carry exactly: row by row
                got = _read_rows(conn, block, packed)
            size = len(got["episode"]) if "episode" in got else conn.execute(
                f"SELECT COUNT(*) FROM episodes {_WHERE}", block).fetchone()[0]
            for name in packed:
                if got[name].dtype == object and out[name].dtype != object:
                    out[name] = out[name].astype(object)  # seeds past int64
                out[name][start:start + size] = got[name]
            if rows:
                for name, values in _read_rows(conn, block, rows).items():
                    out[name][start:start + size] = values
            start += size
            if progress is not None:
                progress(start, n)
    return _seeds_settled(out)


def _seeds_settled(out: dict[str, np.ndarray[Any, Any]]) -> dict[str, np.ndarray[Any, Any]]:
    """``condition_seed`` as int64 when every seed fits, else exact Python ints."""
    if "condition_seed" in out and out["condition_seed"].dtype == object:
        seeds = out["condition_seed"]
        if all(type(v) is int and _INT64_MIN <= v <= _INT64_MAX for v in seeds):
            out["condition_seed"] = seeds.astype(np.int64)
        else:  # seeds past int64 are stored as exact text
            out["condition_seed"] = np.array([int(v) for v in seeds], dtype=object)
    return out


_ONE_QUERY = 20_000
"""Runs up to this many episodes are read in one query (row by row, in key order)."""


@overload
def _read_whole(conn: Any, run_id: str, names: Sequence[str],
                where: str) -> dict[str, np.ndarray[Any, Any]]: ...
@overload
def _read_whole(conn: Any, run_id: str, names: Sequence[str],
                where: None = None) -> dict[str, np.ndarray[Any, Any]] | None: ...
def _read_whole(conn: Any, run_id: str, names: Sequence[str],
                where: str | None = None) -> dict[str, np.ndarray[Any, Any]] | None:
    """Every episode of a small run (or those meeting ``where``) in one query, in key order.

    Without ``where``: ``None`` when the run has more than :data:`_ONE_QUERY` episodes (read
    block by block then; counted on the primary key's index up to that many). The same
    arrays as the block path: :func:`_read_rows`'s conversion of each column.
    """
    if where is None:
        (more,) = conn.execute(
            f"SELECT COUNT(*) > {_ONE_QUERY} FROM (SELECT 1 FROM episodes "
            f"WHERE run_id = ? LIMIT {_ONE_QUERY + 1})", (run_id,)).fetchone()
        if more:
            return None
    select = ", ".join(_sql_expression(name) for name in names) if names else "1"
    condition = "" if where is None else f" AND ({where})"
    rows = conn.execute(f'SELECT {select} FROM episodes WHERE run_id = ?{condition} '
                        'ORDER BY "cell", "episode", "repeat"', (run_id,)).fetchall()
    out: dict[str, np.ndarray[Any, Any]] = {}
    columns = zip(*rows, strict=True) if rows else (() for _ in names)
    for name, values in zip(names, columns, strict=False):
        out[name] = _fill(np.empty(len(rows), dtype=object) if name == "condition_seed"
                          else _empty(name, len(rows)), values)
    return _seeds_settled(out)


def _fill(target: np.ndarray[Any, Any], values: Any) -> np.ndarray[Any, Any]:
    """``target`` filled with one column's values (equal objects shared, None as NaN)."""
    if target.dtype == object:
        pool: dict[Any, Any] = {}
        target[:] = [pool.setdefault(v, v) for v in values]
    elif target.dtype == np.float64:
        target[:] = np.array(values, dtype=float)  # None -> nan
    else:
        target[:] = values
    return target


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DIGITS = ("terminated", "truncated", "assisted", "outcome")
"""Columns of one digit per row (0/1, or an outcome code), concatenated without separator."""
_PACKED = (*_INT, *_DIGITS, "score", "condition_seed", *_FLOAT)
"""Columns read through ``group_concat`` text (floats: only whether any value is there)."""
_KEY = ' ORDER BY "episode", "repeat"'
_WHERE = 'WHERE run_id = ? AND "cell" = ? AND "episode" BETWEEN ? AND ?'


def _blocks(
    conn: Any, run_id: str
) -> tuple[list[tuple[str, int, int]], list[tuple[str, int]]]:
    """Blocks ``(cell, first episode, last episode)`` of about :data:`_BLOCK` rows; cell sizes.

    The sizes are ``(cell, rows)`` of each cell, in cell order.
    Counted from the primary key's index alone; a cell larger than a block is cut into
    equal ranges of episode indices.
    """
    blocks: list[tuple[str, int, int]] = []
    sizes: list[tuple[str, int]] = []
    for cell, size, low, high in conn.execute(
        'SELECT "cell", COUNT(*), MIN("episode"), MAX("episode") FROM episodes '
        'WHERE run_id = ? GROUP BY "cell" ORDER BY "cell"', (run_id,)
    ).fetchall():
        sizes.append((cell, int(size)))
        parts = -(-int(size) // _BLOCK)
        step = -(-(int(high) - int(low) + 1) // max(parts, 1))
        blocks.extend((cell, first, min(int(high), first + step - 1))
                      for first in range(int(low), int(high) + 1, step))
    return blocks, sizes


def _is_packed(name: str) -> bool:
    return name in _PACKED or name.startswith(WHERE)


def _is_digits(name: str) -> bool:
    return name in _DIGITS or name.startswith(WHERE)


def _packed_expression(name: str) -> str:
    if name.startswith(WHERE):
        return f"group_concat({_sql_expression(name)}, '')"
    if name == "outcome":
        cases = " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(OUTCOME_CODES))
        return f"group_concat(CASE \"outcome\" {cases} ELSE 9 END, '')"
    if _is_digits(name):
        return f"group_concat(\"{name}\", '')"
    if name in _FLOAT:
        return f'COUNT("{name}")'
    if name == "condition_seed":
        return ("group_concat(\"condition_seed\", ','), "
                "SUM(typeof(\"condition_seed\") <> 'integer')")
    return f"group_concat({_sql_expression(name)}, ',')"


def _read_packed(
    conn: Any, where: tuple[Any, ...], names: Sequence[str]
) -> dict[str, np.ndarray[Any, Any]] | None:
    """One block's packed columns in key order; ``None`` when text cannot carry them exactly.

    The episode and repeat columns are always read: rows concatenate in the order SQLite
    scans them (the key's, through its index), and the block is sorted by them if not.
    """
    wanted = list(dict.fromkeys(["episode", "repeat", *names]))
    selects = [_packed_expression(name) for name in wanted]
    row = conn.execute(f"SELECT COUNT(*), {', '.join(selects)} FROM episodes {_WHERE}",
                       where).fetchone()
    size = int(row[0])
    values = iter(row[1:])
    got: dict[str, np.ndarray[Any, Any]] = {}
    for name in wanted:
        text = next(values)
        if name in _FLOAT:
            got[name] = (_read_floats(conn, where, name) if int(text or 0)
                         else np.full(size, np.nan))
            continue
        if name == "condition_seed" and int(next(values) or 0):
            return None  # a seed past int64, stored as text
        parsed = _parse(text or "", name, size)
        if parsed is None:
            return None
        got[name] = parsed
    key = got["episode"] * (int(got["repeat"].max(initial=0)) + 1) + got["repeat"]
    if size > 1 and not bool(np.all(key[1:] > key[:-1])):
        order = np.argsort(key, kind="stable")
        got = {k: v if k in _FLOAT else v[order] for k, v in got.items()}
    return got


def _parse(text: str, name: str, size: int) -> np.ndarray[Any, Any] | None:
    """A ``group_concat`` text as the column's array (``None``: not what was expected)."""
    if _is_digits(name):
        digits = np.frombuffer(text.encode("ascii"), dtype=np.uint8) - 48
        if digits.size != size or (digits.size and int(digits.max()) > 9):
            return None
        if name == "outcome":
            codes = digits.astype(np.int8)
            codes[codes == 9] = -1
            return codes
        return digits.astype(bool)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a short read: checked below
        numbers = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)
    if numbers.size != size or text.count(",") != max(size - 1, 0):
        return None
    return numbers


def _read_floats(conn: Any, where: tuple[Any, ...], name: str) -> np.ndarray[Any, Any]:
    """A float column of one block, exactly (NULL as NaN), in key order."""
    rows = conn.execute(f'SELECT "{name}" FROM episodes {_WHERE}{_KEY}', where).fetchall()
    return np.array([v for (v,) in rows], dtype=np.float64)


def _read_rows(
    conn: Any, where: tuple[Any, ...], names: Sequence[str]
) -> dict[str, np.ndarray[Any, Any]]:
    """Columns of one block row by row, in key order (text columns: equal strings shared)."""
    if not names:
        return {}
    select = ", ".join(_sql_expression(name) for name in names)
    rows = conn.execute(f"SELECT {select} FROM episodes {_WHERE}{_KEY}", where).fetchall()
    out: dict[str, np.ndarray[Any, Any]] = {}
    for name, values in zip(names, zip(*rows, strict=True), strict=True):
        out[name] = _fill(_empty(name, len(rows)), values)
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


def column_tallies(
    store: RunStore, run_id: str, columns: Mapping[str, np.ndarray[Any, Any]]
) -> dict[str, dict[str, Any]]:
    """:func:`cell_tallies` from the run's columns already read: no second pass over its rows.

    ``columns``: at least ``cell``, ``outcome``, ``assisted`` and ``time_to_success_s`` as
    :func:`episode_columns` gives them (rows in ``(cell, episode, repeat)`` order, so each
    cell's times are summed in the order SQLite sums them). Each cell's ``slices`` is read
    from its first row.

    Raises:
        RunNotFoundError: an unknown run.
    """
    cell = columns["cell"]
    n = len(cell)
    starts = np.flatnonzero(np.concatenate(([n > 0], cell[1:] != cell[:-1])))
    keys = [str(cell[i]) for i in starts]
    code = np.repeat(np.arange(len(keys)), np.diff(np.append(starts, n)))
    outcome = np.asarray(columns["outcome"], dtype=np.int64)
    known = outcome >= 0
    k = len(OUTCOME_CODES)
    per = np.bincount(code[known] * k + outcome[known],
                      minlength=len(keys) * k).reshape(len(keys), k)
    success = outcome == 0
    times = np.asarray(columns["time_to_success_s"], dtype=np.float64)
    timed = success & ~np.isnan(times)
    assisted = np.asarray(columns["assisted"], dtype=bool)
    time_sum = np.bincount(code[timed], weights=times[timed], minlength=len(keys))
    time_n = np.bincount(code[timed], minlength=len(keys))
    helped = np.bincount(code[assisted], minlength=len(keys))
    unaided = np.bincount(code[success & ~assisted], minlength=len(keys))
    out: dict[str, dict[str, Any]] = {}
    known_list = ", ".join(f"'{o}'" for o in OUTCOME_CODES)
    with store._lock:
        store.require_run(run_id)
        conn = store.conn
        for i, key in enumerate(keys):
            (slices,) = conn.execute('SELECT "slices" FROM episodes WHERE run_id = ? AND '
                                     '"cell" = ? LIMIT 1', (run_id, key)).fetchone()
            counts = {o: int(c) for o, c in zip(OUTCOME_CODES, per[i].tolist(), strict=True)}
            if int(np.count_nonzero(~known[code == i])):  # an outcome no evalband wrote
                counts.update((str(name), int(m)) for name, m in conn.execute(
                    'SELECT "outcome", COUNT(*) FROM episodes WHERE run_id = ? AND "cell" = ? '
                    f'AND "outcome" NOT IN ({known_list}) GROUP BY "outcome"', (run_id, key)))
            out[key] = {"slices": slices, "counts": counts, "time_sum": float(time_sum[i]),
                        "time_n": int(time_n[i]), "assisted": int(helped[i]),
                        "unaided_successes": int(unaided[i])}
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
