"""The ``evalband`` command line (typer): thin commands that parse, call the API, render.

Every command line goes to the typer application (:mod:`evalband.cli._app`, loaded on
first use, also as ``evalband.cli.app``), whose group imports a command's module only when
that command is used. The library's errors exit 2 with one line on stderr, never a
traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from evalband.cli._errors import error_line
from evalband.cli._out import CommandExit
from evalband.errors import EvalbandError

__all__ = ["main", "entry"]  # and ``app`` (module __getattr__): the Typer app, not an API


def __getattr__(name: str) -> Any:
    if name == "app":
        from evalband.cli._app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; bad input exits 2 with one line on stderr, never a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    from evalband.cli._out import _ARGS

    _ARGS.append(args)
    from evalband.cli._lazy_numpy import install, uninstall

    install()  # numpy's unused submodules stay unexecuted if the command loads scipy
    try:
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
    except BrokenPipeError as exc:
        if _stdout_gone():  # `evalband ... | head`: the reader left; stop quietly
            return 1
        sys.stderr.write(f"error: a pipe closed: {exc}\n")
        return 1
    except Exception as exc:
        line = _ordinary(exc)
        if line is None:
            raise
        sys.stderr.write(f"error: {line}\n")
        return 2
    finally:
        _ARGS.pop()
        uninstall()
    return code


def _ordinary(exc: BaseException) -> str | None:
    """The one line for a failure of the world outside evalband, ``None`` for a bug.

    A damaged store, a file that cannot be written, a port in use, input nested too deep
    are ordinary mistakes: one line, exit 2. Anything else is a bug: its traceback is shown.
    """
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is not None and isinstance(exc, sqlite3.DatabaseError):
        from evalband.store._sqlite import read_failure_line

        return read_failure_line(exc)
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply to read; give a flatter file"
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"cannot use {exc.filename}: {exc.strerror or exc}"
    return None


def _stdout_gone() -> bool:
    """Whether stdout's reader has gone; if so, point stdout at /dev/null.

    Python's documented way to leave quietly on a closed pipe (see the ``signal`` module's
    note on SIGPIPE): later writes, and the flush at exit, then go nowhere. A broken pipe
    that is not stdout's (a socket, a child process) is not this: stdout must be a pipe or
    socket whose other end has closed (``poll`` says so where it exists).
    """
    import stat

    try:
        fd = sys.stdout.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return False
    try:
        import select

        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if not any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0)):
            return False
    except (AttributeError, OSError, ValueError):  # no poll here: a pipe it is
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass
    return True


def entry() -> None:
    """The ``evalband`` executable: :func:`main`, its status the process's exit status.

    The interpreter's normal exit follows. stdout is flushed first, so that a reader that
    has gone (``evalband ... | head``) is a quiet exit 1 here, not an error at shutdown.
    What the command leaves is frozen out of the garbage collector (``gc.freeze``) first:
    the shutdown's collections then skip it (about 4% of the instructions of a ``compare
    --json``, see ``bench/bench_cli.py``); every module is still torn down, every
    ``atexit`` handler run.
    """
    import gc

    code = main()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a closed pipe, or a closed stream
        _stdout_gone()
        code = code or 1
    gc.freeze()
    raise SystemExit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
