"""Artifact bundles: a run frozen into a directory that can be committed, shared and re-imported.

A bundle is a directory holding

* ``panel.yaml`` -- the panel specification, verbatim;
* ``episodes.parquet`` -- one row per episode with every :class:`~evalband.episode.EpisodeRecord`
  field (``slices`` and ``extra`` as JSON strings, so the round trip is exact);
* ``manifest.json`` -- the run manifest (without ``panel_yaml``, which is the file above),
  ``"format": "evalband-bundle/1"``, the episode count, the outcome counts, and the sha256 and
  size of every other file.

The manifest is written last, into a temporary sibling directory that is renamed into place
only when complete, so a crash never leaves a half bundle that looks valid. Loading checks
that the bundle is consistent: every hash matches, the panel fingerprint recomputed from
``panel.yaml`` is the manifest's and the episodes', and no file is a link or lies outside the
bundle. Consistent is not authentic: hashes kept next to the files prove the bundle is intact
as a whole, not who made it (anyone can edit a file and recompute its hash); compare a bundle
with the one you committed (or its manifest's sha256) to know it is that one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalband.episode import EPISODE_FIELDS, EpisodeRecord, Outcome
from evalband.errors import BundleError, InvalidInputError, StoreError
from evalband.store._manifest import RunManifest
from evalband.store._sqlite import RunStore

__all__ = ["BUNDLE_FORMAT", "export_bundle", "load_bundle", "import_bundle"]

BUNDLE_FORMAT = "evalband-bundle/1"
"""The ``format`` value of a bundle's ``manifest.json``."""

_MANIFEST = "manifest.json"
_PANEL = "panel.yaml"
_EPISODES = "episodes.parquet"
_BUNDLE_KEYS = ("format", "files", "episodes", "outcome_counts")
_IMPORT_KEY = "imported_from"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    """Flush a directory entry (best effort: some platforms cannot open directories)."""
    try:
        _fsync(path)
    except OSError:
        pass


def _counts(records: Sequence[EpisodeRecord]) -> dict[str, int]:
    counts = {o.value: 0 for o in Outcome}
    for r in records:
        counts[r.outcome.value] += 1
    return counts


def _episodes_table(records: Sequence[EpisodeRecord]) -> Any:
    import pyarrow as pa

    seeds = [int(r.condition_seed) for r in records]
    seeds_fit = all(_INT64_MIN <= s <= _INT64_MAX for s in seeds)
    types: dict[str, Any] = {
        "run_id": pa.string(),
        "policy": pa.string(),
        "panel_fingerprint": pa.string(),
        "cell": pa.string(),
        "episode": pa.int64(),
        "repeat": pa.int64(),
        "condition_seed": pa.int64() if seeds_fit else pa.string(),
        "outcome": pa.string(),
        "terminated": pa.bool_(),
        "truncated": pa.bool_(),
        "steps": pa.int64(),
        "sim_time_s": pa.float64(),
        "time_to_success_s": pa.float64(),
        "slices": pa.string(),
        "score": pa.int64(),
        "assisted": pa.bool_(),
        "interventions": pa.int64(),
        "latency_ms_p50": pa.float64(),
        "latency_ms_p95": pa.float64(),
        "latency_ms_max": pa.float64(),
        "env_ms": pa.float64(),
        "wall_s": pa.float64(),
        "started_at": pa.string(),
        "error": pa.string(),
        "attempts": pa.int64(),
        "extra": pa.string(),
    }
    missing = [n for n in EPISODE_FIELDS if n not in types]
    if missing:  # pragma: no cover - guards against a new EpisodeRecord field
        raise BundleError(f"no parquet type for episode field(s) {', '.join(missing)}")
    columns: dict[str, list[Any]] = {}
    for name in EPISODE_FIELDS:
        values: list[Any] = [getattr(r, name) for r in records]
        if name == "outcome":
            values = [Outcome(v).value for v in values]
        elif name in ("slices", "extra"):
            values = [json.dumps(v, allow_nan=True) for v in values]
        elif name == "condition_seed":
            values = seeds if seeds_fit else [str(s) for s in seeds]
        elif name == "score":
            values = [None if v is None else int(v) for v in values]
        elif types[name] == pa.float64():
            values = [None if v is None else float(v) for v in values]
        columns[name] = values
    schema = pa.schema(
        [pa.field(n, types[n]) for n in EPISODE_FIELDS],
        metadata={"evalband.format": BUNDLE_FORMAT},
    )
    return pa.table(columns, schema=schema)


