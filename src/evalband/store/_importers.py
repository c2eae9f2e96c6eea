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

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import ImportFormatError, InvalidInputError, InvalidParameterError, StoreError
from evalband.store._manifest import RunManifest
from evalband.store._sqlite import RunStore

if TYPE_CHECKING:  # the panel module (pydantic, yaml) is imported when an import runs
    from evalband.panel import Panel

from evalband.store._import_read import (
    _CONVERTERS,
    _KINDS,
    _NOTHING,
    _READERS,
    _RECORD_FIELDS,
    _SUFFIXES,
    IMPORT_COLUMNS,
    IMPORT_FORMATS,
    LEROBOT_PAIRING,
    SLICE_PREFIX,
    _as_label,
    _Bad,
    _fail,
    _missing,
    _Raw,
    _Table,
    _Text,
)

__all__ = [
    "import_results",
    "infer_import_format",
    "IMPORT_FORMATS",
    "IMPORT_COLUMNS",
    "SLICE_PREFIX",
    "LEROBOT_PAIRING",
]


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


INFERRED_BUDGET_STEPS = 1
"""The placeholder step budget of an inferred panel (the external budget is unknown)."""


def _infer_panel(stem: str, path: Path, rows: Sequence[_Row], order: Sequence[str]) -> Panel:
    from evalband.panel import Budget, Panel

    factors: dict[str, list[str | int | float | bool] | dict[str, dict[str, Any]]] = {}
    for factor in order:
        levels: list[str | int | float | bool] = []
        labels = sorted({row.slices[factor] for row in rows}, key=_label_key)
        levels.extend(labels)
        factors[factor] = levels
    # The budget of an external evaluation is unknown: a fixed placeholder keeps the
    # fingerprint a function of the episode layout alone, so two imports of one layout
    # (two policies evaluated elsewhere) pair and compare.
    return Panel(
        name=stem,
        description=f"inferred by evalband import from {path.name}",
        env="imported",
        episodes=max(int(row.episode or 0) for row in rows) + 1,
        seed=0,
        budget=Budget(steps=INFERRED_BUDGET_STEPS),
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
    from evalband._ids import safe_name

    return safe_name(stem, "imported")  # a valid run id whatever the file is called


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
    as factors, the largest episode index + 1 as episodes, a placeholder budget of 1 step) and
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
    from evalband.store._manifest import new_manifest

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
