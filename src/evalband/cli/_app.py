"""The typer application: every command registered, and the one-line error contract.

Command modules import only typer and the standard library at the top; numpy, scipy,
pandas, rich tables and the rest load inside the command that uses them
(``tests/cli/test_cli_startup.py`` guards the import sets). Help is plain text (rich's help
formatter imports a markdown parser, ~0.15 s), and plain values skip typer's pydantic
coercion (:mod:`evalband.cli._coerce`). The plainest command lines never get here: see
:mod:`evalband.cli._fast`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

from evalband.cli._coerce import install as _install_plain_coercion
from evalband.cli._fast import APP_HELP

__all__ = ["OWNERS", "run", "whole_app"]  # and ``app`` (module __getattr__)

#: The command module that registers each top-level command (the groups ``lab``,
#: ``harness``, ``session`` and ``prereg`` go through the whole app).
OWNERS: dict[str, str] = {
    "ci": "_stats", "diff": "_stats", "power": "_stats", "coverage": "_stats",
    "run": "_runs", "runs": "_runs", "show": "_runs", "export": "_runs", "import": "_runs",
    "noise": "_runs", "serve": "_serve", "compare": "_compare", "check-env": "_envs",
    "calibrate": "_calibrate", "report": "_report", "view": "_view", "rank": "_rank",
    "sweep": "_sweep", "agree": "_agree",
    "agreement": "_scorers", "label": "_scorers", "rescore": "_scorers", "offline": "_offline",
}

_install_plain_coercion()
_whole: list[typer.Typer] = []


def _new_app() -> typer.Typer:
    return typer.Typer(
        name="evalband",
        help=APP_HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help; sub-apps inherit it
    )


def whole_app() -> typer.Typer:
    """The app with every command registered (built once, on first use)."""
    if not _whole:
        _whole.append(_register(_new_app()))
    return _whole[0]


def __getattr__(name: str) -> Any:
    if name == "app":
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register(app: typer.Typer) -> typer.Typer:
    from evalband.cli import (
        _agree,
        _calibrate,
        _compare,
        _envs,
        _harness,
        _offline,
        _prefer,
        _rank,
        _report,
        _runs,
        _scorers,
        _serve,
        _session,
        _session_analysis,
        _stats,
        _sweep,
        _view,
    )

    _stats.register(app)
    _runs.register(app)
    _serve.register(app)
    _compare.register(app)
    _envs.register(app)
    _calibrate.register(app)
    _rank.register(app)
    _sweep.register(app)
    _agree.register(app)
    _scorers.register(app)
    _offline.register(app)
    app.add_typer(_harness.harness_app, name="harness")
    _session.register(app)
    _session_analysis.register_prereg(app)
    _report.register(app)
    _view.register(app)
    app.add_typer(_prefer.prefer_app, name="prefer")
    return app


def _command_name(info: Any) -> str:
    callback = info.callback
    return str(info.name or (callback.__name__.lower().replace("_", "-") if callback else ""))


def _app_for(args: list[str]) -> typer.Typer:
    """The whole app, or for a top-level command an app that holds only that command.

    typer builds the parser of every registered command (signatures, type hints) before
    it dispatches, and registering them imports every command module; ``evalband run``
    needs one. Only the module that owns the command (:data:`OWNERS`) is imported. The
    one-command app keeps the group form (a no-op callback), so usage lines, help and
    errors read as with the whole app.
    """
    owner = OWNERS.get(args[0]) if args else None
    if owner is None:
        return whole_app()
    scratch = _new_app()
    importlib.import_module(f"evalband.cli.{owner}").register(scratch)
    for info in scratch.registered_commands:
        if _command_name(info) == args[0]:
            one = _new_app()
            one.callback()(_group)
            one.registered_commands.append(info)
            return one
    return whole_app()  # pragma: no cover - OWNERS out of date (tests/cli/test_cli_fast.py)


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
