"""The ``evalband`` command line (typer): thin commands that parse, call the API, render.

Start-up is part of the interface: ``evalband --help``, ``ci``, ``diff`` and ``power``
answer in well under a fifth of a second. A plain command line for one of them is answered
without typer (:mod:`evalband.cli._fast`); every other goes to the typer application
(:mod:`evalband.cli._app`, loaded on first use, also as ``evalband.cli.app``). Either way
the library's errors exit 2 with one line on stderr, never a traceback.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any, NoReturn

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
    """The ``evalband`` executable: :func:`main`, then leave at once.

    Once a command has returned, its results are on stdout and in the store (every store
    write is committed, every file closed, before a command returns). What remains of a
    normal interpreter exit is Python tearing down every imported module and object, which
    costs ~0.15-0.25 s on a 2-core VM after a run (numpy, pydantic, MuJoCo...) and gives the
    user nothing. So, as a normal exit does, this waits for non-daemon threads and runs the
    ``atexit`` handlers (worker pools shut down, the video encoder joined), flushes stdout
    and stderr, then ends the process with ``os._exit``. Set ``EVALBAND_FAST_EXIT=0`` for a
    normal exit. Only the executable does this: :func:`main` returns to its caller.
    """
    code = main()
    if os.environ.get("EVALBAND_FAST_EXIT", "1") == "0":
        raise SystemExit(code)
    exit_now(code)


def exit_now(code: int) -> NoReturn:
    """End the process as a normal exit would, without tearing the interpreter down."""
    import threading

    shutdown = getattr(threading, "_shutdown", None)  # joins non-daemon threads and runs
    if shutdown is not None:  # the threading-level exit hooks (concurrent.futures')
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``| head``) or a closed stream
            if code == 0 and stream is sys.stdout:
                code = 1
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
