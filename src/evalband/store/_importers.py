"""Import results produced elsewhere (CSV, JSONL, Parquet, lerobot ``eval_info.json``) as a run.

A tabular file holds one row per attempted episode, with the columns of the
:class:`~evalband.episode.EpisodeRecord` (see ``docs/imports.md``): ``success`` (0/1) or
``outcome`` is enough; slices come as ``slice.<factor>`` columns or a ``cell`` key. lerobot-eval's
``eval_info.json`` holds per-task ``successes`` lists (or a single-task ``per_episode`` list) and
no per-episode condition seeds, so its episodes pair by episode index within task.

Everything is validated before anything is written; the run manifest and all episodes are then
stored in one transaction. A bad file is rejected whole with an
:class:`~evalband.errors.ImportFormatError` naming the file, the row and the column of the first
problem, and the store is left as it was.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import ImportFormatError, InvalidInputError, InvalidParameterError, StoreError
from evalband.store._manifest import RunManifest
from evalband.store._sqlite import RunStore

if TYPE_CHECKING:  # the panel module (pydantic, yaml) is imported when an import runs
    from evalband.panel import Panel

__all__ = [
    "import_results",
    "infer_import_format",
    "IMPORT_FORMATS",
    "IMPORT_COLUMNS",
    "SLICE_PREFIX",
    "LEROBOT_PAIRING",
]

IMPORT_FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet", "lerobot")
"""The formats :func:`import_results` reads."""

SLICE_PREFIX = "slice."
"""Prefix of the columns that carry one slice factor each (``slice.embodiment``)."""

LEROBOT_PAIRING = "episode index within task (lerobot records no per-episode seeds)"
"""What an imported lerobot run's episodes pair by (kept in the manifest's ``extra``)."""

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

# lerobot per-task metric lists kept per episode in ``extra`` (list name -> extra key).
_LEROBOT_LISTS: dict[str, str] = {
    "sum_rewards": "sum_reward",
    "max_rewards": "max_reward",
    "safety_costs": "safety_cost",
    "violation_steps": "violation_steps",
    "constraint_violations": "constraint_violations",
}


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


def _fail(path: Path, where: str, column: str | None, expected: str, got: Any) -> ImportFormatError:
    at = where if column is None else f"{where}, column {column!r}"
    return ImportFormatError(
        f"cannot import {path}: {at}: expected {expected}; got {_show(got)} (nothing was imported)",
        path=str(path),
        where=where,
        column=column,
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


@dataclass
class _Table:
    """A file's rows before validation."""

    rows: list[_Raw]
    columns: list[str]
    factor_order: list[str] | None = None  # a fixed factor order (lerobot); else sorted
    manifest_extra: dict[str, Any] = field(default_factory=dict)


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(
            path, f"byte {exc.start + 1}", None, "UTF-8 text", _Text("other bytes")
        ) from None


def _check_column_name(path: Path, name: str, where: str) -> None:
    if name in _KINDS:
        return
    if name.startswith(SLICE_PREFIX):
        factor = name[len(SLICE_PREFIX) :]
        if factor and "," not in factor and "=" not in factor and factor == factor.strip():
            return
        raise _fail(path, where, name, "slice.<factor> with a factor name without ',' or '='", name)
    if not name.strip():  # pandas' to_csv() writes its index under an empty header
        raise _fail(path, where, name, "a named column (write the file without an index)", name)
    known = ", ".join(IMPORT_COLUMNS)
    raise _fail(path, where, name, f"a known column ({known}, or slice.<factor>)", name)


def _check_header(path: Path, columns: Sequence[str], where: str) -> None:
    """Unknown, repeated and missing columns of a file with a header (CSV, Parquet)."""
    seen: set[str] = set()
    for name in columns:
        if name in seen:
            raise _fail(path, where, name, "each column once", _Text(f"{name!r} twice"))
        seen.add(name)
        _check_column_name(path, name, where)
    if "success" not in seen and "outcome" not in seen:
        shown = ", ".join(repr(c) for c in columns) or "no columns"
        raise _fail(path, where, "success", "a 'success' (0/1) or 'outcome' column", _Text(shown))


