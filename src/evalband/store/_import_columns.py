"""Columns of an imported table that are no record field: slice factors, metrics, reasons.

A tabular file (CSV, JSONL, Parquet, a paired CSV) may carry columns besides the
:class:`~evalband.episode.EpisodeRecord` fields. Each one becomes, in this order:

1. a **slice factor** when named in ``factors`` (``--factors``);
2. a **per-episode metric** (``extra["metrics"][name]``, a float) when named in ``metrics``;
3. an **outcome reason** (``extra["reason"]``) when it is a failure-mode column
   (:data:`REASON_COLUMNS`);
4. a **metric** when every value is a number (or true/false);
5. a **slice factor** when it looks categorical: text with at most
   :data:`MAX_FACTOR_LEVELS` distinct values;
6. otherwise it is kept as text in each record's ``extra``.

The table's notes say in one line what was done, so nothing is decided silently.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalband.store._import_read import (
    SLICE_PREFIX,
    _fail,
    _missing,
    _Table,
    _Text,
)

__all__ = ["MAX_FACTOR_LEVELS", "REASON_COLUMNS", "classify_columns"]

REASON_COLUMNS: tuple[str, ...] = (
    "failure_mode",
    "failure_reason",
    "outcome_reason",
    "reason",
    "failure",
)
"""Column names read as the outcome reason of an episode (the report breaks failures down)."""

MAX_FACTOR_LEVELS = 50
"""A text column with more distinct values than this is kept as text, not made a slice."""


def _as_number(value: Any) -> float | None:
    """The value as a float, or ``None`` when it is no number."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("true", "false"):
            return float(text.lower() == "true")
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def classify_columns(
    path: Path,
    table: _Table,
    factors: Sequence[str] = (),
    metrics: Sequence[str] = (),
) -> None:
    """Move the table's unknown columns into slices, metrics, a reason or text, in place.

    Raises:
        ImportFormatError: a column named in ``factors``/``metrics`` is not in the file, or a
            value of a metric column is not a number.

    >>> from evalband.store._import_read import _Raw, _Table
    >>> t = _Table([_Raw("line 2", {"success": "1", "arm": "so101", "dist": "0.2"})],
    ...            ["success", "arm", "dist"], unknown=["arm", "dist"])
    >>> classify_columns(Path("r.csv"), t)
    >>> t.rows[0].values, t.rows[0].extra
    ({'success': '1', 'slice.arm': 'so101'}, {'metrics': {'dist': 0.2}})
    >>> t.notes
    ['column arm read as a slice factor (categorical); column dist as a per-episode metric']
    """
    for name in (*factors, *metrics):
        if name not in table.columns:
            raise _fail(
                path,
                "columns",
                name,
                f"a column of the file ({', '.join(table.columns)})",
                _Text("no such column"),
            )
    kinds: dict[str, str] = {}
    for name in table.columns:
        if name in factors:
            kinds[name] = "factor"
        elif name in metrics:
            kinds[name] = "metric"
    for name in table.unknown:
        if name in kinds:
            continue
        values = [row.values.get(name) for row in table.rows]
        present = [v for v in values if not _missing(v)]
        if name.lower() in REASON_COLUMNS:
            kinds[name] = "reason"
        elif all(_as_number(v) is not None for v in present):
            kinds[name] = "metric"
        elif len({str(v).strip() for v in present}) <= MAX_FACTOR_LEVELS:
            kinds[name] = "factor"
        else:
            kinds[name] = "text"
    for row in table.rows:
        for name, kind in kinds.items():
            value = row.values.pop(name, None)
            if kind == "factor" and name.startswith(SLICE_PREFIX):
                row.values[name] = value
            elif kind == "factor":
                row.values[SLICE_PREFIX + name] = value
                row.labels.setdefault(SLICE_PREFIX + name, name)
            elif _missing(value):
                continue
            elif kind == "metric":
                number = _as_number(value)
                if number is None:
                    raise _fail(path, row.where, name, "a number (a metric column)", value)
                row.extra.setdefault("metrics", {})[name] = number
            elif kind == "reason":
                row.extra["reason"] = str(value).strip()
            else:
                row.extra[name] = value
    table.columns = [
        SLICE_PREFIX + c if kinds.get(c) == "factor" and not c.startswith(SLICE_PREFIX) else c
        for c in table.columns
        if kinds.get(c, "factor") == "factor"
    ]
    _note(table, kinds, factors, metrics)


def _note(
    table: _Table, kinds: dict[str, str], factors: Sequence[str], metrics: Sequence[str]
) -> None:
    said = {
        "factor": "read as a slice factor (categorical)",
        "metric": "as a per-episode metric",
        "reason": "as the outcome reason",
        "text": "kept as text (too many distinct values to be a slice)",
    }
    parts: list[str] = []
    for kind in ("factor", "metric", "reason", "text"):
        names = [n for n, k in kinds.items() if k == kind and n not in factors and n not in metrics]
        if names:
            label = "column" if len(names) == 1 else "columns"
            parts.append(f"{label} {', '.join(names)} {said[kind]}")
    if parts:
        table.notes.append("; ".join(parts))
