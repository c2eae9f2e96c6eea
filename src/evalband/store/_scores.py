"""Named scorers on stored episodes: a human's score, a model judge's label, an imported label.

An episode carries the env's judgement in its record (``outcome``; ``score`` for an ordinal
rubric). Further judgements of the same episode are kept in its ``extra`` as named scorers,
each with its source::

    extra["scorers"] = {"judge": {"value": 1, "source": "model-judge"}, ...}

A scorer given with the run (an importer, the runner) arrives that way; one made later
(labels a person or a model gave after watching the clips) is added to the stored episodes by
:func:`add_scores` in one transaction: every key must name a stored episode, and a scorer an
episode already has is kept unless ``replace`` is asked (nothing is overwritten silently).
The store's schema is unchanged (``extra`` is a JSON column of every version), so old store
files take scorers as they are.

:func:`read_labels` reads such labels from CSV or JSON lines: ``episode``, optional ``cell``
(default ``""``) and ``repeat`` (default 0), and the value column.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband._util.ids import check_name
from evalband.errors import InvalidInputError

if TYPE_CHECKING:
    from evalband.store._sqlite import RunStore

__all__ = ["RESERVED_SCORERS", "add_scores", "parse_label", "read_labels"]

RESERVED_SCORERS = ("success", "unaided", "score", "suggestion", "truth")
"""Scorers every record answers from its own fields (see ``evalband.analysis``); not stored."""

_TRUE = {"1", "success", "succeeded", "true", "yes", "pass"}
_FALSE = {"0", "failure", "failed", "fail", "false", "no", "timeout"}

Key = tuple[str, int, int]


def parse_label(value: Any, where: str) -> float | None:
    """A label as a number: numbers as they are, success/failure words as 1/0, blank as None.

    >>> parse_label("success", "row 2"), parse_label("0.5", "row 3"), parse_label("", "row 4")
    (1.0, 0.5, None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        number = float(value)
    else:
        text = str(value).strip().lower()
        if not text:
            return None
        if text in _TRUE or text in _FALSE:
            return 1.0 if text in _TRUE else 0.0
        try:
            number = float(text)
        except ValueError:
            raise InvalidInputError(f"{where}: a label must be a number or success/failure; "
                                    f"got {str(value)[:40]!r}") from None
    if not math.isfinite(number):
        raise InvalidInputError(f"{where}: a label must be a finite number; got {value!r}")
    return number


def _whole(value: Any, name: str, where: str, default: int | None) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        if default is None:
            raise InvalidInputError(f"{where}: the {name} column is empty; every label names "
                                    "its episode (cell, episode, repeat)")
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not number.is_integer() or number < 0:
        raise InvalidInputError(f"{where}: the {name!r} column must hold a whole number >= 0 "
                                f"(0-based, as the run stores it); got {value!r}")
    return int(number)


def _text(path: Path) -> str:
    from evalband._util.limits import MAX_IMPORT_BYTES

    if path.is_dir():
        raise InvalidInputError(f"{path} is a directory; the labels are one CSV or JSON lines "
                                "file with an 'episode' column and a value column")
    if not path.is_file():
        raise InvalidInputError(f"no labels file {path}; expected CSV or JSON lines with an "
                                "'episode' column and a value column")
    if path.stat().st_size > MAX_IMPORT_BYTES:
        raise InvalidInputError(f"{path} is {path.stat().st_size} bytes; a labels file is at "
                                f"most {MAX_IMPORT_BYTES} bytes")
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: byte {exc.start + 1} is not UTF-8 text; save the "
                                "labels as UTF-8 CSV or JSON lines") from None


def read_labels(path: Path, column: str | None = None, *,
                scorer: str = "value") -> dict[Key, float]:
    """Labels from CSV or JSON lines: ``(cell, episode, repeat)`` -> value (blank rows skipped).

    ``column`` is the value column; ``None``: the column named ``scorer``, else ``value``.

    Raises:
        InvalidInputError: a missing, oversized or non-UTF-8 file, a missing column, a
            duplicated episode, a bad value.
    """
    rows: list[dict[str, Any]]
    text = _text(path)
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        try:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path} is not JSON lines: {exc.msg} (line "
                                    f"{exc.lineno})") from None
        if not all(isinstance(r, dict) for r in rows):
            raise InvalidInputError(f"{path}: every line must be a JSON object")
    else:
        rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise InvalidInputError(f"{path} holds no labels (no rows under a header); expected "
                                "one row per judged episode: episode, optional cell and "
                                "repeat, and the value")
    if column is None:
        column = scorer if scorer in rows[0] or "value" not in rows[0] else "value"
    if "episode" not in rows[0]:
        raise InvalidInputError(f"{path} has no 'episode' column; columns: "
                                f"{', '.join(map(str, rows[0]))}")
    if column not in rows[0]:
        raise InvalidInputError(f"{path} has no {column!r} column; columns: "
                                f"{', '.join(map(str, rows[0]))}; name the value column with "
                                "`column`", parameters=("column",))
    labels: dict[Key, float] = {}
    for i, row in enumerate(rows, start=2 if path.suffix.lower() == ".csv" else 1):
        where = f"{path.name} row {i}"
        value = parse_label(row.get(column), where)
        if value is None:
            continue
        key = (str(row.get("cell") or ""), _whole(row.get("episode"), "episode", where, None),
               _whole(row.get("repeat"), "repeat", where, 0))
        if key in labels:
            raise InvalidInputError(f"{where}: episode {key} is labelled twice")
        labels[key] = value
    return labels


def add_scores(store: RunStore, run_id: str, scorer: str, source: str,
               values: Mapping[Key, float], *, replace: bool = False) -> int:
    """Store scorer ``scorer`` (from ``source``) on the run's episodes; how many got it.

    Raises:
        InvalidInputError: a reserved or malformed name, no values, a key that names no
            stored episode, or an episode that already has this scorer (without
            ``replace``).
        RunNotFoundError: when no such run is stored.
    """
    check_name(scorer, "scorer name")
    check_name(source, "scorer source")
    if scorer in RESERVED_SCORERS:
        raise InvalidInputError(f"{scorer!r} is a scorer every episode has from its record; "
                                "name the new one differently (e.g. 'human', 'judge')")
    if not values:
        raise InvalidInputError(f"no labels for scorer {scorer!r}")
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    with store.transaction() as conn:
        store.require_run(run_id)
        rows = conn.execute('SELECT "cell", "episode", "repeat", "extra" FROM episodes '
                            "WHERE run_id = ?", (run_id,)).fetchall()
        stored = {(str(c), int(e), int(r)): x for c, e, r, x in rows}
        missing = sorted(k for k in values if k not in stored)
        if missing:
            raise InvalidInputError(
                f"{len(missing)} label(s) name no stored episode of run {run_id}, e.g. cell "
                f"{missing[0][0]!r} episode {missing[0][1]} repeat {missing[0][2]}")
        updates = []
        for key, value in values.items():
            extra = json.loads(stored[key])
            scorers = extra.setdefault("scorers", {})
            if scorer in scorers and not replace:
                raise InvalidInputError(
                    f"episode {key} of run {run_id} already has scorer {scorer!r}; pass "
                    "`replace=True` to overwrite it", parameters=("replace",))
            scorers[scorer] = {"value": _plain(value), "source": source, "at": stamp}
            updates.append((json.dumps(extra, sort_keys=True), run_id, *key))
        conn.executemany('UPDATE episodes SET "extra" = ? WHERE run_id = ? AND "cell" = ? '
                         'AND "episode" = ? AND "repeat" = ?', updates)
    return len(updates)


def _plain(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)
