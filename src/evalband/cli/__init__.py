"""The ``evalband`` command line (typer): thin commands that parse, call the API, render."""

from __future__ import annotations

import sys

import typer

from evalband.errors import EvalbandError

__all__ = ["app", "main"]

app = typer.Typer(
    name="evalband",
    help="Honest robot-policy evaluation: seeded panels, stored episodes, verdicts with bands.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    from evalband.cli import (
        _compare,
        _envs,
        _harness,
        _report,
        _runs,
        _session,
        _session_analysis,
        _stats,
        _view,
    )

    _stats.register(app)
    _runs.register(app)
    _compare.register(app)
    _envs.register(app)
    app.add_typer(_harness.harness_app, name="harness")
    _session.register(app)
    _session_analysis.register_prereg(app)
    _report.register(app)
    _view.register(app)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; bad input exits 2 with one line on stderr, never a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = app(args=args, standalone_mode=False, prog_name="evalband")
    except EvalbandError as exc:
        sys.stderr.write(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}\n")
        return 2
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        return 130
    except typer.TyperException as exc:  # usage errors: bad option, missing argument
        sys.stderr.write(f"error: {exc.format_message().splitlines()[0]}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted; re-run with the same --run-id to resume\n")
        return 130
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