def _read_csv(path: Path) -> _Table:
    reader = csv.reader(io.StringIO(_read_text(path), newline=""))
    header_where = "line 1 (header)"
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        raise _fail(
            path, header_where, None, "a header row naming the columns", _Text("an empty file")
        ) from None
    except csv.Error as exc:
        raise _fail(path, header_where, None, "valid CSV", _Text(str(exc))) from None
    _check_header(path, header, header_where)
    rows: list[_Raw] = []
    start = reader.line_num + 1
    while True:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise _fail(path, f"line {start}", None, "valid CSV", _Text(str(exc))) from None
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
    return _Table(rows, header)


def _read_jsonl(path: Path) -> _Table:
    rows: list[_Raw] = []
    columns: list[str] = []
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
                _check_column_name(path, name, where)
                columns.append(name)
        rows.append(_Raw(where, data))
    return _Table(rows, columns)


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
    _check_header(path, columns, "schema")
    data = {name: table.column(name).to_pylist() for name in columns}
    rows = [
        _Raw(f"row {i + 1}", {name: data[name][i] for name in columns})
        for i in range(table.num_rows)
    ]
    return _Table(rows, columns)


def _read_lerobot(path: Path) -> _Table:
    try:
        doc = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise _fail(
            path,
            f"line {exc.lineno}, character {exc.colno}",
            None,
            "a complete lerobot eval_info.json (JSON)",
            _Text(f"invalid JSON ({exc.msg})"),
        ) from None
    if not isinstance(doc, dict):
        raise _fail(path, "top level", None, "a JSON object", _Text(type(doc).__name__))
    if isinstance(doc.get("per_task"), list):
        table = _lerobot_per_task(path, doc["per_task"])
        summary, summary_name = doc.get("overall"), "overall"
    elif isinstance(doc.get("per_episode"), list):
        table = _lerobot_per_episode(path, doc["per_episode"])
        summary, summary_name = doc.get("aggregated"), "aggregated"
    else:
        raise _fail(
            path,
            "top level",
            "per_task",
            "a 'per_task' list (multi-task lerobot-eval) or a 'per_episode' list",
            _Text("keys " + (", ".join(repr(k) for k in doc) or "none")),
        )
    _check_pc_success(path, table, summary, summary_name)
    table.manifest_extra["pairing"] = LEROBOT_PAIRING
    return table


def _lerobot_success(path: Path, value: Any, where: str, column: str) -> bool:
    try:
        return _as_bool(value)
    except _Bad as bad:
        raise _fail(path, where, column, bad.expected, bad.got) from None


def _lerobot_per_task(path: Path, tasks: list[Any]) -> _Table:
    rows: list[_Raw] = []
    seen: dict[tuple[str | None, str], str] = {}
    with_group: bool | None = None
    for index, entry in enumerate(tasks):
        where = f"per_task[{index}]"
        if not isinstance(entry, dict):
            raise _fail(path, where, None, "an object with task_id and metrics", entry)
        if "task_id" not in entry or _missing(entry["task_id"]):
            raise _fail(path, where, "task_id", "a task id", _NOTHING)
        has_group = "task_group" in entry and not _missing(entry["task_group"])
        if with_group is None:
            with_group = has_group
        elif has_group != with_group:
            raise _fail(
                path, where, "task_group", "a task_group on every task or on none", _NOTHING
            )
        try:
            task = _as_label(entry["task_id"])
            group = _as_label(entry["task_group"]) if has_group else None
        except _Bad as bad:
            raise _fail(path, where, "task_id", bad.expected, bad.got) from None
        label = task if group is None else f"{group}/{task}"
        if (group, task) in seen:
            raise _fail(
                path,
                where,
                "task_id",
                f"each task once (task {label} is also {seen[group, task]})",
                label,
            )
        seen[group, task] = where
        metrics = entry.get("metrics")
        if not isinstance(metrics, dict):
            raise _fail(path, f"task {label}", "metrics", "an object of per-episode lists", metrics)
        successes = metrics.get("successes")
        if not isinstance(successes, list) or not successes:
            raise _fail(
                path,
                f"task {label}",
                "metrics.successes",
                "a non-empty list of 0/1 or true/false",
                _NOTHING if successes is None else successes,
            )
        lists: dict[str, list[Any]] = {}
        for name in _LEROBOT_LISTS:
            values = metrics.get(name)
            if values is None:
                continue
            if not isinstance(values, list) or len(values) != len(successes):
                got = _Text(f"{len(values)} values") if isinstance(values, list) else values
                raise _fail(
                    path,
                    f"task {label}",
                    f"metrics.{name}",
                    f"a list of {len(successes)} values (one per episode, as successes)",
                    got,
                )
            lists[name] = values
        for episode, value in enumerate(successes):
            at = f"task {label}, episode {episode}"
            success = _lerobot_success(path, value, at, "metrics.successes")
            values_: dict[str, Any] = {"success": success, "episode": episode, "slice.task": task}
            if group is not None:
                values_["slice.task_group"] = group
            extra = {_LEROBOT_LISTS[name]: lst[episode] for name, lst in lists.items()}
            rows.append(_Raw(at, values_, extra))
    if not rows:
        raise _fail(path, "per_task", None, "at least one task", _Text("an empty list"))
    columns = ["success", "episode", "slice.task"] + (["slice.task_group"] if with_group else [])
    order = (["task_group"] if with_group else []) + ["task"]
    return _Table(rows, columns, factor_order=order)


