"""``evalband compare``: slices first, aggregate last, one verdict carried by the exit code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalband.cli._common import JSON_OPTION, STORE_OPTION, console, emit_json, store_path

if TYPE_CHECKING:
    from evalband.analysis import Comparison

__all__ = ["register", "render_comparisons"]


def render_comparisons(results: list[Comparison]) -> None:
    """Print comparisons: rich tables on a terminal, plain text otherwise (regressions red)."""
    from evalband.report._terminal import comparison_renderables

    for c in results:
        for item in comparison_renderables(c, plain=not sys.stdout.isatty()):
            console.print(item)


def compare(
    baseline: str = typer.Argument(..., help="Baseline run id or artifact-bundle path."),
    candidates: list[str] = typer.Argument(..., help="Candidate run id(s) or bundle path(s)."),
    store: Path | None = STORE_OPTION,
    allow_panel_mismatch: bool = typer.Option(
        False, "--allow-panel-mismatch", help="Compare runs of different panels anyway."
    ),
    md: Path | None = typer.Option(None, "--md", help="Also write a Markdown summary here."),
    report: Path | None = typer.Option(
        None, "--report", help="Also write the HTML report (plots, no network) here."
    ),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    effect: float = typer.Option(
        0.10, "--effect", help="The drop in success rate (0.10 = 10 points) that the power "
        "statements are computed for; never the observed difference."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Compare candidate run(s) against a baseline, slices first.

    Exit status: 0 improves, 3 no regression, 4 regression, 5 inconclusive or not
    comparable; 2 is bad input.
    """
    from evalband._api import load_run
    from evalband.analysis import VERDICT_EXIT_CODES, compare_many, worst_verdict
    from evalband.errors import InvalidInputError, PanelMismatchError
    from evalband.report import comparison_markdown
    from evalband.store import open_store

    if not 0 < effect < 1:
        raise InvalidInputError(f"--effect must be between 0 and 1 (a drop in rate); got {effect}")
    from evalband.cli._progress import busy

    try:
        with busy(f"comparing {', '.join(candidates)} with {baseline}", enabled=not as_json):
            with open_store(store_path(store), read_only=True) as st:
                base = load_run(baseline, st)
                cands = [load_run(c, st) for c in candidates]
            results = compare_many(base, cands, allow_panel_mismatch=allow_panel_mismatch,
                                   confidence=confidence, effect=effect)
    except PanelMismatchError as exc:
        sys.stderr.write(f"not comparable: {exc}\n")
        raise typer.Exit(code=VERDICT_EXIT_CODES["inconclusive"]) from None
    if all(r.source == "store" for r in (base, *cands)):  # listed by `evalband view`
        options: dict[str, object] = {} if confidence == 0.95 else {"confidence": confidence}
        if allow_panel_mismatch:
            options["allow_panel_mismatch"] = True
        from evalband.errors import StoreError

        try:
            with open_store(store_path(store)) as st:
                st.record_comparison([base.run_id, *(c.run_id for c in cands)], options)
        except StoreError:
            pass  # a store this user cannot write is still compared, just not listed
    if md is not None:
        md.write_text(comparison_markdown(results))
    if report is not None:
        from evalband.cli._report import write_html_report

        write_html_report([baseline, *candidates], store_path(store), report, quiet=as_json,
                          allow_panel_mismatch=allow_panel_mismatch, confidence=confidence)
    code = VERDICT_EXIT_CODES[worst_verdict(results)]
    if as_json:
        payload = results[0].as_dict() if len(results) == 1 else {
            "schema": "evalband-comparisons/1",
            "comparisons": [c.as_dict() for c in results],
            "verdict": worst_verdict(results),
            "exit_code": code,
        }
        emit_json(payload)
        raise typer.Exit(code=code)
    render_comparisons(results)
    raise typer.Exit(code=code)


def register(app: typer.Typer) -> None:
    """Attach the compare command to ``app``."""
    app.command("compare")(compare)
