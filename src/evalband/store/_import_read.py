"""Reading and checking the values of imported result files (CSV, JSONL, Parquet, lerobot).

lerobot's layouts are those ``src/lerobot/scripts/lerobot_eval.py`` (huggingface/lerobot)
writes: ``eval_policy`` returns ``per_episode`` (``episode_ix``, ``sum_reward``, ``max_reward``,
``success``, ``seed``), ``aggregated`` and, when rendering, a top-level ``video_paths`` of
``eval_episode_<i>.mp4`` for the first episodes in order; ``eval_policy_all`` writes
``per_task`` entries whose ``metrics`` hold per-episode lists (``sum_rewards``,
``max_rewards``, ``successes``, ``video_paths``) and no seeds.

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
    "LEROBOT_PAIRING",
    "LEROBOT_SEED_PAIRING",
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

LEROBOT_PAIRING = "episode index within task (lerobot records no per-episode seeds)"
"""What an imported lerobot run's episodes pair by (kept in the manifest's ``extra``)."""

LEROBOT_SEED_PAIRING = "episode seed (lerobot's per-episode seed; a repeated seed is a repeat)"
"""What an imported single-task lerobot run with per-episode seeds pairs by."""

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
            f"it with --factors or --metrics)",
            name,
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
    unknown = _check_header(path, header, header_where)
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
        table = _lerobot_per_episode(path, doc["per_episode"], doc.get("video_paths"))
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
    table.manifest_extra.setdefault("pairing", LEROBOT_PAIRING)
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
        # lerobot renders the first ``max_episodes_rendered`` episodes of a task, in order.
        videos = _video_list(path, f"task {label}", metrics.get("video_paths"))
        for episode, value in enumerate(successes):
            at = f"task {label}, episode {episode}"
            success = _lerobot_success(path, value, at, "metrics.successes")
            values_: dict[str, Any] = {"success": success, "episode": episode, "slice.task": task}
            if group is not None:
                values_["slice.task_group"] = group
            extra = {_LEROBOT_LISTS[name]: lst[episode] for name, lst in lists.items()}
            metrics = _numbers(extra)
            if metrics:
                extra["metrics"] = metrics
            media = [str(videos[episode])] if episode < len(videos) else []
            rows.append(_Raw(at, values_, extra, media=media))
    if not rows:
        raise _fail(path, "per_task", None, "at least one task", _Text("an empty list"))
    columns = ["success", "episode", "slice.task"] + (["slice.task_group"] if with_group else [])
    order = (["task_group"] if with_group else []) + ["task"]
    return _Table(rows, columns, factor_order=order)


def _lerobot_per_episode(path: Path, episodes: list[Any], video_paths: Any) -> _Table:
    """The older single-task layout; a per-episode ``seed`` is the episode's condition.

    With seeds, episodes are numbered by their distinct seeds in increasing order and an
    episode whose seed came before is a repeat of that condition, so two evaluations with the
    same seeds pair seed by seed; without seeds, by ``episode_ix``.
    """
    rows: list[_Raw] = []
    videos = _video_list(path, "top level", video_paths)
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
        metrics = _numbers({k: v for k, v in extra.items() if k != "seed"})
        if metrics:
            extra["metrics"] = metrics
        values: dict[str, Any] = {"success": success, "episode": episode}
        labels = {"episode": "episode_ix"}
        if entry.get("seed") is not None:
            try:
                values["condition_seed"] = _as_count(entry["seed"])
            except _Bad as bad:
                raise _fail(path, at, "seed", bad.expected, bad.got) from None
        media = [str(videos[index])] if index < len(videos) else []
        rows.append(_Raw(at, values, extra, labels, media=media))
    if not rows:
        raise _fail(path, "per_episode", None, "at least one episode", _Text("an empty list"))
    seeded = [row for row in rows if "condition_seed" in row.values]
    if seeded and len(seeded) != len(rows):
        first = next(row for row in rows if "condition_seed" not in row.values)
        raise _fail(path, first.where, "seed", "a seed on every episode or on none", _NOTHING)
    table = _Table(rows, ["success", "episode"], factor_order=[])
    if seeded:
        distinct = sorted({r.values["condition_seed"] for r in rows})
        order = {seed: i for i, seed in enumerate(distinct)}
        seen: dict[int, int] = {}
        for row in rows:
            seed = row.values["condition_seed"]
            row.values["episode"] = order[seed]
            row.values["repeat"] = seen.get(seed, 0)
            seen[seed] = row.values["repeat"] + 1
            row.labels = {"episode": "seed", "repeat": "seed"}
        table.external_seeds = True
        table.manifest_extra["pairing"] = LEROBOT_SEED_PAIRING
    return table


def _numbers(values: dict[str, Any]) -> dict[str, float]:
    """The finite numbers among ``values`` (booleans as 0/1): an episode's metrics."""
    out: dict[str, float] = {}
    for name, value in values.items():
        if isinstance(value, bool | int | float) and math.isfinite(float(value)):
            out[name] = float(value)
    return out


def _video_list(path: Path, where: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, where, "video_paths", "a list of file paths", value)
    return list(value)


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


