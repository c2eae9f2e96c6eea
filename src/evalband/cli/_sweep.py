"""``evalband sweep`` (and ``rank --by step``): checkpoints of one training run by step."""

from __future__ import annotations

from pathlib import Path

import typer

from evalband.cli._common import JSON_OPTION, STORE_OPTION, console, emit_json, store_path

__all__ = ["register", "sweep_command"]


def sweep_command(
    refs: list[str],
    *,
    store: Path | None = None,
    metric: str = "success",
    confidence: float = 0.95,
    plan: Path | None = None,
    confirm_best: str | None = None,
    confirm_last: str | None = None,
    md: Path | None = None,
    html: Path | None = None,
    as_json: bool = False,
) -> None:
    """Read the checkpoints' runs, sweep them, print and write the results."""
    from evalband import load_run
    from evalband.analysis._sweep import fresh_panel, sweep_runs
    from evalband.cli._progress import work
    from evalband.cli._rank import load_ranked, write_outputs
    from evalband.errors import InvalidInputError
    from evalband.report._sweep import sweep_html, sweep_lines, sweep_markdown
    from evalband.store import open_store

    if (confirm_best is None) != (confirm_last is None):
        raise InvalidInputError("--confirm-best and --confirm-last go together (the two "
                                "confirmation runs)", parameters=("confirm_best",))
    with work("sweeping checkpoints", enabled=not as_json) as step, \
            open_store(store_path(store), read_only=True) as st:
        runs, steps, session_id = load_ranked(refs, st, step)
        if session_id is not None:
            raise InvalidInputError("a sweep ranks runs of checkpoints (each with its --step), "
                                    "not a session; use evalband rank SESSION")
        confirm = None
        if confirm_best is not None and confirm_last is not None:
            confirm = (load_run(confirm_best, st), load_run(confirm_last, st))
        result = sweep_runs(runs, steps, metric=metric, confidence=confidence, confirm=confirm)
    if plan is not None:  # a YAML file, written and said as the others
        write_outputs(fresh_panel(runs[0].panel).to_yaml(), None, plan, None, quiet=as_json)
    write_outputs(sweep_markdown(result) if md else None, sweep_html(result) if html else None,
                  md, html, quiet=as_json)
    if as_json:
        emit_json(result.as_dict())
        return
    for line in sweep_lines(result):
        console.print(line.replace("PANEL", str(plan) if plan else "PANEL"), soft_wrap=True,
                      markup=False, highlight=False)


def sweep(
    refs: list[str] = typer.Argument(..., help="The checkpoints' run ids (each with --step)."),
    store: Path | None = STORE_OPTION,
    metric: str = typer.Option("success", "--metric", "-m",
                               help="success, unaided, score or metrics.NAME."),
    confidence: float = typer.Option(0.95, "--confidence", "-c", help="Joint level."),
    plan: Path | None = typer.Option(
        None, "--plan-confirmation", help="Write the fresh confirmation panel (new seed) here."),
    confirm_best: str | None = typer.Option(
        None, "--confirm-best", help="The best checkpoint's run on the confirmation panel."),
    confirm_last: str | None = typer.Option(
        None, "--confirm-last", help="The last checkpoint's run on the confirmation panel."),
    md: Path | None = typer.Option(None, "--md", help="Also write Markdown here."),
    html: Path | None = typer.Option(None, "--html", help="Also write an HTML page here."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Checkpoints of one training run: value vs step, the best (selection-aware), the last."""
    sweep_command(refs, store=store, metric=metric, confidence=confidence, plan=plan,
                  confirm_best=confirm_best, confirm_last=confirm_last, md=md, html=html,
                  as_json=as_json)


def register(app: typer.Typer) -> None:
    """Attach the sweep command to ``app``."""
    app.command("sweep")(sweep)
