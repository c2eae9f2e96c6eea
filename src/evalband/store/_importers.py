"""Import results produced elsewhere as runs: the field's own outputs, told apart by content.

Readers: tabular files (CSV, JSONL, Parquet; :mod:`._import_read`, extra columns classified by
:mod:`._import_columns`), lerobot-eval's ``eval_info.json`` (:mod:`._import_lerobot`), and
openpi's LIBERO logs, SimplerEnv result trees, paired CSVs and ManiSkill ``RecordEpisode``
trajectories (:mod:`._import_sources`). Rows are checked in file order (:mod:`._import_check`).

Everything is validated before anything is written; the run manifest and all episodes are then
stored in one transaction (the videos a source names are first copied beside the store by
content). A bad file is rejected whole with an :class:`~evalband.errors.ImportFormatError`
naming the file, the row and the column of the first problem, and the store is left as it was.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.episode import EpisodeRecord
from evalband.errors import ImportFormatError, InvalidInputError, InvalidParameterError, StoreError
from evalband.store._import_columns import classify_columns
from evalband.store._import_lerobot import LEROBOT_PAIRING
from evalband.store._import_sources import SOURCE_READERS, detect_format
from evalband.store._manifest import RunManifest
from evalband.store._sqlite import RunStore

if TYPE_CHECKING:  # the panel module (pydantic, yaml) is imported when an import runs
    from evalband.panel import Panel

from evalband.store._import_check import _Checker, _label_key, _Row
from evalband.store._import_read import (
    _READERS,
    _RECORD_FIELDS,
    _SUFFIXES,
    IMPORT_COLUMNS,
    IMPORT_FORMATS,
    SLICE_PREFIX,
    _fail,
    _Raw,
    _Table,
    _Text,
)

__all__ = [
    "check_import_size",
    "import_results",
    "import_runs",
    "infer_import_format",
    "IMPORT_FORMATS",
    "IMPORT_COLUMNS",
    "SLICE_PREFIX",
    "LEROBOT_PAIRING",
]


INFERRED_BUDGET_STEPS = 1
"""The placeholder step budget of an inferred panel (the external budget is unknown)."""


def _infer_panel(stem: str, path: Path, rows: Sequence[_Row], order: Sequence[str]) -> Panel:
    levels = {factor: {row.slices[factor] for row in rows} for factor in order}
    episodes = max(int(row.episode or 0) for row in rows) + 1
    return infer_panel(stem, path, levels, episodes, max(row.repeat for row in rows) + 1)


def infer_panel(
    stem: str, path: Path, levels: dict[str, set[str]], episodes: int, repeats: int
) -> Panel:
    """The panel of an import without one: the observed levels (in factor order) and sizes.

    Raises:
        ImportFormatError: the layout plans more episodes than a panel may (cells x largest
            episode index x repeats), said in one line before any panel is built.
    """
    import math

    from evalband._util.limits import MAX_PLANNED_EPISODES
    from evalband.panel import Budget, Panel

    factors: dict[str, Any] = {
        factor: sorted(labels, key=_label_key) for factor, labels in levels.items()
    }
    planned = math.prod(len(labels) for labels in factors.values()) * episodes * repeats
    if planned > MAX_PLANNED_EPISODES:
        raise _fail(path, "file", "episode",
                    f"a layout of at most {MAX_PLANNED_EPISODES:,} episodes (cells x largest "
                    "episode index + 1 x repeats; number episodes from 0 in each cell)",
                    _Text(f"{planned:,}"))
    # The budget of an external evaluation is unknown: a fixed placeholder keeps the
    # fingerprint a function of the episode layout alone, so two imports of one layout
    # (two policies evaluated elsewhere) pair and compare.
    return Panel(
        name=stem,
        description=f"inferred by evalband import from {path.name}",
        env="imported",
        episodes=episodes,
        seed=0,
        budget=Budget(steps=INFERRED_BUDGET_STEPS),
        factors=factors,
        repeats=repeats,
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
    from evalband._util.ids import safe_name

    return safe_name(stem, "imported")  # a valid run id whatever the file is called


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


_HEADER_BYTES = 64 * 1024**2
"""Longest first line (a CSV header) read to count columns."""


def _parquet_decoded_bytes(path: Path, stop: int) -> int:
    """What a Parquet file's values take once decoded, counted without decoding them.

    Each row group is read with its text columns kept as dictionaries (as small as the file),
    and a dictionary column counts each row's value length: a file of a few hundred KB whose
    one long string repeats ten million times counts as the gigabytes it would become.
    Counting stops past ``stop``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    texts = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_binary(f.type)
             or pa.types.is_large_string(f.type) or pa.types.is_large_binary(f.type)]
    parquet = pq.ParquetFile(path, read_dictionary=texts)
    total = 0
    for group in range(parquet.num_row_groups):
        table = parquet.read_row_group(group)
        for column in table.columns:
            for chunk in column.chunks:
                if pa.types.is_dictionary(chunk.type):
                    lengths = pc.binary_length(chunk.dictionary)
                    total += int(pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0)
                    total += chunk.indices.nbytes
                else:
                    total += chunk.nbytes
            if total > stop:
                return total
    return total


