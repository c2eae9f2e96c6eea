"""Reading and checking the values of imported result files (CSV, JSONL, Parquet, lerobot).

The parsing half of :mod:`evalband.store._importers`: each reader returns a table of raw
rows with their file positions; each value check raises a one-line
:class:`~evalband.errors.ImportFormatError` naming the row and the column.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.episode import Outcome
from evalband.errors import ImportFormatError

if TYPE_CHECKING:  # the panel module (pydantic, yaml) is imported when an import runs
    pass

__all__ = [
    "IMPORT_COLUMNS",
    "IMPORT_FORMATS",
    "SLICE_PREFIX",
    "_Bad",
    "_CONVERTERS",
    "_KINDS",
    "_NOTHING",
    "_READERS",
    "_RECORD_FIELDS",
    "_Raw",
    "_SUFFIXES",
    "_Table",
    "_Text",
    "_as_label",
    "_fail",
    "_missing",
]

IMPORT_FORMATS: tuple[str, ...] = (
    "csv",
    "jsonl",
    "parquet",
    "lerobot",
    "libero",
    "simpler",
    "paired-csv",
    "maniskill",
)
"""The formats :func:`import_results` reads."""

SLICE_PREFIX = "slice."
"""Prefix of the columns that carry one slice factor each (``slice.embodiment``)."""

_SUFFIXES: dict[str, str] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".json": "lerobot",
}

# Column -> kind of value; the order is the documented order.
_KINDS: dict[str, str] = {
    "success": "bool",
    "outcome": "outcome",
    "episode": "count",
    "cell": "cell",
    "repeat": "count",
    "condition_seed": "count",
    "steps": "count",
    "sim_time_s": "amount",
    "time_to_success_s": "amount",
    "terminated": "bool",
    "truncated": "bool",
    "score": "count",
    "assisted": "bool",
    "interventions": "count",
    "latency_ms_p50": "amount",
    "latency_ms_p95": "amount",
    "latency_ms_max": "amount",
    "env_ms": "amount",
    "wall_s": "amount",
    "started_at": "timestamp",
    "error": "text",
    "policy": "text",
}

IMPORT_COLUMNS: tuple[str, ...] = tuple(_KINDS)
"""Columns a tabular import may have (besides ``slice.<factor>``); unknown ones are errors."""

_RECORD_FIELDS = (
    "steps",
    "sim_time_s",
    "score",
    "assisted",
    "interventions",
    "latency_ms_p50",
    "latency_ms_p95",
    "latency_ms_max",
    "env_ms",
    "wall_s",
    "started_at",
    "error",
)

# --------------------------------------------------------------------------- errors


class _Bad(Exception):
    """A value that does not convert: what was expected and what came."""

    def __init__(self, expected: str, got: Any) -> None:
        super().__init__(expected)
        self.expected = expected
        self.got = got


_NOTHING = object()  # "got": no value at all


class _Text(str):
    """A ``got`` that is already a description, shown without quotes."""


def _show(got: Any) -> str:
    if got is _NOTHING:
        return "nothing"
    if isinstance(got, _Text):
        return str(got)
    text = repr(got)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(
    path: Path, where: str, column: str | None, expected: str, got: Any,
    parameters: tuple[str, ...] = (),
) -> ImportFormatError:
    at = where if column is None else f"{where}, column {column!r}"
    return ImportFormatError(
        f"cannot import {path}: {at}: expected {expected}; got {_show(got)} (nothing was imported)",
        path=str(path),
        where=where,
        column=column,
        parameters=parameters,
    )


# --------------------------------------------------------------------------- values


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == ""
    return isinstance(value, float) and math.isnan(value)


def _as_bool(value: Any) -> bool:
    expected = "0/1 or true/false"
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "1.0"):
            return True
        if text in ("0", "false", "0.0"):
            return False
    raise _Bad(expected, value)


def _as_count(value: Any) -> int:
    expected = "a whole number >= 0"
    if isinstance(value, bool):
        raise _Bad(expected, value)
    number: float | int
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise _Bad(expected, value) from None
    else:
        raise _Bad(expected, value)
    if isinstance(number, float):
        if not math.isfinite(number) or not number.is_integer():
            raise _Bad(expected, value)
        number = int(number)
    if number < 0:
        raise _Bad(expected, value)
    return number


def _as_amount(value: Any) -> float | None:
    expected = "a number >= 0"
    if isinstance(value, bool):
        raise _Bad(expected, value)
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _Bad(expected, value) from None
    else:
        raise _Bad(expected, value)
    if math.isnan(number):
        return None
    if not math.isfinite(number) or number < 0:
        raise _Bad(expected, value)
    return number


def _as_outcome(value: Any) -> Outcome:
    if isinstance(value, str):
        try:
            return Outcome(value.strip().lower())
        except ValueError:
            pass
    raise _Bad("one of " + ", ".join(o.value for o in Outcome), value)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _Bad("text", value)


def _as_timestamp(value: Any) -> str:
    expected = "an ISO-8601 timestamp"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value.strip())
        except ValueError:
            raise _Bad(expected, value) from None
        return value.strip()
    raise _Bad(expected, value)


def _as_label(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool | int | float):
        return str(value)
    raise _Bad("a slice label (text or a number)", value)


def _as_cell(value: Any) -> dict[str, str]:
    """Parse a cell key ``factor=value,...`` into slices."""
    text = _as_text(value).strip()
    slices: dict[str, str] = {}
    for part in text.split(","):
        factor, sep, label = part.partition("=")
        if not sep or not factor.strip() or factor.strip() in slices:
            raise _Bad("a cell key 'factor=value,...' (each factor once)", value)
        slices[factor.strip()] = label.strip()
    return slices


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "bool": _as_bool,
    "count": _as_count,
    "amount": _as_amount,
    "outcome": _as_outcome,
    "text": _as_text,
    "timestamp": _as_timestamp,
    "cell": _as_cell,
}


# --------------------------------------------------------------------------- reading


@dataclass
class _Raw:
    """One data row as read: where it is, and its raw values (``None`` = absent)."""

    where: str
    values: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # column -> name in messages
    media: list[str] = field(default_factory=list)  # video files of the episode, as written


@dataclass
class _Table:
    """A file's rows before validation."""

    rows: list[_Raw]
    columns: list[str]
    factor_order: list[str] | None = None  # a fixed factor order (lerobot); else sorted
    manifest_extra: dict[str, Any] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # columns that are no record field
    notes: list[str] = field(default_factory=list)  # one-line notes for the user
    external_seeds: bool = False  # condition_seed values are the source's own seeds
    arm: str | None = None  # the policy of a file holding several (paired CSV)


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(
            path, f"byte {exc.start + 1}", None, "UTF-8 text", _Text("other bytes")
        ) from None