def _lerobot_per_episode(path: Path, episodes: list[Any]) -> _Table:
    rows: list[_Raw] = []
    for index, entry in enumerate(episodes):
        where = f"per_episode[{index}]"
        if not isinstance(entry, dict):
            raise _fail(path, where, None, "an object with episode_ix and success", entry)
        raw_ix = entry.get("episode_ix", index)
        try:
            episode = index if raw_ix is None else _as_count(raw_ix)
        except _Bad as bad:
            raise _fail(path, where, "episode_ix", bad.expected, bad.got) from None
        at = f"episode {episode}"
        if "success" not in entry or entry["success"] is None:
            raise _fail(path, at, "success", "0/1 or true/false", _NOTHING)
        success = _lerobot_success(path, entry["success"], at, "success")
        extra = {k: v for k, v in entry.items() if k not in ("episode_ix", "success")}
        labels = {"episode": "episode_ix"}
        rows.append(_Raw(at, {"success": success, "episode": episode}, extra, labels))
    if not rows:
        raise _fail(path, "per_episode", None, "at least one episode", _Text("an empty list"))
    return _Table(rows, ["success", "episode"], factor_order=[])


def _check_pc_success(path: Path, table: _Table, summary: Any, name: str) -> None:
    """Cross-check lerobot's own aggregate success rate against the per-episode list."""
    if not isinstance(summary, dict) or not isinstance(summary.get("pc_success"), int | float):
        return
    stated = float(summary["pc_success"])
    if math.isnan(stated):
        return
    rate = 100.0 * sum(bool(r.values["success"]) for r in table.rows) / len(table.rows)
    if abs(rate - stated) > 1e-6 * max(1.0, abs(stated)):
        raise _fail(
            path, name, "pc_success", f"{rate!r} (the per-episode successes' rate, in %)", stated
        )


_READERS: dict[str, Callable[[Path], _Table]] = {
    "csv": _read_csv,
    "jsonl": _read_jsonl,
    "parquet": _read_parquet,
    "lerobot": _read_lerobot,
}


# --------------------------------------------------------------------------- validating


@dataclass
class _Row:
    """One validated row, before the panel is known."""

    where: str
    outcome: Outcome
    slices: dict[str, str]
    episode: int | None
    repeat: int
    values: dict[str, Any]
    extra: dict[str, Any]
    labels: dict[str, str] = field(default_factory=dict)
    cell: str = ""

    @property
    def key(self) -> tuple[str, int, int]:
        """The pairing key; valid once the cell and episode are assigned."""
        assert self.episode is not None  # set by _Checker.add before any key is read
        return (self.cell, self.episode, self.repeat)