def check_import_size(path: Path) -> None:
    """Refuse, before reading, what no import can finish: every documented limit, one line.

    A file must be a regular file (not a FIFO or a device such as ``/dev/zero``) of at most
    :data:`~evalband._util.limits.MAX_IMPORT_BYTES`; a text file at most
    :data:`~evalband._util.limits.MAX_IMPORT_ROWS` lines and a CSV header at most
    :data:`~evalband._util.limits.MAX_IMPORT_COLUMNS` columns; a Parquet file the same rows
    and columns, and an uncompressed size (its metadata, read first) within the bytes limit.
    A directory (a SimplerEnv tree) is checked file by file as it is read.

    Raises:
        ImportFormatError: the first limit passed, with the limit.
    """
    import stat

    from evalband._util.limits import MAX_IMPORT_BYTES, MAX_IMPORT_COLUMNS, MAX_IMPORT_ROWS

    try:
        info = path.stat()
    except OSError:
        return  # missing: said by the format check, with what was expected
    if stat.S_ISDIR(info.st_mode):
        return
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device or special file"
        raise _fail(path, "file", None, "a regular file", _Text(kind))

    def over(what: str, value: int, limit: int) -> ImportFormatError:
        return _fail(path, "file", None, f"at most {limit:,} {what} (evalband's import limit; "
                     "split the file)", _Text(f"{value:,} {what}"))

    if info.st_size > MAX_IMPORT_BYTES:
        raise over("bytes", info.st_size, MAX_IMPORT_BYTES)
    with path.open("rb") as fh:
        head = fh.read(4)
    if head == b"PAR1":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            meta = pq.ParquetFile(path).metadata
            for what, value, limit in (("rows", meta.num_rows, MAX_IMPORT_ROWS),
                                       ("columns", meta.num_columns, MAX_IMPORT_COLUMNS)):
                if value > limit:
                    raise over(what, value, limit)
            unpacked = _parquet_decoded_bytes(path, MAX_IMPORT_BYTES)
        except (pa.ArrowException, OSError, ValueError):
            return  # not readable: said by the reader
        if unpacked > MAX_IMPORT_BYTES:
            raise over("bytes uncompressed", unpacked, MAX_IMPORT_BYTES)
        return
    lines = 0
    with path.open("rb") as fh:
        first = fh.readline(_HEADER_BYTES + 1)
        if len(first) > _HEADER_BYTES and not first.endswith(b"\n"):
            raise _fail(path, "line 1", None, f"a first line of at most {_HEADER_BYTES:,} bytes",
                        _Text("a longer one"))
        if first.count(b",") + 1 > MAX_IMPORT_COLUMNS and path.suffix.lower() == ".csv":
            raise over("columns", first.count(b",") + 1, MAX_IMPORT_COLUMNS)
        lines = 1
        while chunk := fh.read(1 << 24):
            lines += chunk.count(b"\n")
            if lines > MAX_IMPORT_ROWS + 1:
                raise over("lines", lines, MAX_IMPORT_ROWS + 1)


def _resolve_format(path: Path, format: str | None) -> str:
    if format is not None:
        if format not in IMPORT_FORMATS:
            raise InvalidParameterError(
                f"import format must be one of {', '.join(IMPORT_FORMATS)}; got {format!r}"
            )
        return format
    if not path.exists():
        raise ImportFormatError(
            f"cannot import {path}: expected a results file or directory; got no such file",
            path=str(path),
            where="file",
        )
    detected = detect_format(path)
    if detected is None and path.is_dir():
        inside = path / "eval_info.json"  # lerobot-eval's (and export --format lerobot's) folder
        hint = (f"; it holds lerobot-eval's eval_info.json: import that file ({inside})"
                if inside.is_file() else "")
        raise ImportFormatError(
            f"cannot import {path}: expected an artifact bundle (manifest.json), a SimplerEnv "
            "result tree ({success,failure}_obj_...mp4) or paired CSVs (<arm>_success columns); "
            f"got a directory with none of them{hint}",
            path=str(path),
            where="directory",
        )
    return detected if detected is not None else infer_import_format(path)


