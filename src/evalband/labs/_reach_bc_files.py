"""Files of the reaching lab's BC exercise: CSV/JSON writing, sha256 references, reading demos.

Every stage records the sha256 of what it read; :func:`check_reference` turns a mismatch into
a one-line :class:`ReferenceMismatchError` naming the reference and what to do.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalband.errors import EvalbandError, InvalidInputError

__all__ = [
    "DATA_FILE",
    "SPLIT_FILE",
    "DEMO_COLUMNS",
    "ReferenceMismatchError",
    "sha256",
    "write_csv",
    "write_json",
    "load_json",
    "check_reference",
    "read_demos",
    "episode_ids",
    "demo_rows",
    "demo_starts",
]

DATA_FILE = "demos.csv"
"""The demonstrations."""
SPLIT_FILE = "split.json"
"""The episode split."""
DEMO_COLUMNS = ("episode", "step", "x", "v", "action")
"""``demos.csv``: the state at ``t = step * 0.2`` s and the expert's command taken at it."""


class ReferenceMismatchError(EvalbandError):
    """A stage's input no longer matches the sha256 a previous stage recorded for it."""


def sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    r"""Write a CSV (``\n`` line ends, floats by ``repr``, booleans ``true``/``false``).

    Args:
        path: the file.
        columns: the header.
        rows: the rows, one value per column.

    Returns:
        The file's sha256.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = write_csv(path, ["a", "b"], [(0.1, True)])
    >>> path.read_text()
    'a,b\n0.1,true\n'
    """
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([_cell(v) for v in row] for row in rows)
    return sha256(path)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON (no timestamps: same input, same bytes)."""
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def load_json(directory: Path, name: str, stage: str) -> dict[str, Any]:
    """Read a stage's JSON file, or say which stage to run first.

    Raises:
        InvalidInputError: the file is missing, not JSON, or not an object.
    """
    path = directory / name
    if not path.is_file():
        raise InvalidInputError(
            f"{path} not found: run `evalband lab reach-bc {stage} --out {directory}` first"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path} is not valid JSON ({exc}); re-run `{stage}`") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path} must hold a JSON object; re-run `{stage}`")
    return data


def check_reference(directory: Path, ref: object, name: str, what: str, holder: str,
                     fix: str) -> str:
    """The file's sha256, or a one-line refusal naming the reference that changed.

    Args:
        directory: the exercise directory.
        ref: the recorded reference, ``{"file": ..., "sha256": ...}``.
        name: the referenced file's name in ``directory``.
        what: the reference's name in messages (``data``, ``split``).
        holder: the file that recorded the reference.
        fix: what to do, appended to the message.

    Returns:
        The file's current sha256 (equal to the recorded one).

    Raises:
        InvalidInputError: no reference was recorded.
        ReferenceMismatchError: the file is missing or its sha256 differs.
    """
    path = directory / name
    if not isinstance(ref, dict) or not isinstance(ref.get("sha256"), str):
        raise InvalidInputError(f"{directory / holder} records no {what} reference; {fix}")
    if not path.is_file():
        raise ReferenceMismatchError(
            f"the {what} reference of {holder} points to {path}, which is missing; {fix}"
        )
    found, recorded = sha256(path), str(ref["sha256"])
    if found != recorded:
        raise ReferenceMismatchError(
            f"the {what} reference changed: {path} has sha256 {found[:12]}..., but {holder} "
            f"recorded {recorded[:12]}...; {fix}"
        )
    return found


def read_demos(path: Path) -> dict[str, NDArray[Any]]:
    """``demos.csv`` as arrays: ``episode``, ``step``, ``states`` (n, 2), ``action``.

    Raises:
        InvalidInputError: other columns, a non-numeric or non-finite value, or no rows.
    """
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = tuple(next(reader, ()))
        if header != DEMO_COLUMNS:
            raise InvalidInputError(
                f"{path}: expected columns {', '.join(DEMO_COLUMNS)}, got {', '.join(header)}"
            )
        raw = list(reader)
    try:
        table = np.asarray(raw, dtype=np.float64).reshape(-1, len(DEMO_COLUMNS))
    except ValueError as exc:
        raise InvalidInputError(f"{path}: every row needs 5 numbers ({exc})") from None
    if not np.all(np.isfinite(table)) or table.shape[0] == 0:
        raise InvalidInputError(f"{path}: rows must be finite numbers, at least one")
    return {
        "episode": table[:, 0].astype(np.int64), "step": table[:, 1].astype(np.int64),
        "states": table[:, 2:4], "action": table[:, 4],
    }


def episode_ids(split: dict[str, Any], part: str) -> NDArray[np.int64]:
    """The episode ids of one part of ``split.json`` (``train``, ``validation``, ``final``)."""
    ids = split.get(part)
    if not isinstance(ids, list) or not ids:
        raise InvalidInputError(f"{SPLIT_FILE} has no '{part}' episode list; re-run `split`")
    return np.asarray(ids, dtype=np.int64)


def demo_rows(demos: dict[str, NDArray[Any]], episodes: NDArray[np.int64]
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(states, actions)`` of the given episodes' rows, and of no other."""
    mask = np.isin(demos["episode"], episodes)
    return demos["states"][mask], demos["action"][mask]


def demo_starts(demos: dict[str, NDArray[Any]], episodes: NDArray[np.int64]
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(x0, v0)``: the step-0 states of the given episodes, in their order."""
    first = demos["step"] == 0
    by_episode = dict(zip(demos["episode"][first].tolist(), demos["states"][first], strict=True))
    missing = [int(e) for e in episodes if int(e) not in by_episode]
    if missing:
        raise InvalidInputError(f"{DATA_FILE} has no step-0 row for episode(s) {missing}")
    starts = np.asarray([by_episode[int(e)] for e in episodes])
    return starts[:, 0].copy(), starts[:, 1].copy()