def _convert(path: Path, raw: _Raw, table: _Table) -> _Row:
    values: dict[str, Any] = {}
    slices: dict[str, str] = {}
    for name, value in raw.values.items():
        if _missing(value):
            continue
        label = raw.labels.get(name, name)
        try:
            if name.startswith(SLICE_PREFIX):
                slices[name[len(SLICE_PREFIX) :]] = _as_label(value)
            else:
                values[name] = _CONVERTERS[_KINDS[name]](value)
        except _Bad as bad:
            raise _fail(path, raw.where, label, bad.expected, bad.got) from None
    success, outcome = values.get("success"), values.get("outcome")
    if success is None and outcome is None:
        column = (
            "outcome"
            if "outcome" in table.columns and "success" not in table.columns
            else "success"
        )
        raise _fail(path, raw.where, column, "0/1 or true/false (or an outcome)", _NOTHING)
    if success is not None and outcome is not None and success != (outcome is Outcome.SUCCESS):
        raise _fail(
            path,
            raw.where,
            "success",
            f"{int(outcome is Outcome.SUCCESS)} (to agree with outcome {outcome.value!r})",
            raw.values["success"],
        )
    if outcome is None:
        outcome = Outcome.SUCCESS if success else Outcome.FAILURE
    if "cell" in values:
        parsed: dict[str, str] = values.pop("cell")
        for factor, label in parsed.items():
            if factor in slices and slices[factor] != label:
                raise _fail(
                    path,
                    raw.where,
                    "cell",
                    f"{factor}={slices[factor]} (as in column {SLICE_PREFIX}{factor})",
                    raw.values["cell"],
                )
        slices = {**parsed, **slices}
    if "episode" in table.columns and "episode" not in values:
        raise _fail(path, raw.where, "episode", "a whole number >= 0", _NOTHING)
    if values.get("time_to_success_s") is not None and outcome is not Outcome.SUCCESS:
        raise _fail(
            path,
            raw.where,
            "time_to_success_s",
            f"no value for a {outcome.value} (time to success is for successes only)",
            raw.values["time_to_success_s"],
        )
    terminated = values.setdefault("terminated", outcome in (Outcome.SUCCESS, Outcome.FAILURE))
    truncated = values.setdefault("truncated", outcome is Outcome.TIMEOUT)
    if outcome is Outcome.SUCCESS and truncated and not terminated:
        raise _fail(
            path,
            raw.where,
            "truncated",
            "0 for a success that is not terminated",
            raw.values.get("truncated"),
        )
    if outcome is Outcome.SUCCESS and values.get("time_to_success_s") is None:
        values["time_to_success_s"] = values.get("sim_time_s")
    return _Row(
        where=raw.where,
        outcome=outcome,
        slices=slices,
        episode=values.pop("episode", None),
        repeat=values.pop("repeat", 0),
        values=values,
        extra=dict(raw.extra),
        labels=raw.labels,
    )


def _label_key(label: str) -> tuple[int, float, str]:
    """Sort slice labels numerically when they are numbers, else as text."""
    try:
        number = float(label)
    except ValueError:
        return (1, 0.0, label)
    return (0, number, label) if math.isfinite(number) else (1, 0.0, label)