def _read(path: Path, fmt: str, factors: Sequence[str], metrics: Sequence[str]) -> list[_Table]:
    if fmt in SOURCE_READERS:
        tables = SOURCE_READERS[fmt](path)
    else:
        if not path.is_file():
            raise ImportFormatError(
                f"cannot import {path}: expected a {fmt} file; got "
                f"{'a directory' if path.is_dir() else 'no such file'}",
                path=str(path),
                where="file",
            )
        tables = [_READERS[fmt](path)]
    for table in tables:
        if fmt in _TABULAR:
            _seed_column(table, factors, metrics)
            classify_columns(path, table, factors, metrics)
            _episodes_by_seed(table)
        elif factors or metrics:
            raise InvalidParameterError(
                f"`factors`/`metrics` apply to tabular files ({', '.join(_TABULAR)}); a {fmt} "
                "import names its slices and metrics itself", parameters=("factors", "metrics"),
            )
    return tables


_TABULAR = ("csv", "jsonl", "parquet", "paired-csv")

SEED_PAIRING = ("condition seed (no episode column: episodes numbered by their distinct "
                "condition seeds in increasing order within each cell, a seed seen again is "
                "a repeat of that condition)")
"""How a tabular import with condition seeds and no episode column pairs (the manifest's
``extra["pairing"]``, said by ``evalband import``)."""


def _seed_column(table: _Table, factors: Sequence[str], metrics: Sequence[str]) -> None:
    """A ``seed`` column (without ``condition_seed``) is the episode's condition seed.

    Not a metric: a seed is what fixed the episode's condition, so episodes pair by it.
    """
    if "seed" not in table.unknown or "condition_seed" in table.columns or \
            "seed" in (*factors, *metrics):
        return
    table.unknown = [name for name in table.unknown if name != "seed"]
    table.columns = ["condition_seed" if c == "seed" else c for c in table.columns]
    for row in table.rows:
        if "seed" in row.values:
            row.values["condition_seed"] = row.values.pop("seed")
            row.labels["condition_seed"] = "seed"
    table.notes.append("column seed read as the condition seed")


def _episodes_by_seed(table: _Table) -> None:
    """Number episodes by condition seed when the file has seeds and no episode column.

    Row order says nothing about which episodes of two files played the same condition; the
    seed does. Within each cell (its ``cell`` and ``slice.*`` values) episode ``i`` is the
    ``i``-th smallest distinct seed, and a row whose seed came before is the next repeat of
    that condition, so two files with the same seeds pair seed by seed.
    """
    if "condition_seed" not in table.columns or "episode" in table.columns or \
            "repeat" in table.columns:
        return
    from evalband.store._import_read import _as_count

    groups: dict[tuple[Any, ...], list[_Raw]] = {}
    for row in table.rows:
        try:
            _as_count(row.values.get("condition_seed"))
        except Exception:  # noqa: BLE001 - a missing or bad seed: left to the row checks
            return
        cell = tuple(sorted((k, str(v)) for k, v in row.values.items()
                            if k == "cell" or k.startswith(SLICE_PREFIX)))
        groups.setdefault(cell, []).append(row)
    for rows in groups.values():
        seeds = [_as_count(row.values["condition_seed"]) for row in rows]
        rank = {seed: i for i, seed in enumerate(sorted(set(seeds)))}
        seen: dict[int, int] = {}
        for row, seed in zip(rows, seeds, strict=True):
            row.values["episode"], row.values["repeat"] = rank[seed], seen.get(seed, 0)
            seen[seed] = row.values["repeat"] + 1
            row.labels.update(episode="condition_seed", repeat="condition_seed")
    table.columns = [*table.columns, "episode", "repeat"]
    table.external_seeds = True
    table.manifest_extra["pairing"] = SEED_PAIRING


def _refuse_existing(store: RunStore, run_id: str, path: Path) -> None:
    if store.get_run(run_id) is not None:
        raise StoreError(
            f"run {run_id!r} already exists in {store.path}; give another `run_id` to import "
            f"{path} as a new run", parameters=("run_id",),
        )


