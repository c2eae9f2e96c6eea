"""Command output without typer: plain text (rich only when markup needs it), JSON, exits.

Every command prints through these (typer-free modules such as
:mod:`evalband.cli._run_cmd` and :mod:`evalband.cli._stats_cmds` too).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["CommandExit", "command_args", "console", "emit_json", "escape", "fail", "pct",
           "refuse_ignored", "store_path"]

_ARGS: list[list[str]] = []  # the command line :func:`evalband.cli.main` was given


def command_args() -> list[str]:
    """The arguments of the command being run (``main``'s, else ``sys.argv[1:]``).

    What a printed ``Resume with: evalband ...`` line repeats.
    """
    return list(_ARGS[-1]) if _ARGS else list(sys.argv[1:])


class CommandExit(Exception):  # noqa: N818 - an exit, like typer.Exit
    """End the command with ``code`` (``fail`` has printed the one line already)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


# What rich would change in a printed string: a markup tag or an emoji code (and tabs or
# control characters, which str.isprintable refuses). A string with none of them prints as
# itself, without loading rich.
_RICH_SYNTAX = re.compile(r"\[[a-z#/@]|:\S*:")


class _Out:
    """Print through rich to the current stdout; wide and plain when it is not a terminal.

    Plain strings (no markup, emoji code, tab or control character: what rich prints
    unchanged) are written directly, so a command that prints only text, such as
    ``evalband ci``, never imports rich (~0.06 s).
    """

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not kwargs and all(isinstance(o, str) for o in objects):
            text = " ".join(objects)
            if text.replace("\n", "").isprintable() and not _RICH_SYNTAX.search(text):
                sys.stdout.write(text + "\n")
                return
        from rich.console import Console

        tty = sys.stdout.isatty()
        Console(highlight=False, soft_wrap=True, width=None if tty else 200).print(
            *objects, **kwargs
        )


console = _Out()


def _clean(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _clean(value.item())
    return value


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON (NaN/inf as null) on stdout."""
    import json

    sys.stdout.write(json.dumps(_clean(data), indent=2, default=str) + "\n")


def escape(text: str) -> str:
    r"""``text`` with rich markup escaped (``rich.markup.escape``, loaded on first use).

    >>> print(escape("[red]x"))
    \[red]x
    """
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def fail(message: str) -> None:
    """Print one line to stderr and exit with status 2."""
    sys.stderr.write(f"error: {message}\n")
    raise CommandExit(2)


def refuse_ignored(given: list[str], goes_with: str, why: str = "") -> None:
    """Refuse options the command would ignore here (one line, exit 2); none given: return.

    An option given where it has no effect is refused rather than dropped silently: the
    user meant something by it. ``given`` holds the flags given (empty: nothing to refuse),
    ``goes_with`` what they need (``--until-decided``), ``why`` an optional clause.

    >>> refuse_ignored([], "--n")
    >>> try:
    ...     refuse_ignored(["--direction"], "--n")
    ... except ValueError as exc:
    ...     print(exc)
    --direction only applies with --n; add --n, or drop --direction
    """
    if not given:
        return
    from evalband.errors import InvalidInputError

    one = len(given) == 1
    flags = given[0] if one else f"{', '.join(given[:-1])} and {given[-1]}"
    raise InvalidInputError(f"{flags} only {'applies' if one else 'apply'} with {goes_with}"
                            f"{f' ({why})' if why else ''}; add {goes_with}, or drop "
                            f"{flags if one else 'them'}")


def pct(x: float | None, digits: int = 1) -> str:
    """A proportion as a percentage string.

    >>> pct(0.140625, 6)
    '14.062500%'
    """
    from evalband.report._format import percent

    return percent(x, digits)


def store_path(path: Path | None) -> Path:
    """The store path given, or the default (``--store``, shared by every command).

    >>> store_path(Path("a.sqlite")).name, store_path(None).name
    ('a.sqlite', 'evalband.sqlite')
    """
    from evalband.store._sqlite import DEFAULT_STORE_PATH

    return path if path is not None else DEFAULT_STORE_PATH