def _check_target(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise BundleError(f"bundle target {out} is a file; pass a directory path")
    if not out.is_dir() or not any(out.iterdir()):
        return
    if not overwrite:
        raise BundleError(
            f"bundle directory {out} is not empty; pass an empty or new directory, "
            "or `overwrite=True` to replace an existing bundle",
            parameters=("overwrite",),
        )
    if not (out / _MANIFEST).is_file():
        raise BundleError(
            f"refusing to overwrite {out}: it is not empty and holds no {_MANIFEST}, so it is "
            "not an evalband bundle; pass a new directory"
        )


def export_bundle(
    store: RunStore, run_id: str, out_dir: str | Path, *, overwrite: bool = False
) -> Path:
    """Write a run as an artifact bundle directory.

    Args:
        store: the store holding the run.
        run_id: the run to export.
        out_dir: the bundle directory (created; must be new or empty unless ``overwrite``).
        overwrite: replace an existing bundle at ``out_dir``. Only a directory that already
            holds a ``manifest.json`` is replaced; anything else is refused.

    Returns:
        The bundle directory.

    Raises:
        RunNotFoundError: when the run is not in the store.
        BundleError: when ``out_dir`` is a file or a non-empty directory (see ``overwrite``).

    >>> import tempfile
    >>> from pathlib import Path
    >>> from evalband.store._manifest import _example
    >>> with tempfile.TemporaryDirectory() as d, RunStore(Path(d) / "s.sqlite") as store:
    ...     store.create_run(_example())
    ...     out = export_bundle(store, "r1", Path(d) / "bundle")
    ...     sorted(p.name for p in out.iterdir())
    ['episodes.parquet', 'manifest.json', 'panel.yaml']
    """
    import pyarrow.parquet as pq

    out = Path(out_dir)
    manifest = store.require_run(run_id)
    records = store.episode_records(run_id)
    _check_target(out, overwrite)
    parent = out.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=parent))
    except OSError as exc:
        raise BundleError(f"cannot create the bundle directory {out}: {exc}") from None
    try:
        (tmp / _PANEL).write_bytes(manifest.panel_yaml.encode("utf-8"))
        pq.write_table(_episodes_table(records), tmp / _EPISODES)
        files: dict[str, dict[str, Any]] = {}
        for name in (_PANEL, _EPISODES, *_copy_media(store, records, tmp)):
            _fsync(tmp / name)
            files[name] = {"sha256": _sha256(tmp / name), "bytes": (tmp / name).stat().st_size}
        doc: dict[str, Any] = {"format": BUNDLE_FORMAT}
        doc.update({k: v for k, v in manifest.as_dict().items() if k != "panel_yaml"})
        doc["episodes"] = len(records)
        doc["outcome_counts"] = _counts(records)
        doc["files"] = files
        (tmp / _MANIFEST).write_text(
            json.dumps(doc, indent=2, allow_nan=True) + "\n", encoding="utf-8"
        )
        _fsync(tmp / _MANIFEST)
        _fsync_dir(tmp)
        if out.exists():
            old = tmp.with_name(tmp.name.replace(".partial-", ".old-"))
            os.rename(out, old)
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old, out)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
        _fsync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


_MEDIA = "media"


