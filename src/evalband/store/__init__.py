"""The run store (SQLite, WAL) and artifact bundles (manifest + panel + parquet).

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "runs.sqlite") as store:
...     store.list_runs()
[]
"""

from evalband.store._bundle import BUNDLE_FORMAT, export_bundle, import_bundle, load_bundle
from evalband.store._importers import IMPORT_COLUMNS, IMPORT_FORMATS, import_results, import_runs
from evalband.store._manifest import RunManifest, environment_versions, git_sha, new_manifest
from evalband.store._media import media_dir, media_file, store_media_bytes, store_media_file
from evalband.store._sqlite import DEFAULT_STORE_PATH, RunStore, open_store

__all__ = [
    "RunStore",
    "RunManifest",
    "open_store",
    "DEFAULT_STORE_PATH",
    "export_bundle",
    "load_bundle",
    "import_bundle",
    "environment_versions",
    "git_sha",
    "new_manifest",
    "BUNDLE_FORMAT",
    "import_results",
    "import_runs",
    "media_dir",
    "media_file",
    "store_media_bytes",
    "store_media_file",
    "IMPORT_FORMATS",
    "IMPORT_COLUMNS",
]
