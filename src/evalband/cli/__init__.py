"""The ``evalband`` command line (typer): thin commands that parse, call the API, render.

Start-up is part of the interface: ``evalband --help``, ``ci``, ``diff`` and ``power``
answer in well under a fifth of a second. A plain command line for one of them is answered
without typer (:mod:`evalband.cli._fast`); every other goes to the typer application
(:mod:`evalband.cli._app`, loaded on first use, also as ``evalband.cli.app``). Either way
the library's errors exit 2 with one line on stderr, never a traceback.
"""

from __future__ import annotations

import sys
from typing import Any

from evalband.cli._errors import error_line
from evalband.cli._out import CommandExit
from evalband.errors import EvalbandError

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from evalband.cli._app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; bad input exits 2 with one line on stderr, never a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        from evalband.cli._fast import dispatch

        code = dispatch(args)
        if code is None:
            from evalband.cli._app import run

            code = run(args)
    except EvalbandError as exc:
        sys.stderr.write(f"error: {error_line(exc)}\n")
        return 2
    except CommandExit as exc:
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted; re-run with the same --run-id to resume\n")
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