def _copy_media(store: RunStore, records: Sequence[EpisodeRecord], tmp: Path) -> list[str]:
    """Copy the run's clips and step data into ``<bundle>/media/``; their names there."""
    from evalband.store._media import media_file
    from evalband.store._steps import steps_ref

    names: list[str] = []
    for record in records:
        step_data = steps_ref(record)
        for ref in [*record.media, *([step_data] if step_data else [])]:
            source = media_file(store.path, ref)
            if source is None:
                continue
            name = f"{_MEDIA}/{source.name}"
            if name not in names:
                (tmp / _MEDIA).mkdir(exist_ok=True)
                shutil.copyfile(source, tmp / name)
                names.append(name)
    return names


def _safe_name(name: Any, manifest_path: Path) -> str:
    # a top-level file, or a clip in media/ (no other folders, no way out of the bundle)
    base = name[len(_MEDIA) + 1 :] if isinstance(name, str) and name.startswith(
        f"{_MEDIA}/") else name
    if (
        not isinstance(name, str)
        or not isinstance(base, str)
        or not base
        or base != Path(base).name
        or base in (".", "..", _MANIFEST)
    ):
        raise BundleError(f"{manifest_path} lists an invalid file name {name!r}")
    return name


def _verify_files(root: Path, doc: dict[str, Any], manifest_path: Path) -> None:
    files = doc.get("files")
    if not isinstance(files, dict):
        raise BundleError(f"{manifest_path} has no 'files' table of hashes")
    for required in (_PANEL, _EPISODES):
        if required not in files:
            raise BundleError(f"{manifest_path} does not list {required}; the bundle is incomplete")
    names = [_safe_name(raw_name, manifest_path) for raw_name in files]
    inside = root.resolve()
    for name, info in zip(names, files.values(), strict=True):
        file = root / name
        if file.is_symlink() or not file.resolve().is_relative_to(inside):
            raise BundleError(
                f"bundle file {file} is a symbolic link or leaves the bundle; a bundle holds "
                "its files itself (copy them in, or export the run again)"
            )
        if not file.is_file():
            raise BundleError(f"bundle {root} is missing {name} (listed in {_MANIFEST})")
        expected = info.get("sha256") if isinstance(info, dict) else None
        if not isinstance(expected, str):
            raise BundleError(f"{manifest_path} gives no sha256 for {name}")
        actual = _sha256(file)
        if actual != expected.lower():
            raise BundleError(
                f"bundle file {file} does not match its manifest: expected sha256 {expected}, "
                f"got {actual}; the file was modified or damaged"
            )


