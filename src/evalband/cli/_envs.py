"""``evalband check-env``: is a panel's environment fit for evaluation?"""

from __future__ import annotations

import typer

from evalband.cli._common import JSON_OPTION, console, emit_json

__all__ = ["register"]


def check_env(
    panel: str = typer.Argument(..., help="Panel YAML path or built-in panel name."),
    policy: str | None = typer.Option(
        None, "--policy", "-p",
        help="Roll out this policy (success reachable, lockstep equals one at a time); "
        "default: random actions.",
    ),
    episodes: int | None = typer.Option(
        None, "--episodes", "-n", min=1, help="Episodes to roll out (default: 3; a policy "
        "plays until its first success, at most 20)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Check a panel's env: seeded resets, control period, factors, success rule, batching.

    Prints one line per problem or note; exits 1 when there is a problem.
    """
    import contextlib
    import sys

    from evalband.panel import load_panel
    from evalband.run._check import check_env as run_checks

    # what an env or policy prints while it plays goes to stderr: --json stays JSON
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        findings = run_checks(load_panel(panel), policy, episodes)
    problems = [f for f in findings if f.level == "problem"]
    if as_json:
        emit_json({"panel": panel, "ok": not problems,
                   "findings": [f.__dict__ for f in findings]})
    else:
        for finding in findings:
            console.print(finding.line(), markup=False)
        console.print(f"{len(problems)} problem(s)" if problems else "ok: no problems found")
    if problems:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Add ``check-env`` to the app."""
    app.command("check-env")(check_env)
