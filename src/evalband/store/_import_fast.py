"""The column-wise import of plain tabular files (CSV, JSONL, Parquet): millions of rows fast.

pyarrow reads the file into columns; each column is checked whole (numbers by one cast,
text by converting its distinct values with the row-wise converters of
:mod:`._import_read`); cells, default episodes, condition seeds
(:func:`~evalband.panel.default_condition_seeds`), duplicate keys and the sort order are
numpy operations; the rows reach SQLite as tuples zipped from columns in one ``executemany``.

It covers the common file (``success``/``outcome``, ``episode``, ``repeat``, ``cell`` or
``slice.<factor>`` columns, ``steps``, ``condition_seed``, a constant ``policy``; no panel,
no ``--factors``/``--metrics``). Anything else, and any file with a value the checks refuse,
is declined (``None``): the row-wise importer then reads it, so a bad file gets the same
message naming its first bad row and column, and a rarer layout the same records.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.episode import EPISODE_FIELDS, EpisodeRecord, Outcome
from evalband.errors import EvalbandError
from evalband.store._import_read import (
    _CONVERTERS,
    SLICE_PREFIX,
    _as_label,
    _Bad,
    _missing,
    _Table,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from evalband.store._manifest import RunManifest

__all__ = ["FAST_COLUMNS", "plan_columns"]

FAST_COLUMNS: tuple[str, ...] = (
    "success",
    "outcome",
    "episode",
    "repeat",
    "cell",
    "steps",
    "condition_seed",
    "policy",
)
"""The columns (besides ``slice.<factor>``) the column-wise path reads; others go row-wise."""


class _Decline(Exception):
    """The file needs the row-wise importer (an unusual layout or a value it must name)."""


def _read(path: Path, fmt: str) -> pa.Table:
    import pyarrow as pa

    if fmt == "csv":
        import pyarrow.csv as pcsv

        with path.open(encoding="utf-8-sig", newline="") as fh:
            header = next(csv.reader(fh), None)
        if not header or len(set(header)) != len(header):
            raise _Decline
        options = pcsv.ConvertOptions(column_types={name: pa.string() for name in header})
        table = pcsv.read_csv(path, convert_options=options)
        import pyarrow.compute as pc

        for column in table.columns:  # a line break in a value: an unclosed quote, perhaps;
            if pc.any(pc.match_substring_regex(column, "[\r\n]")).as_py():  # row-wise reads it
                raise _Decline
        return table
    if fmt == "jsonl":
        import pyarrow.json as pjson

        data = path.read_bytes()
        # flat rows only: a nested value is no tabular field, and a deeply nested one
        # overflows pyarrow's C++ stack (a segfault); the row-wise reader says what is wrong
        if b"[" in data or data.count(b"{") > data.count(b"\n") + 1:
            raise _Decline
        return pjson.read_json(io.BytesIO(data))
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    pandas_meta = table.schema.pandas_metadata or {}
    index = [c for c in pandas_meta.get("index_columns", []) if isinstance(c, str)]
    return table.drop_columns([c for c in index if c in table.column_names])


def _to_numpy(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A null-free integer column as numpy, read from its buffers.

    pyarrow's own ``to_numpy`` imports pandas (~1 s) on first use; the buffers need nothing.

    >>> import pyarrow as pa
    >>> _to_numpy(pa.chunked_array([[1, 2], [3]]).slice(1)).tolist()
    [2, 3]
    """
    import numpy as np

    chunks = column.chunks if hasattr(column, "chunks") else [column]
    dtype = np.dtype(str(column.type))
    parts = [
        np.frombuffer(chunk.buffers()[1], dtype=dtype, count=chunk.offset + len(chunk))[
            chunk.offset:]
        for chunk in chunks
        if len(chunk)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _counts(column: pa.ChunkedArray) -> np.ndarray:
    """A column of whole numbers >= 0 as int64 (declined: a null, a negative, a non-number)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        raise _Decline
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = pc.cast(column, pa.int64())  # strict: "", " 3", "1.0" are declined
    elif not pa.types.is_integer(column.type) or pa.types.is_uint64(column.type):
        raise _Decline
    values = _to_numpy(column).astype(np.int64, copy=False)
    if values.size and values.min() < 0:
        raise _Decline
    return values


def _coded(column: pa.ChunkedArray, convert: Callable[[Any], Any]) -> tuple[np.ndarray, list[Any]]:
    """A column as codes into its distinct values, each converted once (row-wise converters)."""
    import numpy as np
    import pyarrow.compute as pc

    if column.null_count:
        raise _Decline
    encoded = pc.dictionary_encode(column.combine_chunks())
    values: list[Any] = []
    for raw in encoded.dictionary.to_pylist():
        if _missing(raw):
            raise _Decline
        try:
            values.append(convert(raw))
        except _Bad:
            raise _Decline from None
    return _to_numpy(encoded.indices).astype(np.int64), values


def _combinations(columns: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of several code columns and each row's index into them.

    One integer per row (the codes in mixed radix) sorted once, instead of sorting rows of
    several columns (``np.unique(axis=0)``, seconds on a million rows).

    >>> import numpy as np
    >>> u, i = _combinations([np.array([1, 0, 1]), np.array([0, 2, 0])], [2, 3])
    >>> u.tolist(), i.tolist()
    ([[0, 2], [1, 0]], [1, 0, 1])
    """
    import numpy as np

    span = 1
    for size in sizes:
        span *= max(size, 1)
    if span >= 2**62:  # pragma: no cover - absurdly many labels: sort the rows
        unique, codes = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
        return unique, np.asarray(codes, dtype=np.int64).reshape(-1)
    key = np.zeros(columns[0].size, dtype=np.int64)
    for column, size in zip(columns, sizes, strict=True):
        key = key * max(size, 1) + column
    distinct, codes = np.unique(key, return_inverse=True)
    unique = np.empty((distinct.size, len(columns)), dtype=np.int64)
    for j in range(len(columns) - 1, -1, -1):
        size = max(sizes[j], 1)
        unique[:, j] = distinct % size
        distinct = distinct // size
    return unique, np.asarray(codes, dtype=np.int64).reshape(-1)


def _cells(table: pa.Table, names: list[str]) -> tuple[np.ndarray, list[dict[str, str]]]:
    """Each row's index into the distinct slices (factor -> label, factors sorted)."""
    import numpy as np

    slice_names = [n for n in names if n.startswith(SLICE_PREFIX)]
    n = table.num_rows
    if "cell" in names:
        if slice_names:
            raise _Decline  # both kinds of slice column: the row-wise checks compare them
        codes, parsed = _coded(table.column("cell"), _CONVERTERS["cell"])
        combos = [dict(p) for p in parsed]
    elif slice_names:
        columns = []
        labels: list[list[str]] = []
        for name in slice_names:
            factor = name[len(SLICE_PREFIX):]
            if not factor or "," in factor or "=" in factor or factor != factor.strip():
                raise _Decline
            column_codes, column_labels = _coded(table.column(name), _as_label)
            columns.append(column_codes)
            labels.append(column_labels)
        unique, codes = _combinations(columns, [len(values) for values in labels])
        factors = [name[len(SLICE_PREFIX):] for name in slice_names]
        combos = [
            {f: labels[j][int(c)] for j, (f, c) in enumerate(zip(factors, row, strict=True))}
            for row in unique
        ]
    else:
        return np.zeros(n, dtype=np.int64), [{}]
    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    first = set(combos[int(codes[0])]) if n else set()
    if any(set(combo) != first for combo in combos):
        raise _Decline  # a row without every factor: the row-wise checks name it
    return codes, [{f: combo[f] for f in sorted(first)} for combo in combos]


def _outcomes(table: pa.Table, names: list[str]) -> np.ndarray:
    """Each row's index into ``list(Outcome)``."""
    import numpy as np

    members = list(Outcome)
    success = _coded(table.column("success"), _CONVERTERS["bool"]) if "success" in names else None
    if "outcome" in names:
        codes, outcomes = _coded(table.column("outcome"), _CONVERTERS["outcome"])
        index: np.ndarray = np.array([members.index(o) for o in outcomes], np.int64)[codes]
        if success is not None:
            agrees = np.array(success[1], dtype=bool)[success[0]]
            if not np.array_equal(agrees, index == members.index(Outcome.SUCCESS)):
                raise _Decline
        return index
    if success is None:
        raise _Decline
    flags = np.array(success[1], dtype=bool)[success[0]]
    index = np.where(flags, members.index(Outcome.SUCCESS), members.index(Outcome.FAILURE))
    return index.astype(np.int64)


def _default_episodes(group: np.ndarray) -> np.ndarray:
    """Row order within each group (the episode index of rows without one)."""
    import numpy as np

    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
    position = np.arange(group.size) - np.repeat(starts, np.diff(np.r_[starts, group.size]))
    episodes = np.empty(group.size, dtype=np.int64)
    episodes[order] = position
    return episodes


def plan_columns(
    path: Path, fmt: str, run_id: str, policy: str | None, stem: str
) -> tuple[RunManifest, dict[str, np.ndarray], dict[str, Any]] | None:
    """The manifest and SQL columns of a plain tabular file, or ``None`` when it goes row-wise.

    Returns:
        ``(manifest, columns, constants)``: ``constants`` maps the fields equal on every row
        to their SQL value; ``columns`` maps each other field (in ``EPISODE_FIELDS`` order)
        to one array entry per episode in its SQL form (int64, or an object array of text),
        sorted by ``(cell, episode, repeat)``, as the row-wise importer would store them.
    """
    import pyarrow as pa

    try:
        table = _read(path, fmt)
        return _plan(path, fmt, table, run_id, policy, stem)
    except (_Decline, pa.ArrowException, OSError, ValueError, UnicodeDecodeError, EvalbandError):
        return None


def _plan(
    path: Path, fmt: str, table: pa.Table, run_id: str, policy: str | None, stem: str
) -> tuple[RunManifest, dict[str, np.ndarray], dict[str, Any]]:
    import numpy as np

    from evalband.panel import default_condition_seeds
    from evalband.store._importers import _manifest, infer_panel
    from evalband.store._sqlite import _episode_row

    names = [str(n) for n in table.column_names]
    n = table.num_rows
    if not n or any(n_ not in FAST_COLUMNS and not n_.startswith(SLICE_PREFIX) for n_ in names):
        raise _Decline
    if "condition_seed" in names and "episode" not in names:
        raise _Decline  # episodes numbered by their condition seeds: the row-wise reader
    outcome_index = _outcomes(table, names)
    cell_codes, combos = _cells(table, names)
    cell_texts = [",".join(f"{f}={label}" for f, label in combo.items()) for combo in combos]
    cells, combo_to_cell = np.unique(np.array(cell_texts, dtype=object), return_inverse=True)
    cell_id = np.asarray(combo_to_cell, dtype=np.int64).reshape(-1)[cell_codes]
    cell_slices: list[dict[str, str]] = [{}] * len(cells)
    for combo, cid in zip(combos, np.asarray(combo_to_cell).reshape(-1), strict=True):
        cell_slices[int(cid)] = combo
    repeat = _counts(table.column("repeat")) if "repeat" in names else np.zeros(n, np.int64)
    if "episode" in names:
        episode = _counts(table.column("episode"))
    else:
        episode = _default_episodes(cell_id * (int(repeat.max()) + 1) + repeat)
    order = _key_order(cell_id, episode, repeat)  # sorted by (cell, episode, repeat)
    if order is not None:
        cell_id, episode, repeat = cell_id[order], episode[order], repeat[order]
        outcome_index = outcome_index[order]
    same = (cell_id[1:] == cell_id[:-1]) & (episode[1:] == episode[:-1])
    if np.any(same & (repeat[1:] == repeat[:-1])):
        raise _Decline  # a repeated key: the row-wise checks name both rows
    steps = _counts(table.column("steps")) if "steps" in names else None
    if steps is not None and order is not None:
        steps = steps[order]
    column_policy: str | None = None
    if "policy" in names:
        _, policies = _coded(table.column("policy"), _CONVERTERS["text"])
        if len(policies) != 1:
            raise _Decline
        column_policy = policies[0]
    inferred_seeds = "condition_seed" not in names
    if inferred_seeds:
        seeds = np.empty(n, dtype=np.int64)
        for position, cell in enumerate(cells):
            rows = cell_id == position
            seeds[rows] = default_condition_seeds(0, str(cell), episode[rows])
    else:
        seeds = _counts(table.column("condition_seed"))
        seeds = seeds if order is None else seeds[order]
    policy_name = policy or column_policy or stem
    factors = list(cell_slices[0])
    levels = {f: {combo[f] for combo in cell_slices} for f in factors}
    panel = infer_panel(stem, path, levels, int(episode.max()) + 1, int(repeat.max()) + 1)
    manifest = _manifest(
        panel,
        policy_name,
        run_id,
        path,
        fmt,
        n_rows=n,
        inferred=True,
        table=_Table([], names),
        column_policy=column_policy,
    )
    members = list(Outcome)
    template = _episode_row(
        EpisodeRecord(
            run_id=run_id,
            policy=policy_name,
            panel_fingerprint=panel.fingerprint,
            cell=str(cells[0]),
            episode=0,
            repeat=0,
            condition_seed=0,
            outcome=Outcome.FAILURE,
            terminated=True,
            truncated=False,
            steps=0,
            extra={"condition_seed_inferred": True} if inferred_seeds else {},
        )
    )
    def pick(values: list[Any], codes: np.ndarray) -> np.ndarray:
        """``values[code]`` for every row: one object per distinct value, shared by its rows."""
        return np.array(values + [None], dtype=object)[:-1][codes]  # type: ignore[no-any-return]

    columns: dict[str, Any] = {
        "cell": pick([str(c) for c in cells], cell_id),
        "episode": episode,
        "repeat": repeat,
        "condition_seed": seeds.astype(np.int64),
        "outcome": pick([o.value for o in members], outcome_index),
        "terminated": np.array(
            [int(o in (Outcome.SUCCESS, Outcome.FAILURE)) for o in members], np.int64
        )[outcome_index],
        "truncated": np.array([int(o is Outcome.TIMEOUT) for o in members],
                              np.int64)[outcome_index],
        "steps": steps if steps is not None else 0,
        "slices": pick([json.dumps(s, allow_nan=True) for s in cell_slices], cell_id),
    }
    from evalband.store._sqlite import _sql_literal

    constants = {
        name: value
        for name, value in zip(EPISODE_FIELDS, template, strict=True)
        if name not in columns and _sql_literal(value) is not None
    }
    constants.update({k: v for k, v in columns.items() if not hasattr(v, "shape")})
    per_row = {
        name: columns.get(name, value)
        for name, value in zip(EPISODE_FIELDS, template, strict=True)
        if name not in constants
    }
    for name, value in per_row.items():
        if not hasattr(value, "shape"):  # a constant that must be bound (text with a NUL)
            per_row[name] = np.full(n, value, dtype=object)
    return manifest, per_row, constants


def _key_order(
    cell_id: np.ndarray, episode: np.ndarray, repeat: np.ndarray
) -> np.ndarray | None:
    """The permutation sorting rows by ``(cell, episode, repeat)``; ``None``: already sorted.

    >>> import numpy as np
    >>> _key_order(np.array([0, 0]), np.array([0, 1]), np.array([0, 0])) is None
    True
    >>> _key_order(np.array([1, 0]), np.array([0, 5]), np.array([0, 0])).tolist()
    [1, 0]
    """
    import numpy as np

    n_ep = int(episode.max(initial=0)) + 1
    n_rep = int(repeat.max(initial=0)) + 1
    n_cell = int(cell_id.max(initial=0)) + 1
    if n_cell * n_ep * n_rep >= 2**62:  # pragma: no cover - absurd indices: sort by columns
        return np.lexsort((repeat, episode, cell_id))
    key = (cell_id * n_ep + episode) * n_rep + repeat
    if bool(np.all(key[1:] >= key[:-1])):  # files are usually written in order
        return None
    return np.argsort(key, kind="stable")