def _read_episodes(path: Path) -> list[EpisodeRecord]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalband.errors import ImportFormatError
    from evalband.store._importers import check_import_size

    try:
        check_import_size(path)  # rows, columns, uncompressed bytes: before decoding any
        table = pq.read_table(path)
    except ImportFormatError as exc:
        raise BundleError(str(exc).replace(" (nothing was imported)", "")) from None
    except (OSError, pa.ArrowException) as exc:
        raise BundleError(f"cannot read {path}: {exc}") from None
    names = set(table.column_names)
    if names != set(EPISODE_FIELDS):
        missing = sorted(set(EPISODE_FIELDS) - names)
        unknown = sorted(names - set(EPISODE_FIELDS))
        raise BundleError(
            f"{path} has the wrong columns (missing: {', '.join(missing) or 'none'}; "
            f"unknown: {', '.join(unknown) or 'none'})"
        )
    records: list[EpisodeRecord] = []
    for index, row in enumerate(table.to_pylist()):
        try:  # every field, as the store keeps it: a bad bundle is refused whole
            for name in ("slices", "extra"):
                if not isinstance(row[name], str):
                    raise InvalidInputError(f"{name} must be JSON text; got {row[name]!r}")
                row[name] = json.loads(row[name])
            seed = row["condition_seed"]
            if isinstance(seed, str) and seed.isdigit():
                row["condition_seed"] = int(seed)
            records.append(EpisodeRecord(**row).check_fields())
        except (InvalidInputError, ValueError, TypeError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise BundleError(f"{path} holds an invalid episode (row {index + 1}): "
                              f"{first}") from None
    return records


def load_bundle(path: str | Path) -> tuple[RunManifest, list[EpisodeRecord]]:
    """Read and verify an artifact bundle.

    Every file listed in ``manifest.json`` must exist and match its sha256; the episode
    count, outcome counts and run id of the episodes must match the manifest.

    Args:
        path: the bundle directory.

    Returns:
        The run manifest (as exported: its original status and source) and the episodes,
        ordered by ``(cell, episode, repeat)``.

    Raises:
        BundleError: naming the file at fault (missing, or expected vs actual hash).

    >>> import tempfile
    >>> from pathlib import Path
    >>> from evalband.store._manifest import _example
    >>> with tempfile.TemporaryDirectory() as d, RunStore(Path(d) / "s.sqlite") as store:
    ...     store.create_run(_example())
    ...     manifest, records = load_bundle(export_bundle(store, "r1", Path(d) / "b"))
    ...     manifest == store.require_run("r1"), records
    (True, [])
    """
    root = Path(path)
    manifest_path = root / _MANIFEST
    if not root.is_dir():
        raise BundleError(
            f"{root} is not a bundle directory (expected a directory with {_MANIFEST})"
        )
    if not manifest_path.is_file():
        raise BundleError(f"bundle {root} has no {_MANIFEST}; it is incomplete or not a bundle")
    try:
        doc = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{manifest_path} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BundleError(f"{manifest_path} must hold a JSON object")
    if manifest_path.is_symlink():
        raise BundleError(
            f"{manifest_path} is a symbolic link; a bundle holds its files itself"
        )
    if doc.get("format") != BUNDLE_FORMAT:
        raise BundleError(
            f"{manifest_path} has format {doc.get('format')!r}; this evalband reads "
            f"{BUNDLE_FORMAT!r}"
        )
    _verify_files(root, doc, manifest_path)
    try:
        panel_yaml = (root / _PANEL).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{root / _PANEL} is not UTF-8 text: {exc}") from None
    fields = {k: v for k, v in doc.items() if k not in _BUNDLE_KEYS}
    if "panel_yaml" in fields and fields["panel_yaml"] != panel_yaml:
        raise BundleError(f"{manifest_path} and {_PANEL} give different panels")
    fields["panel_yaml"] = panel_yaml
    try:
        manifest = RunManifest.from_dict(fields)
    except (StoreError, InvalidInputError, TypeError) as exc:
        raise BundleError(f"{manifest_path}: {exc}") from None
    _check_fingerprint(root, manifest)
    records = _read_episodes(root / _EPISODES)
    if doc.get("episodes") != len(records):
        raise BundleError(
            f"{manifest_path} says {doc.get('episodes')!r} episodes; {_EPISODES} holds "
            f"{len(records)}"
        )
    if doc.get("outcome_counts") != _counts(records):
        raise BundleError(
            f"{manifest_path} outcome counts {doc.get('outcome_counts')!r} do not match "
            f"{_EPISODES} ({_counts(records)})"
        )
    other_panels = sorted({r.panel_fingerprint for r in records} - {manifest.panel_fingerprint})
    if other_panels:
        raise BundleError(
            f"{root / _EPISODES} holds episodes of panel fingerprint(s) "
            f"{', '.join(f[:12] for f in other_panels)}; the manifest says "
            f"{manifest.panel_fingerprint[:12]}"
        )
    strangers = sorted({r.run_id for r in records} - {manifest.run_id})
    if strangers:
        raise BundleError(
            f"{root / _EPISODES} holds episodes of other run(s) {', '.join(strangers)}; "
            f"expected only {manifest.run_id!r}"
        )
    records.sort(key=lambda r: r.key)
    return manifest, records


def _check_fingerprint(root: Path, manifest: RunManifest) -> None:
    """The manifest's panel fingerprint must be the one ``panel.yaml`` gives, recomputed."""
    from evalband.errors import PanelError
    from evalband.panel import panel_from_yaml

    try:
        actual = panel_from_yaml(manifest.panel_yaml).fingerprint
    except (PanelError, InvalidInputError) as exc:
        raise BundleError(f"{root / _PANEL} is not a valid panel: {exc}") from None
    if actual != manifest.panel_fingerprint:
        raise BundleError(
            f"{root / _PANEL} gives panel fingerprint {actual[:12]}, but the bundle's manifest "
            f"and episodes say {manifest.panel_fingerprint[:12]}: panel.yaml was edited after "
            "export; restore it, or export the run again"
        )


def _comparable(manifest: RunManifest) -> dict[str, Any]:
    data = manifest.as_dict()
    data.pop("status")
    data.pop("source")
    data["extra"] = {k: v for k, v in data["extra"].items() if k != _IMPORT_KEY}
    return data


def _canonical(records: Sequence[EpisodeRecord]) -> list[str]:
    return [json.dumps(r.as_dict(), sort_keys=True, allow_nan=True) for r in records]


def import_bundle(store: RunStore, path: str | Path) -> str:
    """Load a verified bundle into a store as an imported run.

    The run is stored with ``status="imported"`` and ``source="import"``; its original status
    and source (and the bundle manifest's sha256) are kept in ``extra["imported_from"]``.
    The run and its episodes are written in one transaction.

    Args:
        store: the store to import into.
        path: the bundle directory.

    Returns:
        The run id.

    Raises:
        BundleError: when the bundle does not verify (see :func:`load_bundle`), or the store
            already holds a run with this id and different content. Importing the same
            content again does nothing.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from evalband.store._manifest import _example
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with RunStore(Path(d) / "a.sqlite") as a:
    ...         a.create_run(_example())
    ...         bundle = export_bundle(a, "r1", Path(d) / "b")
    ...     with RunStore(Path(d) / "c.sqlite") as c:
    ...         run_id = import_bundle(c, bundle)
    ...         print(run_id, c.require_run(run_id).status, import_bundle(c, bundle))
    r1 imported r1
    """
    root = Path(path)
    manifest, records = load_bundle(root)
    existing = store.get_run(manifest.run_id)
    if existing is not None:
        stored = store.episode_records(manifest.run_id)
        if _comparable(existing) == _comparable(manifest) and _canonical(stored) == _canonical(
            records
        ):
            return manifest.run_id
        ours, theirs = _comparable(existing), _comparable(manifest)
        differ = sorted(k for k in ours if ours[k] != theirs[k])
        what = f"manifest fields differ: {', '.join(differ)}" if differ else "episodes differ"
        raise BundleError(
            f"run {manifest.run_id!r} already exists in {store.path} with different content "
            f"({what}; stored {len(stored)} episodes, bundle {len(records)}); import into "
            "another `store`", parameters=("store",),
        )
    extra = dict(manifest.extra)
    extra.setdefault(
        _IMPORT_KEY,
        {
            "status": manifest.status,
            "source": manifest.source,
            "manifest_sha256": _sha256(root / _MANIFEST),
        },
    )
    imported = manifest.replace(status="imported", source="import", extra=extra)
    if (root / _MEDIA).is_dir():  # verified by load_bundle; stored by content beside the store
        from evalband.store._media import refuse_reason, store_media_file
        from evalband.store._steps import refuse_steps

        refused = []
        for clip in sorted((root / _MEDIA).iterdir()):
            reason = refuse_steps(clip) if clip.suffix == ".npz" else refuse_reason(clip)
            if reason is None:
                store_media_file(store.path, clip)
            else:  # never embedded: its episodes show no clip
                refused.append(f"clip {clip.name} not imported: {reason}")
        if refused:
            imported = imported.replace(extra={**imported.extra, "media_notes": refused})
    store._create_run_with_episodes(imported, records)
    return manifest.run_id
