"""Shared CLI pieces: the store option, JSON output, one-line errors.

The output helpers live in :mod:`evalband.cli._out` (no typer), so typer-free modules
print through the same code.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalband.cli._out import console, emit_json, escape, fail, pct, store_path

if TYPE_CHECKING:
    from evalband.panel import Panel
    from evalband.store import RunStore

__all__ = [
    "STORE_OPTION", "JSON_OPTION", "console", "emit_json", "escape", "fail", "pct", "store_path",
    "read_store", "existing_store", "SCORER_OPTION", "SUCCESS_AT_OPTION", "check_scorer_options",
    "panel_option",
]

STORE_OPTION = typer.Option(
    None,
    "--store",
    help="Run store (SQLite). Default: ./evalband-runs/evalband.sqlite",
    show_default=False,
)
JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON instead of text.")
SCORER_OPTION = typer.Option(
    None, "--scorer", help="Judge every episode by this named scorer (e.g. human, judge, "
    "score; `evalband agreement RUN` lists a run's) instead of the env's success rule; "
    "episodes it did not judge are left out.")
SUCCESS_AT_OPTION = typer.Option(
    None, "--success-at", help="With --scorer: a value at least this is a success (an "
    "ordinal score: the rubric level; default 1).", show_default=False)


def check_scorer_options(scorer: str | None, success_at: float | None) -> float:
    """``--success-at`` only with ``--scorer``, and a finite number (one line, exit 2).

    ``success_at`` is ``None`` when not given (so that one given without ``--scorer`` is
    refused whatever its value); returned is the value to use, 1 when not given.

    >>> check_scorer_options(None, None), check_scorer_options("score", 3.0)
    (1.0, 3.0)
    """
    from evalband.errors import InvalidInputError

    if success_at is None:
        return 1.0
    if scorer is None:
        raise InvalidInputError("--success-at goes with --scorer NAME; add it, or drop it")
    if not math.isfinite(success_at):
        raise InvalidInputError(f"--success-at must be a finite number (1 for success "
                                f"labels, a rubric level for a score); got {success_at}")
    return success_at


def read_store(path: Path | None) -> RunStore:
    """The store for a read command: opened read-only, never created (missing: one line)."""
    from evalband.store import open_store

    return open_store(store_path(path), read_only=True)


def existing_store(path: Path | None) -> Path:
    """The store path for a command that changes a store: it must exist (never created).

    A missing or foreign file is the read commands' one line (exit 2).
    """
    path = store_path(path)
    with read_store(path):
        pass
    return path


def panel_option(source: str, *, check_env: bool = True) -> Panel:
    """The panel given by ``--panel``: ``load_panel``'s, its errors said of the flag.

    ``load_panel`` speaks of ``panel X`` (not found, bad YAML, a bad field); given by an
    option, the one line says ``--panel X`` instead, so it names the flag to change.

    >>> try:
    ...     panel_option("nope")
    ... except Exception as exc:
    ...     print(str(exc)[:44])
    --panel nope not found: expected a YAML file
    """
    from evalband.errors import PanelError
    from evalband.panel import load_panel

    try:
        return load_panel(source, check_env=check_env)
    except PanelError as exc:
        text = str(exc)
        if not text.startswith(f"panel {source}"):
            raise
        raise type(exc)(f"--{text}", parameters=exc.parameters) from None