class _Checker:
    """The checks that span rows, applied row by row so the first problem is reported first.

    Every row names the same factors (the panel's, when one is given; else the first row's),
    each ``(cell, episode, repeat)`` appears once, a constant ``policy`` column, and, with a
    panel, every row inside it. Also assigns cells (factors in ``order``) and default episodes
    (row order within ``(cell, repeat)``).
    """

    def __init__(self, path: Path, table: _Table, panel: Panel | None) -> None:
        self.path = path
        self.table = table
        self.panel = panel
        self.order: list[str] | None = (
            list(panel.factors) if panel is not None else table.factor_order
        )
        self.levels = (
            {}
            if panel is None
            else {factor: [str(v) for v in values] for factor, values in panel.factors.items()}
        )
        self.seeds = (
            {}
            if panel is None
            else {spec.key: spec.condition_seed for spec in panel.episode_specs()}
        )
        self.counters: dict[tuple[str, int], int] = {}
        self.first: dict[tuple[str, int, int], str] = {}
        self.policy: tuple[str, str] | None = None
        self.rows: list[_Row] = []

    def add(self, raw: _Raw) -> None:
        row = _convert(self.path, raw, self.table)
        if self.order is None:
            self.order = sorted(row.slices)
        self._factors(row)
        row.slices = {factor: row.slices[factor] for factor in self.order}
        row.cell = ",".join(f"{factor}={label}" for factor, label in row.slices.items())
        if row.episode is None:
            count = (row.cell, row.repeat)
            row.episode = self.counters.get(count, 0)
            self.counters[count] = row.episode + 1
        if self.panel is not None:
            self._inside_panel(row, self.panel)
        if row.key in self.first:
            raise _fail(
                self.path,
                row.where,
                row.labels.get("episode", "episode"),
                f"each (cell, episode, repeat) once; {self.first[row.key]} has the same",
                _Text(f"cell={row.cell!r}, episode={row.episode}, repeat={row.repeat}"),
            )
        self.first[row.key] = row.where
        self._policy(row)
        self.rows.append(row)

    def _factors(self, row: _Row) -> None:
        assert self.order is not None  # set from the panel, the reader, or the first row
        expected = set(self.order)
        if set(row.slices) == expected:
            return
        source = "the panel's" if self.panel is not None else "the first row's"
        names = ", ".join(self.order) or "none"
        missing = [factor for factor in self.order if factor not in row.slices]
        if missing:
            raise _fail(
                self.path,
                row.where,
                SLICE_PREFIX + missing[0],
                f"a value for every one of {source} factors ({names})",
                _NOTHING,
            )
        stray = sorted(set(row.slices) - expected)[0]
        raise _fail(
            self.path,
            row.where,
            SLICE_PREFIX + stray,
            f"only {source} factors ({names})",
            row.slices[stray],
        )

    def _inside_panel(self, row: _Row, panel: Panel) -> None:
        for factor, label in row.slices.items():
            if label not in self.levels[factor]:
                raise _fail(
                    self.path,
                    row.where,
                    SLICE_PREFIX + factor,
                    f"one of the panel's levels {', '.join(self.levels[factor])}",
                    label,
                )
        if row.key[1] >= panel.episodes:
            raise _fail(
                self.path,
                row.where,
                "episode",
                f"an index below the panel's {panel.episodes} episodes per cell",
                row.episode,
            )
        if row.repeat >= panel.repeats:
            raise _fail(
                self.path,
                row.where,
                "repeat",
                f"an index below the panel's {panel.repeats} repeats",
                row.repeat,
            )
        seed, planned = row.values.get("condition_seed"), self.seeds[row.key]
        if seed is not None and seed != planned:
            raise _fail(
                self.path,
                row.where,
                "condition_seed",
                f"{planned} (the panel's seed for this episode)",
                seed,
            )

    def _policy(self, row: _Row) -> None:
        name = row.values.get("policy")
        if name is None:
            return
        if self.policy is None:
            self.policy = (name, row.where)
        elif name != self.policy[0]:
            raise _fail(
                self.path,
                row.where,
                "policy",
                f"the same policy on every row ({self.policy[0]!r} at {self.policy[1]}); import "
                "each policy's results as its own run",
                name,
            )


def _infer_panel(stem: str, path: Path, rows: Sequence[_Row], order: Sequence[str]) -> Panel:
    from evalband.panel import Budget, Panel

    factors: dict[str, list[str | int | float | bool] | dict[str, dict[str, Any]]] = {}
    for factor in order:
        levels: list[str | int | float | bool] = []
        labels = sorted({row.slices[factor] for row in rows}, key=_label_key)
        levels.extend(labels)
        factors[factor] = levels
    steps = max((int(row.values.get("steps", 0)) for row in rows), default=0)
    return Panel(
        name=stem,
        description=f"inferred by evalband import from {path.name}",
        env="imported",
        episodes=max(int(row.episode or 0) for row in rows) + 1,
        seed=0,
        budget=Budget(steps=max(steps, 1)),
        factors=factors,
        repeats=max(row.repeat for row in rows) + 1,
    )