def _check_column_name(path: Path, name: str, where: str) -> bool:
    """Whether ``name`` is a record field or a slice column; ``False`` for another column.

    Another column is classified later (a slice factor, a metric or an outcome reason), unless
    it looks like a misspelt record field, which is refused (a typo such as ``sucess`` would
    otherwise import quietly as something else).
    """
    if name in _KINDS:
        return True
    if name.startswith(SLICE_PREFIX):
        factor = name[len(SLICE_PREFIX) :]
        if factor and "," not in factor and "=" not in factor and factor == factor.strip():
            return True
        raise _fail(path, where, name, "slice.<factor> with a factor name without ',' or '='", name)
    if not name.strip():  # pandas' to_csv() writes its index under an empty header
        raise _fail(path, where, name, "a named column (write the file without an index)", name)
    close = difflib.get_close_matches(name, IMPORT_COLUMNS, n=1, cutoff=0.8)
    if close:
        raise _fail(
            path,
            where,
            name,
            f"a known column (did you mean {close[0]!r}? to keep this column as it is, name "
            f"it in `factors` or `metrics`)",
            name,
            parameters=("factors", "metrics"),
        )
    return False


def _check_header(path: Path, columns: Sequence[str], where: str) -> list[str]:
    """Repeated and missing columns of a file with a header (CSV, Parquet); the unknown ones."""
    seen: set[str] = set()
    unknown: list[str] = []
    for name in columns:
        if name in seen:
            raise _fail(path, where, name, "each column once", _Text(f"{name!r} twice"))
        seen.add(name)
        if not _check_column_name(path, name, where):
            unknown.append(name)
    if "success" not in seen and "outcome" not in seen:
        shown = ", ".join(repr(c) for c in columns) or "no columns"
        raise _fail(path, where, "success", "a 'success' (0/1) or 'outcome' column", _Text(shown))
    return unknown


