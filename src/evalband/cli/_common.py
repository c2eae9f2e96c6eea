"""Shared CLI pieces: the store option, JSON output, one-line errors.

The output helpers live in :mod:`evalband.cli._out` (no typer), so typer-free modules
print through the same code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalband.cli._out import console, emit_json, escape, fail, pct, store_path

if TYPE_CHECKING:
    from evalband.store import RunStore

__all__ = [
    "STORE_OPTION", "JSON_OPTION", "console", "emit_json", "escape", "fail", "pct", "store_path",
    "read_store",
]

STORE_OPTION = typer.Option(
    None,
    "--store",
    help="Run store (SQLite). Default: ./evalband-runs/evalband.sqlite",
    show_default=False,
)
JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON instead of text.")


def read_store(path: Path | None) -> RunStore:
    """The store for a read command: opened read-only, never created (missing: one line)."""
    from evalband.store import open_store

    return open_store(store_path(path), read_only=True)
