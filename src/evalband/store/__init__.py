"""The run store (SQLite, WAL) and artifact bundles (manifest + panel + parquet).

Names load on first use: a run needs the store, not the bundle and import readers.

>>> import tempfile
>>> from pathlib import Path
>>> from evalband.store import open_store
>>> with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "runs.sqlite") as store:
...     store.list_runs()
[]
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "import_results": "evalband.store._importers",
    "import_runs": "evalband.store._importers",
    "open_store": "evalband.store._sqlite",
    "RunStore": "evalband.store._sqlite",
    "read_steps": "evalband.store._steps",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