def import_runs(
    store: RunStore,
    path: str | Path,
    *,
    format: str | None = None,
    run_id: str | None = None,
    policy: str | None = None,
    panel: Panel | None = None,
    factors: Sequence[str] = (),
    metrics: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    r"""Import every run a results file holds (one, or one per arm of a paired CSV).

    The same as :func:`import_results`, for files that hold several policies side by side
    (``paired-csv``): each arm becomes the run ``<run id>-<arm>`` with policy ``<arm>``, and
    its episodes pair row by row with the other arms'. Every run is validated before any is
    written.

    ``progress`` (optional) is called as ``progress(episodes stored, episodes in all)`` while
    the episodes are written (a progress bar).

    Returns:
        The run ids, in the file's arm order.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from evalband.store import open_store
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "paired.csv"
    ...     _ = p.write_text("episode,a_success,b_success\n0,1,0\n1,1,1\n")
    ...     with open_store(Path(d) / "s.sqlite") as store:
    ...         print(import_runs(store, p))
    ['paired-a', 'paired-b']
    """
    path = Path(path)
    check_import_size(path)  # before anything reads it: a FIFO, /dev/zero, a bomb
    fmt = _resolve_format(path, format)
    stem = _stem(path, fmt)
    base_id = stem if run_id is None else run_id
    if fmt in ("csv", "jsonl", "parquet") and panel is None and not factors and not metrics:
        from evalband.store._import_fast import plan_columns

        fast = plan_columns(path, fmt, base_id, policy, stem)  # None: read row by row
        if fast is not None:
            _refuse_existing(store, base_id, path)
            manifest, columns, constants = fast
            total = len(next(iter(columns.values()))) if columns else manifest.n_planned
            store._create_run_with_columns(  # one transaction: all or nothing
                manifest, columns, constants,
                None if progress is None else lambda done: progress(done, total),
            )
            return [base_id]
    tables = _read(path, fmt, factors, metrics)
    plans: list[tuple[RunManifest, list[EpisodeRecord], list[_Row]]] = []
    for table in tables:
        rid = base_id if table.arm is None else f"{base_id}-{table.arm}"
        _refuse_existing(store, rid, path)
        arm_policy = policy if table.arm is None else (policy or table.arm)
        plans.append(_plan(store, path, fmt, table, rid, arm_policy, panel, stem))
    ids: list[str] = []
    total = sum(len(records) for _, records, _ in plans)
    for _, _, rows in plans:  # every named clip inside the imported directory, before a copy
        for row in rows:
            for given in row.media:
                _find_media(path, given)
    for manifest, records, rows in plans:
        notes = _attach_media(store, path, records, rows)
        if notes:  # clips refused: said by the import, kept in the manifest
            manifest = manifest.replace(extra={**manifest.extra, "media_notes": notes})
        store._create_run_with_episodes(manifest, records)  # one transaction: all or nothing
        ids.append(manifest.run_id)
        if progress is not None:
            progress(sum(len(p[1]) for p in plans[:len(ids)]), total)
    return ids


def import_results(
    store: RunStore,
    path: str | Path,
    *,
    format: str | None = None,
    run_id: str | None = None,
    policy: str | None = None,
    panel: Panel | None = None,
    factors: Sequence[str] = (),
    metrics: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> str:
    r"""Import episodes produced elsewhere into ``store`` as a new run.

    Reads, by content (``format`` forces one, see ``docs/imports.md``): a CSV, JSONL or
    Parquet file of one row per episode (``success`` 0/1 alone is enough; other columns become
    slice factors when categorical, metrics when numeric, the outcome reason when a failure
    mode, and ``factors``/``metrics`` say so explicitly), lerobot-eval's ``eval_info.json``,
    openpi's LIBERO log, a SimplerEnv result tree, a ManiSkill ``RecordEpisode`` ``.json``.
    The whole file is validated first; then the run manifest (``status="imported"``,
    ``source="import"``, ``backend="import"``) and every episode are written in one
    transaction. A bad file raises :class:`~evalband.errors.ImportFormatError` naming the row
    and column of the first problem, and the store is left unchanged. Video files the source
    names are copied beside the store by content and referenced from each record's
    ``extra["media"]``.

    Without ``panel`` a panel is inferred (env ``"imported"``, seed 0, the observed slice values
    as factors, the largest episode index + 1 as episodes, a placeholder budget of 1 step) and
    the manifest says so (``extra["panel_inferred"] = True``). Condition seeds missing from the
    file are :func:`~evalband.panel.default_condition_seed` ``(0, cell, episode)``, marked
    ``extra["condition_seed_inferred"] = True`` on each record. With ``panel``, every row must
    fall inside it, the run records its fingerprint, and condition seeds are the panel's, so the
    run compares and pairs with evalband runs of that panel.

    Args:
        store: an open run store.
        path: the file (or, for a SimplerEnv tree or paired CSVs, the directory).
        format: one of ``IMPORT_FORMATS``; detected from the content when ``None``.
        run_id: the new run's id; the file stem when ``None`` (for ``eval_info.json``, its
            directory's name). It must not exist yet.
        policy: the policy name; when ``None``, the ``policy`` column (which must then be the
            same on every row), else the file stem as above.
        panel: the panel the episodes were played on; inferred when ``None``.
        factors: columns of a tabular file to read as slice factors.
        metrics: columns of a tabular file to read as per-episode metrics.
        progress: called as ``progress(episodes stored, episodes in all)`` while the
            episodes are written.

    Returns:
        The run id.

    Raises:
        ImportFormatError: the file is missing or malformed (nothing is imported), or holds
            several policies (use :func:`import_runs`).
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
    fmt = _resolve_format(path, format)
    if fmt == "paired-csv":
        raise ImportFormatError(
            f"cannot import {path}: expected one policy's results; got a paired file (several "
            "policies side by side): import it with import_runs (the CLI does)",
            path=str(path),
            where="file",
        )
    ids = import_runs(store, path, format=fmt, run_id=run_id, policy=policy, panel=panel,
                      factors=factors, metrics=metrics, progress=progress)
    return ids[0]


def _plan(
    store: RunStore,
    path: Path,
    fmt: str,
    table: _Table,
    run_id: str,
    policy: str | None,
    panel: Panel | None,
    stem: str,
) -> tuple[RunManifest, list[EpisodeRecord], list[_Row]]:
    """Validate one table and build its manifest and records (nothing written)."""
    del store
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
            if seed is not None and seed != checker.seeds[row.key]:
                extra["source_seed"] = seed
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
    order_ = sorted(range(len(records)), key=lambda i: records[i].key)
    records = [records[i] for i in order_]
    rows = [rows[i] for i in order_]

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
    return manifest, records, rows


def _find_media(path: Path, given: str) -> Path | None:
    """A media file named by a source, inside the imported directory; ``None`` if not there.

    Looked for as given (from the current directory), relative to the source's directory and
    its parent, and by its trailing path components under the source's directory (a path
    written where the evaluation ran). Whatever is found must resolve (symbolic links
    followed) inside the source's directory: an import never copies a file from elsewhere.

    Raises:
        ImportFormatError: the path names a file outside the imported directory.
    """
    import os

    candidate = Path(given)
    base = path if path.is_dir() else path.parent
    root = Path(os.path.realpath(base))
    options = [candidate, base / candidate, base.parent / candidate]
    parts = candidate.parts
    options += [base / Path(*parts[i:]) for i in range(1, len(parts))]
    outside = None
    for option in options:
        if not (option.exists() or option.is_symlink()):
            continue
        real = Path(os.path.realpath(option))
        if real == root or root not in real.parents:
            outside = outside or real
            continue
        return option
    if outside is not None:
        raise ImportFormatError(
            f"{path}: media {given!r} resolves to {outside}, outside the imported directory "
            f"{root}; an import copies only videos inside it (move them there)")
    return None


def _attach_media(
    store: RunStore, path: Path, records: list[EpisodeRecord], rows: list[_Row]
) -> list[str]:
    """Copy the videos the rows name beside the store and reference them from the records.

    Every named file is found first (:func:`_find_media`: inside the imported directory, or
    the whole import is refused) and probed (:func:`~evalband.store._media.refuse_reason`);
    a refused clip is referenced as refused, never copied. Returns a note per refused clip.
    """
    from evalband.store._media import refuse_reason, store_media_file

    found = [[_find_media(path, given) for given in row.media] for row in rows]
    notes: list[str] = []
    for record, row, files in zip(records, rows, found, strict=True):
        refs: list[dict[str, Any]] = []
        for given, file in zip(row.media, files, strict=True):
            if file is None:
                refs.append({"path": given, "kind": "video", "missing": True})
                continue
            reason = refuse_reason(file)
            if reason is not None:
                refs.append({"path": given, "kind": "video", "refused": reason})
                notes.append(f"clip {given} of episode {record.key} not imported: {reason}")
            else:
                refs.append({**store_media_file(store.path, file), "path": given})
        if refs:
            record.extra["media"] = refs
    return notes


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
            "sha256": _sha256(path) if path.is_file() else None,
            "episodes": n_rows,
        },
        **table.manifest_extra,
    }
    if table.notes:
        extra["import_notes"] = list(table.notes)
    if inferred:
        extra["panel_inferred"] = True
    if column_policy is not None and column_policy != policy:
        extra["policy_in_file"] = column_policy
    return base.replace(
        status="imported",
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        extra=extra,
    )