# --------------------------------------------------------------------------- public


def infer_import_format(path: str | Path) -> str:
    """The import format of a file, from its suffix.

    ``.csv`` -> ``csv``; ``.jsonl`` / ``.ndjson`` -> ``jsonl``; ``.parquet`` -> ``parquet``;
    ``.json`` -> ``lerobot`` (lerobot-eval's ``eval_info.json``).

    Raises:
        ImportFormatError: for any other suffix (pass the format explicitly).

    >>> infer_import_format("outputs/eval/eval_info.json")
    'lerobot'
    >>> infer_import_format("results.ndjson")
    'jsonl'
    """
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        known = ", ".join(f"{s} ({f})" for s, f in _SUFFIXES.items())
        raise ImportFormatError(
            f"cannot import {path}: cannot tell its format from the suffix {suffix!r}; expected "
            f"one of {known}, or give the format ({', '.join(IMPORT_FORMATS)})",
            path=str(path),
            where="file",
        )
    return _SUFFIXES[suffix]


def _stem(path: Path, fmt: str) -> str:
    """The name a run gets by default: the file stem (lerobot: the output directory's name)."""
    stem = path.stem
    if fmt == "lerobot" and stem == "eval_info" and path.resolve().parent.name:
        stem = path.resolve().parent.name
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in stem)
    return safe or "imported"


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def import_results(
    store: RunStore,
    path: str | Path,
    *,
    format: str | None = None,
    run_id: str | None = None,
    policy: str | None = None,
    panel: Panel | None = None,
) -> str:
    r"""Import episodes produced elsewhere into ``store`` as a new run.

    Reads a CSV, JSONL or Parquet file of one row per episode (columns in ``docs/imports.md``;
    ``success`` 0/1 alone is enough) or lerobot-eval's ``eval_info.json``. The whole file is
    validated first; then the run manifest (``status="imported"``, ``source="import"``,
    ``backend="import"``) and every episode are written in one transaction. A bad file raises
    :class:`~evalband.errors.ImportFormatError` naming the row and column of the first problem,
    and the store is left unchanged.

    Without ``panel`` a panel is inferred (env ``"imported"``, seed 0, the observed slice values
    as factors, the largest episode index + 1 as episodes, ``max(steps)`` as the step budget) and
    the manifest says so (``extra["panel_inferred"] = True``). Condition seeds missing from the
    file are :func:`~evalband.panel.default_condition_seed` ``(0, cell, episode)``, marked
    ``extra["condition_seed_inferred"] = True`` on each record. With ``panel``, every row must
    fall inside it, the run records its fingerprint, and condition seeds are the panel's, so the
    run compares and pairs with evalband runs of that panel.

    lerobot records no per-episode seeds: its episodes pair by episode index within task, and
    the manifest says so in ``extra["pairing"]``.

    Args:
        store: an open run store.
        path: the file.
        format: ``csv``, ``jsonl``, ``parquet`` or ``lerobot``; from the suffix when ``None``.
        run_id: the new run's id; the file stem when ``None`` (for ``eval_info.json``, its
            directory's name). It must not exist yet.
        policy: the policy name; when ``None``, the ``policy`` column (which must then be the
            same on every row), else the file stem as above.
        panel: the panel the episodes were played on; inferred when ``None``.

    Returns:
        The run id.

    Raises:
        ImportFormatError: the file is missing or malformed (nothing is imported).
        StoreError: a run with that id already exists.
        InvalidParameterError: an unknown ``format``.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from evalband.store import open_store
    >>> with tempfile.TemporaryDirectory() as d:
    ...     csv_path = Path(d) / "policy-a.csv"
    ...     _ = csv_path.write_text(
    ...         "slice.task,success,steps\npick,1,40\npick,0,90\nplace,1,55\n")
    ...     with open_store(Path(d) / "runs.sqlite") as store:
    ...         run = import_results(store, csv_path)
    ...         print(run, store.outcome_counts(run)["success"], store.require_run(run).source)
    ...         print(sorted(r.key for r in store.episode_records(run)))
    policy-a 2 import
    [('task=pick', 0, 0), ('task=pick', 1, 0), ('task=place', 0, 0)]
    """
    path = Path(path)
    if format is None:
        fmt = infer_import_format(path)
    elif format in IMPORT_FORMATS:
        fmt = format
    else:
        raise InvalidParameterError(
            f"import format must be one of {', '.join(IMPORT_FORMATS)}; got {format!r}"
        )
    stem = _stem(path, fmt)
    run_id = stem if run_id is None else run_id
    if store.get_run(run_id) is not None:
        raise StoreError(
            f"run {run_id!r} already exists in {store.path}; give another run id to import "
            f"{path} as a new run"
        )
    if not path.is_file():
        raise ImportFormatError(
            f"cannot import {path}: expected a {fmt} file; got no such file",
            path=str(path),
            where="file",
        )

    table = _READERS[fmt](path)
    if not table.rows:
        raise _fail(path, "file", None, "at least one episode row", _Text("no rows"))
    checker = _Checker(path, table, panel)
    for raw in table.rows:
        checker.add(raw)
    rows, order = checker.rows, checker.order or []
    column_policy = None if checker.policy is None else checker.policy[0]
    policy_name = policy or column_policy or stem
    inferred = panel is None
    the_panel = _infer_panel(stem, path, rows, order) if panel is None else panel
    fingerprint = the_panel.fingerprint

    records: list[EpisodeRecord] = []
    for row in rows:
        extra = dict(row.extra)
        seed = row.values.get("condition_seed")
        if panel is not None:
            seed = checker.seeds[row.key]
        elif seed is None:
            from evalband.panel import default_condition_seed

            seed = default_condition_seed(0, row.cell, row.key[1])
            extra["condition_seed_inferred"] = True
        fields_ = {name: row.values[name] for name in _RECORD_FIELDS if name in row.values}
        fields_.setdefault("steps", 0)  # unknown: 0 (documented)
        try:
            records.append(
                EpisodeRecord(
                    run_id=run_id,
                    policy=policy_name,
                    panel_fingerprint=fingerprint,
                    cell=row.cell,
                    slices=dict(row.slices),
                    episode=row.key[1],
                    repeat=row.repeat,
                    condition_seed=int(seed),
                    outcome=row.outcome,
                    terminated=bool(row.values["terminated"]),
                    truncated=bool(row.values["truncated"]),
                    time_to_success_s=row.values.get("time_to_success_s"),
                    extra=extra,
                    **fields_,
                )
            )
        except InvalidInputError as exc:  # pragma: no cover - the checks above come first
            raise _fail(path, row.where, None, "a valid episode", _Text(str(exc))) from None
    records.sort(key=lambda r: r.key)

    manifest = _manifest(
        the_panel,
        policy_name,
        run_id,
        path,
        fmt,
        n_rows=len(records),
        inferred=inferred,
        table=table,
        column_policy=column_policy,
    )
    store._create_run_with_episodes(manifest, records)  # one transaction: all or nothing
    return run_id


def _manifest(
    panel: Panel,
    policy: str,
    run_id: str,
    path: Path,
    fmt: str,
    *,
    n_rows: int,
    inferred: bool,
    table: _Table,
    column_policy: str | None,
) -> RunManifest:
    from evalband.run._runner import new_manifest

    base = new_manifest(
        panel,
        policy,
        run_id,
        backend="import",
        workers=0,
        policy_hash=None,
        n_planned=n_rows if inferred else len(panel.episode_specs()),
        source="import",
    )
    extra: dict[str, Any] = {
        "imported_from": {
            "path": str(path.resolve()),
            "format": fmt,
            "sha256": _sha256(path),
            "episodes": n_rows,
        },
        **table.manifest_extra,
    }
    if inferred:
        extra["panel_inferred"] = True
    if column_policy is not None and column_policy != policy:
        extra["policy_in_file"] = column_policy
    return base.replace(
        status="imported",
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        extra=extra,
    )