def _read_csv(path: Path) -> _Table:
    # strict: a quote left open is an error at its line, not the rest of the file in one field
    reader = csv.reader(io.StringIO(_read_text(path), newline=""), strict=True)
    header_where = "line 1 (header)"
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        raise _fail(
            path, header_where, None, "a header row naming the columns", _Text("an empty file")
        ) from None
    except csv.Error as exc:
        raise _fail(path, header_where, None, "valid CSV", _Text(str(exc))) from None
    unknown = _check_header(path, header, header_where)
    rows: list[_Raw] = []
    start = reader.line_num + 1
    while True:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            got = str(exc)
            if "end of data" in got:  # the field that opened a quote ran to the end of file
                got = "a quote opened on this line and never closed"
            raise _fail(path, f"line {start}", None, "valid CSV", _Text(got)) from None
        where, start = f"line {start}", reader.line_num + 1
        if not any(cell.strip() for cell in record):
            continue  # a blank line
        if len(record) != len(header):
            column = header[len(record)] if len(record) < len(header) else None
            raise _fail(
                path,
                where,
                column,
                f"{len(header)} fields (one per header column)",
                _Text(f"{len(record)} field{'' if len(record) == 1 else 's'}"),
            )
        rows.append(_Raw(where, dict(zip(header, record, strict=True))))
    return _Table(rows, header, unknown=unknown)


def _read_jsonl(path: Path) -> _Table:
    rows: list[_Raw] = []
    columns: list[str] = []
    unknown: list[str] = []
    for number, line in enumerate(_read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(
                path,
                f"{where}, character {exc.colno}",
                None,
                "one complete JSON object per line",
                _Text(f"invalid JSON ({exc.msg})"),
            ) from None
        if not isinstance(data, dict):
            raise _fail(path, where, None, "a JSON object", _Text(type(data).__name__))
        for name in data:
            if name not in columns:
                if not _check_column_name(path, name, where):
                    unknown.append(name)
                columns.append(name)
        rows.append(_Raw(where, data))
    return _Table(rows, columns, unknown=unknown)


def _read_parquet(path: Path) -> _Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise _fail(path, "file", None, "a Parquet file", _Text(first)) from None
    pandas_meta = table.schema.pandas_metadata or {}
    index = [c for c in pandas_meta.get("index_columns", []) if isinstance(c, str)]
    table = table.drop_columns([c for c in index if c in table.column_names])  # pandas' index
    columns = [str(name) for name in table.column_names]
    unknown = _check_header(path, columns, "schema")
    data = {name: table.column(name).to_pylist() for name in columns}
    rows = [
        _Raw(f"row {i + 1}", {name: data[name][i] for name in columns})
        for i in range(table.num_rows)
    ]
    return _Table(rows, columns, unknown=unknown)


_READERS: dict[str, Callable[[Path], _Table]] = {
    "csv": _read_csv,
    "jsonl": _read_jsonl,
    "parquet": _read_parquet,
}
"""Readers of the tabular formats (lerobot's is added by :mod:`._import_lerobot`)."""
