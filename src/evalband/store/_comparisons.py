"""Recorded comparisons: the recipe (run ids baseline first, options) and its stored result.

``evalband compare`` stores what it computed: the JSON list of its ``--json`` documents (one per
candidate, schema ``evalband-comparison/2``) with each run's episode count and total attempts
at that time. A stored result is *current* while every run still has that many episodes and
attempts (a run that gained episodes, or replayed its error episodes, makes it stale); reports
and the viewer render a current result instead of computing it again.

The store speaks JSON only; :mod:`evalband.analysis._stored` turns a stored result back into
typed comparisons.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalband.errors import InvalidInputError, StoreError
from evalband.store._schema import read_compatible

if TYPE_CHECKING:
    from evalband.store._sqlite import RunStore

__all__ = [
    "StoredComparison",
    "record_comparison",
    "list_comparisons",
    "get_comparison",
    "stored_result",
    "find_result",
    "episode_totals",
    "recipe_options",
]

_RECIPE = ("comparison_id", "run_ids", "options", "created_at")  # version 1
_RESULT = ("result", "episode_counts", "attempt_totals", "computed_at")


@dataclass(frozen=True)
class StoredComparison:
    """A recorded comparison with its stored result.

    Attributes:
        comparison_id: ``cmp-`` and 12 hex digits.
        run_ids: baseline first.
        options: the recorded options (``episode_counts`` included where ``compare`` put it).
        created_at: when it was first recorded (UTC, ISO 8601).
        result: the comparisons as JSON dicts (comparison ``--json`` document, one per candidate),
            or ``None`` when only the recipe is stored (recorded by a version-1 store).
        episode_counts: episodes per run when the result was computed.
        computed_at: when the result was stored.
        current: whether every run still has those episodes (the result is up to date).
        has_result: whether a result is stored (``result`` may be left unread).
    """

    comparison_id: str
    run_ids: list[str]
    options: dict[str, Any]
    created_at: str
    result: list[dict[str, Any]] | None
    episode_counts: dict[str, int] | None
    computed_at: str | None
    current: bool
    has_result: bool = False


def recipe_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options that define what is computed (``episode_counts`` is a record of when).

    >>> recipe_options({"confidence": 0.9, "episode_counts": {"a": 3}})
    {'confidence': 0.9}
    """
    return {k: v for k, v in (options or {}).items() if k != "episode_counts"}


