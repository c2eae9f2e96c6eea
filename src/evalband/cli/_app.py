"""The typer application: every command registered, and the one-line error contract.

Command modules import only typer and the standard library at the top; numpy, scipy,
pandas, rich tables and the rest load inside the command that uses them
(``tests/cli/test_cli_startup.py`` guards the import sets). Help is plain text (rich's help
formatter imports a markdown parser, ~0.15 s), and plain values skip typer's pydantic
coercion (:mod:`evalband.cli._coerce`). The plainest command lines never get here: see
:mod:`evalband.cli._fast`.
"""

from __future__ import annotations

import sys

import typer

from evalband.cli._coerce import install as _install_plain_coercion
from evalband.cli._fast import APP_HELP

__all__ = ["app", "run"]

app = typer.Typer(
    name="evalband",
    help=APP_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help; sub-apps inherit it
)
_install_plain_coercion()


def _register() -> None:
    from evalband.cli import (
        _calibrate,
        _compare,
        _envs,
        _harness,
        _report,
        _runs,
        _serve,
        _session,
        _session_analysis,
        _stats,
        _view,
    )

    _stats.register(app)
    _runs.register(app)
    _serve.register(app)
    _compare.register(app)
    _envs.register(app)
    _calibrate.register(app)
    app.add_typer(_harness.harness_app, name="harness")
    _session.register(app)
    _session_analysis.register_prereg(app)
    _report.register(app)
    _view.register(app)


_register()


def _app_for(args: list[str]) -> typer.Typer:
    """``app``, or for a top-level command an app that holds only that command.

    typer builds the parser of every registered command (signatures, type hints) before
    it dispatches; ``evalband ci 8 20`` needs one. The one-command app keeps the group
    form (a no-op callback), so usage lines, help and errors read as with ``app``.
    """
    if not args or args[0].startswith("-"):
        return app
    for info in app.registered_commands:
        callback = info.callback
        name = info.name or (callback.__name__.lower().replace("_", "-") if callback else "")
        if name == args[0]:
            one = typer.Typer(
                name=app.info.name, help=app.info.help, add_completion=False,
                pretty_exceptions_enable=False, rich_markup_mode=app.rich_markup_mode,
            )
            one.callback()(_group)
            one.registered_commands.append(info)
            return one
    return app


def _group() -> None:
    """The one-command app's group callback (does nothing)."""


def run(args: list[str]) -> int:
    """Run the command line ``args`` through typer; its usage errors exit 2 with one line.

    The library's errors, :class:`~evalband.cli._out.CommandExit` and Ctrl-C are turned
    into exit codes by :func:`evalband.cli.main`, for this path and the short one alike.
    """
    try:
        result = _app_for(args)(args=args, standalone_mode=False, prog_name="evalband")
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        return 130
    except typer.TyperException as exc:  # usage errors: bad option, missing argument
        sys.stderr.write(f"error: {exc.format_message().splitlines()[0]}\n")
        return 2
    return int(result) if isinstance(result, int) else 0