def episode_totals(store: RunStore, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Per run: (episodes stored, total attempts) — what makes a stored result current.

    A resume that replays error episodes keeps the count but raises the attempts.
    """
    out = {r: (0, 0) for r in run_ids}
    if not run_ids:
        return out
    marks = ", ".join("?" for _ in run_ids)
    with store._lock:
        rows = store.conn.execute(
            f"SELECT run_id, COUNT(*), TOTAL(attempts) FROM episodes WHERE run_id IN ({marks}) "
            "GROUP BY run_id", tuple(run_ids)).fetchall()
    for run_id, n, attempts in rows:
        out[str(run_id)] = (int(n), int(attempts))
    return out


def _check_recipe(run_ids: Sequence[str], options: Any) -> tuple[list[str], str]:
    if isinstance(run_ids, str):
        raise InvalidInputError(
            f"run_ids must be a list of run ids, baseline first; got the string {run_ids!r}"
        )
    ids = list(run_ids)
    if len(ids) < 2 or not all(isinstance(r, str) and r for r in ids):
        raise InvalidInputError(
            f"a comparison needs two or more run ids (non-empty strings); got {ids!r}"
        )
    if options is not None and not isinstance(options, dict):
        raise StoreError(f"comparison options must be a dict; got {type(options).__name__}")
    try:
        opts_text = json.dumps(options or {}, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(
            f"comparison options must be JSON-serialisable to be stored: {exc}"
        ) from None
    return ids, opts_text


def record_comparison(
    store: RunStore,
    run_ids: Sequence[str],
    options: dict[str, Any] | None = None,
    *,
    result: Sequence[Mapping[str, Any]] | None = None,
    episode_counts: Mapping[str, int] | None = None,
) -> str:
    """Record a comparison (see :meth:`RunStore.record_comparison`); returns its id."""
    ids, opts_text = _check_recipe(run_ids, options)
    ids_text = json.dumps(ids)
    digest = hashlib.sha256(f"{ids_text}\n{opts_text}".encode()).hexdigest()
    comparison_id = f"cmp-{digest[:12]}"
    if store.read_only:
        raise StoreError(f"the run store {store.path} is open read-only; cannot record")
    result_text = None
    if result is not None:
        try:
            result_text = json.dumps([dict(r) for r in result], allow_nan=True)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"a comparison result must be JSON-serialisable: {exc}") from None
    now = datetime.now(UTC).isoformat("T", "seconds")
    with store.transaction() as conn:
        for rid in ids:
            store.require_run(rid)
        conn.execute(
            'INSERT OR IGNORE INTO comparisons ("comparison_id", "run_ids", "options", '
            '"created_at") VALUES (?, ?, ?, ?)', (comparison_id, ids_text, opts_text, now))
        if result_text is not None:
            totals = episode_totals(store, ids)
            counts = ({r: int(episode_counts[r]) for r in ids} if episode_counts is not None
                      else {r: totals[r][0] for r in ids})
            # attempts are read now: trusted only when the counts still match what was computed
            attempts = ({r: totals[r][1] for r in ids}
                        if all(totals[r][0] == counts[r] for r in ids) else None)
            conn.execute(
                'UPDATE comparisons SET "result" = ?, "episode_counts" = ?, "attempt_totals" = ?, '
                '"computed_at" = ? WHERE "comparison_id" = ?',
                (result_text, json.dumps(counts),
                 None if attempts is None else json.dumps(attempts), now, comparison_id))
    return comparison_id


def _select(columns: set[str], full: bool) -> tuple[str, list[str]]:
    names = [*_RECIPE, *(c for c in _RESULT if c in columns)]
    exprs = [f'"{c}"' if c != "result" or full else '"result" IS NOT NULL' for c in names]
    return "SELECT " + ", ".join(exprs) + " FROM comparisons", names


def _rows(
    store: RunStore, where: str, args: tuple[Any, ...], *, full: bool = True
) -> list[StoredComparison]:
    """Recorded comparisons (newest first); a version-1 file read as is has no results.

    Without ``full`` the results are not read (``result`` is ``None``, ``has_result`` says
    whether one is stored): listing many comparisons parses no result.
    """
    with store._lock:
        columns = read_compatible(store.conn)
        if not columns:
            return []
        select, names = _select(columns, full)
        rows = store.conn.execute(
            f"{select} {where} ORDER BY created_at DESC, rowid DESC", args).fetchall()
        totals: dict[str, tuple[int, int]] = {}
        out = []
        for row in rows:
            data = dict(zip(names, row, strict=True))
            run_ids = [str(r) for r in json.loads(data["run_ids"])]
            has_result = bool(data.get("result"))
            result = json.loads(data["result"]) if full and has_result else None
            counts = (None if data.get("episode_counts") is None
                      else {str(k): int(v) for k, v in json.loads(data["episode_counts"]).items()})
            attempts = (None if data.get("attempt_totals") is None
                        else json.loads(data["attempt_totals"]))
            current = False
            if has_result and counts is not None and attempts is not None:
                missing = [r for r in run_ids if r not in totals]
                totals.update(episode_totals(store, missing))
                current = all(totals[r] == (counts.get(r), attempts.get(r)) for r in run_ids)
            out.append(StoredComparison(
                comparison_id=str(data["comparison_id"]), run_ids=run_ids,
                options=dict(json.loads(data["options"])), created_at=str(data["created_at"]),
                result=result, episode_counts=counts, computed_at=data.get("computed_at"),
                current=current, has_result=has_result))
    return out


def _recipe(c: StoredComparison) -> dict[str, Any]:
    return {"comparison_id": c.comparison_id, "run_ids": c.run_ids, "options": c.options,
            "created_at": c.created_at, "has_result": c.has_result,
            "current": c.current}


def list_comparisons(store: RunStore) -> list[dict[str, Any]]:
    """Every recorded comparison, newest first.

    Each is its recipe (id, run ids, options, ``created_at``), whether a result is stored
    (``has_result``) and whether that result is up to date (``current``).
    """
    return [_recipe(c) for c in _rows(store, "", (), full=False)]


def get_comparison(store: RunStore, comparison_id: str) -> dict[str, Any] | None:
    """One recorded comparison (as in :func:`list_comparisons`), or ``None``."""
    found = _rows(store, "WHERE comparison_id = ?", (comparison_id,), full=False)
    return _recipe(found[0]) if found else None


def stored_result(store: RunStore, comparison_id: str) -> StoredComparison | None:
    """The recorded comparison with its stored result (``result`` ``None`` when none)."""
    found = _rows(store, "WHERE comparison_id = ?", (comparison_id,))
    return found[0] if found else None


def find_result(
    store: RunStore, run_ids: Sequence[str], options: Mapping[str, Any] | None = None
) -> StoredComparison | None:
    """The newest *current* stored result of these runs (in order) under these options.

    ``options`` are compared without ``episode_counts`` (see :func:`recipe_options`).
    """
    want = recipe_options(options)
    for c in _rows(store, "WHERE run_ids = ?", (json.dumps(list(run_ids)),), full=False):
        if c.current and recipe_options(c.options) == want:
            return stored_result(store, c.comparison_id)  # only its result is read
    return None

